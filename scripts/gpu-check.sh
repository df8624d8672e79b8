#!/usr/bin/env bash
# One run on a GPU machine, through CMake: configure and build every program that needs a GPU
# (target gio_gpu_programs: the GPU tests, examples and benches), run the GPU tests and examples
# (ctest label gpu), the same tests under compute-sanitizer (label sanitize), then the benches,
# and write logs and results into the output folder (first argument, else $OUT, else ./gpu-out).
#
#   bash scripts/gpu-check.sh [OUTDIR]
#
# Exit 0 only when everything asked for was built and ran and passed: a test that ctest reports
# as skipped (no GPU, no compute-sanitizer) or a program that did not build fails the check.
#
# The host library needs liburing. On a machine without liburing-dev (the project's GPU test
# machine has none), run scripts/gpu-deps.sh where it is installed and carry .gpu-deps/ along:
# CMake then finds liburing there. Catch2 is not needed: the host tests are not built here.
#
# Environment:
#   GIO_GPU_STAGES  which stages (default: tests sanitize cmdrate check restore layer file)
#     tests     ctest -L gpu (not sanitize, not bench): tests/gpu/test_*.cu and the GPU examples
#     sanitize  ctest -L sanitize: memcheck and racecheck of the tests in GIOURING_GPU_SANITIZE
#     cmdrate   bench_gpu_cmdrate: NVMe commands/s from GPU warps, rings in HBM and host memory
#     check     what checked submission (URI check=1) costs: bench_gpu_cmdrate --check, bench_check
#     probe     probe_cuda_blocking: which CUDA calls wait behind a kernel that never ends
#     restore   bench_kv_restore at 32K and 128K tokens beside every baseline
#     layer     bench_kv_layer: per-layer loads through the plan on 1 and 4 modelled targets
#     staged    bench_kv_staged: the staged path's GPU half (docs/staged.md): restores through pinned
#               staging slots from 4 CPU-executed software targets at 2-16 I/O SMs beside the bulk
#               H2D copy, then a GEMM and an HBM-bound copy in the compute partition with and
#               without restores in the I/O partition, completions polled with the default back-off
#               and paced at 8 us (gio_kv_plan_params::poll_ns), the mover at 16, 8 and 4 loads in
#               flight a lane (move_depth), then the floors: the same bytes moved in bulk by the same
#               warps (16 and 4 in flight) and by the copy engine. Not in the default: run it alone
#               (GIO_GPU_STAGES=staged), so that its table is among the 8 files the device tool
#               brings back. Writes kv-staged.md and json/kv-staged.json (in json.tar).
#     movers    bench_kv_staged at 8 I/O SMs, the staged loads' movers and completion designs side
#               by side (docs/staged.md): the warps (4 loads in flight) with polls backed off and
#               paced at 8 us, the copy engine (design E) with the same two, the copy engine with
#               completions mirrored into GPU memory (design C over E), and the floors (SM bulk,
#               copy engine in bulk and object by object). Not in the default; writes
#               kv-movers.md and json/kv-movers.json.
#     file      bench_gpu_file: the file target's CPU executor fed by GPU warps
#     sched     bench_sched: the slack-aware scheduler against naive overlap on 4 modelled drives
#     quick     the GPU benches' smoke runs (ctest -L bench, not cpu_rings nor nixl), instead of the three
#               above when debugging
#     ttft      bench/ttft_llama.py through scripts/gpu-ttft.sh (needs python3 with torch and
#               transformers): a real model's time to first token beside its baselines; not in the
#               default (it alone takes most of a 10-minute call). GIO_TTFT_ARGS: the bench's
#               arguments (default below); GIO_TTFT_TIMEOUT: its time limit, s (default 540).
#               Writes ttft.log (its tables), ttft-stacks.txt (only when it stood still) and
#               json/ttft.json; draw the plots on any machine with bench/plot.py.
#     ttft-goals  bench/ttft_llama.py as issue 14's goals are judged: the stand-in drives in HBM
#               (--drive-backing hbm --drive-room 1.5), hbm, hbm-part and giouring-sched at hit
#               rates 90-99.5%, 0.1-0.2 points apart where each group's goals are judged
#               (ttft_goal_hits), 3 repetitions, one process per context group (GIO_TTFT_GROUPS,
#               default "128K 64K 8K,16K,32K"; 128K does not fit an 80 GB GPU beside its drives),
#               the package built once. Not in the default (about 5 minutes on the H200 with the
#               coarse grid alone; the fine points add an estimated 1.5: a group per call where
#               a call's limit is near). Writes
#               ttft-goals-<group>.log and json/ttft-goals-<group>.json.
#     nixl      NIXL's GIOURING backend with VRAM_SEG buffers and GPU-executed targets
#               (bench/nixl_bench.py --mem vram, beside a bulk H2D copy; then tests/nixl): builds
#               the plugin with CUDA in GIO_NIXL_BUILD (default build-gpu-nixl) and installs the
#               pinned NIXL wheels from GIO_NIXL_WHEELS (made where there is network by
#               `bash scripts/nixl-test.sh wheels DIR 3.12`; carried with the tree) for
#               GIO_PYTHON (default /opt/torch/.venv/bin/python3, which has numpy and pytest).
#               Not in the default. Writes nixl.log and json/nixl-*.json.
#   GIO_GPU_BUILD   build folder (default build-gpu)
#   GIO_COMMIT      commit to print when the tree is not a git checkout
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-${OUT:-gpu-out}}
stages=" ${GIO_GPU_STAGES:-tests sanitize cmdrate check restore layer file sched} "
build=${GIO_GPU_BUILD:-build-gpu}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
# The device tool brings back at most 8 files: a summary, a detailed log, five Markdown tables
# (cmdrate, cmdrate-profile, kv-32K, kv-128K, gpu-file) and one tar of the JSON results.
log="$out/gpu-check.log"
detail="$out/gpu-tests.log"
: >"$log"
: >"$detail"
say() { printf '%s\n' "$*" | tee -a "$log"; }
want() { [[ "$stages" == *" $1 "* ]]; }
failed=0
fail() { failed=$((failed + 1)); say "FAIL $*"; }

