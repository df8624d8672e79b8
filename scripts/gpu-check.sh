#!/usr/bin/env bash
# One run on the GPU test machine: build the GPU tests and benches for sm_90 with nvcc, run the
# tests, then again under compute-sanitizer memcheck and racecheck, then the benches; write logs
# and results into the output folder (first argument, else $OUT, else ./gpu-out).
#
# It needs only nvcc, gcc and the headers (the GPU machine has no Catch2, libnvme or liburing):
# the two host sources GPU programs need (src/error.c, src/clock.c) are compiled here too, so
# nothing is carried.
#
# GIO_GPU_STAGES picks stages (default: all): tests sanitize cmdrate restore quick
#   tests     the GPU tests (tests/gpu/test_*.cu) and the GPU examples (examples/*.cu)
#   sanitize  the same under memcheck and racecheck (small sizes; fused launches)
#   cmdrate   bench_gpu_cmdrate: commands/s against I/O SMs, rings in HBM and host memory
#   restore   bench_kv_restore at 32K and 128K tokens: giouring beside every baseline
#   file      bench_gpu_file: the file target's CPU executor fed by GPU warps (needs .gpu-deps/)
#   quick     smoke runs of both benches (instead of cmdrate/restore when debugging)
# GIO_GPU_SANITIZE names the tests the sanitize stage runs (default: every tests/gpu/test_*.cu).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-${OUT:-gpu-out}}
stages=" ${GIO_GPU_STAGES:-tests sanitize cmdrate restore file} "
mkdir -p "$out/bin"
export PATH="$PATH:/usr/local/cuda/bin"
# The device tool brings back at most 8 files: a summary log, a detailed log, bench results.
log="$out/gpu-check.log"
detail="$out/gpu-tests.log"
: >"$log"
: >"$detail"
say() { printf '%s\n' "$*" | tee -a "$log"; }
want() { [[ "$stages" == *" $1 "* ]]; }

say "giouring gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${GIO_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} stages:${stages% }"
if command -v nvidia-smi >/dev/null 2>&1; then
	say "machine: $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.total --format=csv,noheader | head -n 1)"
else
	say "machine: no nvidia-smi"
fi
say "nvcc: $(nvcc --version | tail -n 1)"

pass=0 fail=0 skip=0
run() { # name, command...
	local name=$1
	shift
	local tmp="$out/run.tmp" t0=$SECONDS
	"$@" >"$tmp" 2>&1
	local rc=$?
	{ printf '===== %s (exit %d, %d s): %s\n' "$name" "$rc" $((SECONDS - t0)) "$*"; cat "$tmp"; } >>"$detail"
	case $rc in
	0) pass=$((pass + 1)); say "PASS $name ($((SECONDS - t0)) s)" ;;
	77) skip=$((skip + 1)); say "SKIP $name" ;;
	*) fail=$((fail + 1)); say "FAIL $name (exit $rc)"; tail -n 20 "$tmp" | tee -a "$log" ;;
	esac
	grep -h -E '^(PASS|FAIL|SKIP):|ERROR SUMMARY|RACECHECK SUMMARY' "$tmp" | sed 's/^/    /' | tee -a "$log"
	rm -f "$tmp"
}