say "giouring gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${GIO_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} stages:${stages% }"
if command -v nvidia-smi >/dev/null 2>&1; then
	say "machine: $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.total --format=csv,noheader | head -n 1)"
else
	say "machine: no nvidia-smi"
fi
say "nvcc: $(nvcc --version 2>/dev/null | tail -n 1)"

# ---- configure and build -----------------------------------------------------------------------
cfg=(-S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGIOURING_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
	-DGIOURING_HOST_TESTS=OFF -DGIOURING_FUZZ=OFF -DGIOURING_DOCS=OFF -DGIOURING_INFO=OFF)
[[ -f "$build/CMakeCache.txt" ]] || cfg+=(-G Ninja)
[[ -d .gpu-deps ]] && cfg+=("-DCMAKE_PREFIX_PATH=$PWD/.gpu-deps")
t0=$SECONDS
if ! cmake "${cfg[@]}" >"$out/build.tmp" 2>&1 || ! cmake --build "$build" -j "$(nproc)" --target gio_gpu_programs >>"$out/build.tmp" 2>&1; then
	fail "build (cmake ${cfg[*]}; --target gio_gpu_programs)"
	tail -n 30 "$out/build.tmp" | tee -a "$log"
	cat "$out/build.tmp" >>"$detail"
	rm -f "$out/build.tmp"
	say "gpu-check: the build failed"
	exit 1
fi
rm -f "$out/build.tmp"
say "built gio_gpu_programs in $((SECONDS - t0)) s ($build)"