# Host objects of the library that GPU programs link. The whole host library needs liburing's
# headers and static library, which the GPU machine lacks: carry them in .gpu-deps/ (inc/ and
# liburing.a, copied from a Debian machine with liburing-dev; the folder is git-ignored). Without
# them only src/error.c and src/clock.c are built, enough for everything but the programs that
# drive the CPU executor, which are then skipped.
lib="$out/bin/libgio_gpu.a"
full=0
objs=()
if [[ -f .gpu-deps/liburing.a && -d .gpu-deps/inc ]]; then
	full=1
	for f in src/*.c; do
		o="$out/bin/$(basename "$f" .c).o"
		gcc -std=c11 -O2 -Wall -Iinclude -I.gpu-deps/inc -c "$f" -o "$o" >>"$out/build.tmp" 2>&1 || full=0
		objs+=("$o")
	done
fi
if [[ $full == 0 ]]; then
	objs=("$out/bin/error.o" "$out/bin/clock.o")
	gcc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -c src/error.c -o "$out/bin/error.o" >>"$out/build.tmp" 2>&1 &&
		gcc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -c src/clock.c -o "$out/bin/clock.o" >>"$out/build.tmp" 2>&1
fi
if ! ar rcs "$lib" "${objs[@]}" >>"$out/build.tmp" 2>&1; then
	say "FAIL host objects (build)"
	tail -n 20 "$out/build.tmp" | tee -a "$log"
	exit 1
fi
links=("$lib" -ldl -lpthread)
[[ $full == 1 ]] && links+=(.gpu-deps/liburing.a)
say "host library: $([[ $full == 1 ]] && echo 'all of src/ (liburing from .gpu-deps)' || echo 'error.c and clock.c only')"

build() { # source, binary name
	if [[ $full == 0 ]] && grep -qE 'gio_ctx_open|gio__gpu_dmabuf' "$1"; then
		skip=$((skip + 1))
		say "SKIP $2 (needs the CPU executor: carry .gpu-deps/ with liburing)"
		return 1
	fi
	if ! nvcc -std=c++17 -arch=sm_90 -O2 -lineinfo --Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror \
		-Iinclude "$1" "${links[@]}" -o "$out/bin/$2" >"$out/build.tmp" 2>&1; then
		fail=$((fail + 1))
		say "FAIL $2 (build)"
		tail -n 20 "$out/build.tmp" | tee -a "$log"
		return 1
	fi
}

if want tests || want sanitize; then
	for src in tests/gpu/test_*.cu; do
		name=$(basename "$src" .cu)
		build "$src" "$name" || continue
		want tests && run "$name" timeout 60 "$out/bin/$name"
		if want sanitize && [[ -z "${GIO_GPU_SANITIZE:-}" || " $GIO_GPU_SANITIZE " == *" $name "* ]]; then
			# compute-sanitizer serializes kernels: persistent executors share one launch with
			# their producers there (GIO_GPU_FUSED=1), at small sizes (GIO_GPU_QUICK=1).
			# A test that makes failing CUDA calls on purpose (probing refusals) says so with
			# "gpu-check: expected-api-errors"; memcheck then leaves API errors to its checks.
			api=()
			grep -q 'gpu-check: expected-api-errors' "$src" && api=(--report-api-errors no)
			run "$name.memcheck" env GIO_GPU_QUICK=1 GIO_GPU_FUSED=1 timeout 120 \
				compute-sanitizer --tool memcheck "${api[@]}" --error-exitcode 99 "$out/bin/$name"
			run "$name.racecheck" env GIO_GPU_QUICK=1 GIO_GPU_FUSED=1 timeout 120 \
				compute-sanitizer --tool racecheck --error-exitcode 99 "$out/bin/$name"
		fi
	done
fi

if want tests; then
	# The GPU examples are integration templates: they must run and verify on a GPU.
	for src in examples/*.cu; do
		name=$(basename "$src" .cu)
		build "$src" "$name" || continue
		run "example.$name" timeout 90 "$out/bin/$name"
	done
fi

if want cmdrate || want quick; then
	if build bench/bench_gpu_cmdrate.cu bench_gpu_cmdrate; then
		if want quick; then
			run bench_gpu_cmdrate.quick timeout 120 "$out/bin/bench_gpu_cmdrate" --quick
		fi
		if want cmdrate; then
			# HBM rings against I/O SMs (executor SMs grown with them, one I/O warp per queue pair
			# up to 1024), the scope A/B, then rings in host memory against executor SMs.
			pts=hbm:1:16,hbm:2:16,hbm:4:16,hbm:8:16,hbm:16:32,hbm:32:64,hbm:64:64
			pts=$pts,hbm:2:16:sys,hbm:8:16:sys
			pts=$pts,host:2:16,host:8:4,host:8:16,host:8:32,host:32:16
			run bench_gpu_cmdrate.sweep bash -o pipefail -c "timeout 300 '$out/bin/bench_gpu_cmdrate' --seconds 0.3 --points $pts \
				--json '$out/cmdrate.json' | tee '$out/cmdrate.md'"
			# Where the time of a batch goes (the executor times its steps; a little slower).
			run bench_gpu_cmdrate.profile bash -o pipefail -c "{ echo; echo '## With --profile'; echo; \
				timeout 120 '$out/bin/bench_gpu_cmdrate' --seconds 0.3 --profile \
				--points hbm:2:16,hbm:32:64,host:2:16,host:8:16,host:32:16; } | tee -a '$out/cmdrate.md'"
		fi
	fi
fi

if want restore || want quick; then
	if build bench/bench_kv_restore.cu bench_kv_restore; then
		if want quick; then
			run bench_kv_restore.quick timeout 180 "$out/bin/bench_kv_restore" --quick --no-cufile
		fi
		if want restore; then
			for t in 32K 128K; do
				run "bench_kv_restore.$t" bash -o pipefail -c "timeout 400 '$out/bin/bench_kv_restore' --tokens $t --reps 3 \
					--gather-sms 8,4 --gio-sms 8,4,2 --file-dir /dev/shm --pread-tokens 32768 \
					--json '$out/kv-$t.json' | tee '$out/kv-$t.md'"
			done
		fi
	fi
fi
if want file; then
	if build bench/bench_gpu_file.cu bench_gpu_file; then
		run bench_gpu_file bash -o pipefail -c "timeout 90 '$out/bin/bench_gpu_file' --tokens 16384 --dir /tmp --reps 3 \
			--warmup 1 --json '$out/gpu-file.json' | tee '$out/gpu-file.md'"
	fi
fi
rm -rf "$out/bin" "$out/build.tmp"
say "gpu-check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