# ctest with the given arguments; every test must pass, none may be skipped or missing.
run_ctest() { # name, ctest arguments...
	local name=$1 t=$SECONDS
	shift
	local tmp="$out/ctest.tmp"
	ctest --test-dir "$build" --no-tests=error -V "$@" >"$tmp" 2>&1
	local rc=$?
	{ printf '===== %s (exit %d, %d s): ctest %s\n' "$name" "$rc" $((SECONDS - t)) "$*"; cat "$tmp"; } >>"$detail"
	grep -E '^ *[0-9]+/[0-9]+ Test +#' "$tmp" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / /' | tee -a "$log"
	local skipped
	skipped=$(grep -cE '\*\*\*Skipped|Not Run' "$tmp" || true)
	if ((rc != 0)); then
		fail "$name (ctest exit $rc)"
	elif ((skipped > 0)); then
		fail "$name ($skipped skipped: on a GPU machine nothing may skip)"
	else
		say "PASS $name ($((SECONDS - t)) s)"
	fi
	# The tests' own verdicts and the sanitizers' summaries (ctest -V keeps every test's output).
	grep -h -E '^[0-9]+: (PASS|FAIL):|ERROR SUMMARY|RACECHECK SUMMARY' "$tmp" | sed -E 's/^[0-9]+: /    /' | sort | uniq -c | tee -a "$log"
	rm -f "$tmp"
}

# A bench: its table goes to OUTDIR/<md>; its JSON to the tar at the end.
bench() { # name, md file, command...
	local name=$1 md=$2 t=$SECONDS
	shift 2
	"$@" >"$out/$md" 2>"$out/bench.err"
	local rc=$?
	{ printf '===== %s (exit %d, %d s): %s\n' "$name" "$rc" $((SECONDS - t)) "$*"; cat "$out/bench.err"; } >>"$detail"
	if ((rc != 0)); then
		fail "$name (exit $rc)"
		tail -n 20 "$out/bench.err" | tee -a "$log"
	else
		say "PASS $name ($((SECONDS - t)) s)"
	fi
	rm -f "$out/bench.err"
}

want tests && run_ctest tests -L gpu -LE 'sanitize|bench'
want sanitize && run_ctest sanitize -L sanitize
want quick && run_ctest quick -L bench -LE nixl -E 'cpu_rings'  # the nixl stage runs NIXL's bench with its wheels

b=$build/bench
mkdir -p "$out/json"
if want cmdrate; then
	# HBM rings against I/O SMs (executor SMs grown with them), GPU and system scope, then rings
	# in host memory against executor SMs; then where a batch's time goes (--profile).
	pts=hbm:1:16,hbm:2:16,hbm:4:16,hbm:8:16,hbm:16:32,hbm:32:64,hbm:64:64
	pts=$pts,hbm:2:16:sys,hbm:8:16:sys,hbm:32:64:sys
	pts=$pts,host:2:16,host:8:4,host:8:16,host:8:32,host:32:16
	bench cmdrate cmdrate.md timeout 400 "$b/bench_gpu_cmdrate" --seconds 0.3 --points "$pts" --json "$out/json/cmdrate.json"
	bench cmdrate.profile cmdrate-profile.md timeout 120 "$b/bench_gpu_cmdrate" --seconds 0.3 --profile --no-ceiling \
		--points hbm:2:16,hbm:32:64,host:2:16,host:8:16,host:32:16
fi
if want check; then
	# Checked submission: what URI check=1 costs, on the GPU (each point with and without) and on
	# a CPU thread of this machine.
	bench cmdrate.check cmdrate-check.md timeout 120 "$b/bench_gpu_cmdrate" --seconds 0.3 --check --no-ceiling \
		--points hbm:2:16,hbm:8:16,hbm:32:64,host:2:16
	bench check.cpu check-cpu.md timeout 120 "$b/bench_check" --reps 5
fi
if want probe; then
	bench probe.cuda-blocking cuda-blocking.md timeout 120 "$b/probe_cuda_blocking" --wait-ms 1500
fi
if want restore; then
	for t in 32K 128K; do
		bench "restore.$t" "kv-$t.md" timeout 500 "$b/bench_kv_restore" --tokens "$t" --reps 3 \
			--gather-sms 8,4 --gio-sms 8,4,2 --file-dir /dev/shm --pread-tokens 32768 --json "$out/json/kv-$t.json"
	done
fi
if want layer; then
	bench layer kv-layer.md timeout 500 "$b/bench_kv_layer" --targets 1,4 --reps 3 --json "$out/json/kv-layer.json"
fi
if want staged; then
	bench staged kv-staged.md timeout 500 "$b/bench_kv_staged" --tokens 64K --targets 4 --io-sms 2,4,8,16 --io-warps 8 \
		--reps 5 --part-sms 8 --poll-ns 0,8000 --move-depth 16,8,4 --floor-depths 16,4 --json "$out/json/kv-staged.json"
fi
if want movers; then
	bench movers kv-movers.md timeout 400 "$b/bench_kv_staged" --tokens 64K --targets 4 --io-sms 8 --io-warps 8 \
		--reps 5 --part-sms 8 --poll-ns 0,8000 --move-depth 4 --floor-depths 4 --ce-objects 32 --ce-mirror \
		--json "$out/json/kv-movers.json"
fi
if want file; then
	bench file gpu-file.md timeout 300 "$b/bench_gpu_file" --tokens 16384 --dir /tmp --reps 3 --warmup 1 --threads 1,8 \
		--json "$out/json/gpu-file.json"
fi
if want sched; then
	bench sched sched.md timeout 400 "$b/bench_sched" --json "$out/json/sched.json"
	# Sustained eviction: requests back to back with no decode steps to drain in, so that the
	# bounded backlog fills and reports back-pressure.
	bench sched.sustained sched-sustained.md timeout 300 "$b/bench_sched" --input 512 --decode-steps 0 --requests 6 \
		--reps 1 --json "$out/json/sched-sustained.json"
fi
if want ttft; then
	t=$SECONDS
	read -r -a targs <<<"${GIO_TTFT_ARGS:---contexts 8K,32K,128K --hits 0.5,0.9,0.95,0.97,0.98,0.99,0.995 --low-hits= --slow-hits 0.5,0.9,0.99 --reps 2 --cpu-max 32K}"
	GIO_TTFT_TIMEOUT=${GIO_TTFT_TIMEOUT:-540} bash scripts/gpu-ttft.sh "$out/ttft-run" "${targs[@]}" >>"$detail" 2>&1
	rc=$?
	mkdir -p "$out/json"
	[[ -f $out/ttft-run/ttft.json ]] && cp "$out/ttft-run/ttft.json" "$out/json/ttft.json"
	[[ -f $out/ttft-run/ttft.log ]] && cp "$out/ttft-run/ttft.log" "$out/ttft.log"
	[[ -f $out/ttft-run/stacks.txt ]] && cp "$out/ttft-run/stacks.txt" "$out/ttft-stacks.txt"
	rm -rf "$out/ttft-run" # the package built there: too many files to bring back
	if ((rc == 0)); then say "PASS ttft ($((SECONDS - t)) s)"; else fail "ttft (exit $rc, $((SECONDS - t)) s; ttft.log)"; fi
fi
# The hit rates of a ttft-goals context group: 90-99.5%, and finer where the goals are judged
# for its contexts, since a crossover interpolated across half a point can miss by 0.2 and the
# goal allows 0.3 (the limits, crossovers and an ideal mover's crossovers measured on 2026-12-05:
# 16K and 32K at 97.4-98.5%, 64K at 98.6-98.8%, 128K at 99.1-99.2%).
ttft_goal_hits() {
	local base=0.9,0.95,0.97,0.975,0.98,0.985,0.99,0.995
	case ",$1," in
	*,128K,*) echo "$base,0.988,0.991,0.992,0.993,0.994" ;;
	*,64K,*) echo "$base,0.982,0.984,0.986,0.987,0.988,0.989,0.992" ;;
	*) echo "$base,0.972,0.974,0.976,0.978,0.982,0.984,0.986,0.988" ;;
	esac
}
if want ttft-goals; then
	t=$SECONDS
	pkg="$out/ttft-goals-pkg"
	mkdir -p "$out/json"
	if ! bash scripts/gpu-python.sh --build-only "$pkg" >>"$detail" 2>&1; then
		fail "ttft-goals (the package did not build: gpu-tests.log)"
	else
		for g in ${GIO_TTFT_GROUPS:-128K 64K 8K,16K,32K}; do
			tag=ttft-goals-${g//,/-}
			GIO_TTFT_SITE="$pkg/site" GIO_TTFT_TIMEOUT=${GIO_TTFT_TIMEOUT:-300} bash scripts/gpu-ttft.sh "$out/$tag-run" \
				--contexts "$g" --hits "$(ttft_goal_hits "$g")" --low-hits= --slow-hits= --reps 3 \
				--systems hbm,hbm-part,giouring-sched --drive-backing hbm --drive-room 1.5 >>"$detail" 2>&1
			rc=$?
			[[ -f $out/$tag-run/ttft.json ]] && cp "$out/$tag-run/ttft.json" "$out/json/$tag.json"
			[[ -f $out/$tag-run/ttft.log ]] && cp "$out/$tag-run/ttft.log" "$out/$tag.log"
			[[ -f $out/$tag-run/stacks.txt ]] && cp "$out/$tag-run/stacks.txt" "$out/$tag-stacks.txt"
			rm -rf "$out/$tag-run"
			if ((rc == 0)); then say "PASS ttft-goals $g ($((SECONDS - t)) s)"; else fail "ttft-goals $g (exit $rc; $tag.log)"; fi
		done
	fi
	rm -rf "$pkg" # too many files to bring back
fi
if want nixl; then
	t=$SECONDS
	nb=${GIO_NIXL_BUILD:-build-gpu-nixl}
	export GIO_PYTHON=${GIO_PYTHON:-/opt/torch/.venv/bin/python3}
	ncfg=(-S . -B "$nb" -DCMAKE_BUILD_TYPE=Release -DGIOURING_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
		-DGIOURING_HOST_TESTS=OFF -DGIOURING_FUZZ=OFF -DGIOURING_DOCS=OFF -DGIOURING_INFO=OFF -DGIOURING_NIXL=ON)
	[[ -f $nb/CMakeCache.txt ]] || ncfg+=(-G Ninja)
	[[ -d .gpu-deps ]] && ncfg+=("-DCMAKE_PREFIX_PATH=$PWD/.gpu-deps")
	mkdir -p "$out/json"
	nrc=0
	{
		cmake "${ncfg[@]}" && cmake --build "$nb" -j "$(nproc)" --target plugin_GIOURING &&
			GIO_NIXL_WHEELS=${GIO_NIXL_WHEELS:?GIO_NIXL_WHEELS: the folder of the pinned wheels} bash scripts/nixl-test.sh venv "$nb"
	} >"$out/nixl.log" 2>&1 || nrc=1
	if ((nrc == 0)); then
		for u in 'mem://hbm?size=2G' 'mem://host?exec=gpu&size=2G'; do
			tag=${u%%\?*}
			tag=${tag#mem://}
			[[ $u == *exec=gpu* ]] && tag=$tag-gpuexec
			echo "== nixl_bench --mem vram --gio-uris '$u'" >>"$out/nixl.log"
			timeout 300 bash scripts/nixl-test.sh bench "$nb" --mem vram --chunks 512 --gio-uris "$u" \
				--json "$out/json/nixl-vram-$tag.json" >>"$out/nixl.log" 2>&1 || nrc=1
		done
		# DRAM on this machine too: POSIX and GIOURING over files (O_DIRECT), as on the CPU machines.
		echo "== nixl_bench --mem dram --chunks 512" >>"$out/nixl.log"
		timeout 300 bash scripts/nixl-test.sh bench "$nb" --mem dram --chunks 512 \
			--json "$out/json/nixl-dram-file.json" >>"$out/nixl.log" 2>&1 || nrc=1
		echo "== pytest tests/nixl" >>"$out/nixl.log"
		timeout 300 bash scripts/nixl-test.sh pytest "$nb" tests/nixl -q >>"$out/nixl.log" 2>&1 || nrc=1
	fi
	if ((nrc == 0)); then say "PASS nixl ($((SECONDS - t)) s)"; else fail "nixl ($((SECONDS - t)) s; nixl.log)"; tail -n 30 "$out/nixl.log" | tee -a "$log"; fi
fi
if compgen -G "$out/json/*.json" >/dev/null; then
	tar -C "$out" -cf "$out/json.tar" json
fi
rm -rf "$out/json"
say "gpu-check: $([[ $failed == 0 ]] && echo 'all passed' || echo "$failed failed")"
((failed == 0))
