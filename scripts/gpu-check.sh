#!/usr/bin/env bash
# One run on the GPU test machine: build the GPU tests for sm_90 with nvcc, run each one, then
# again under compute-sanitizer memcheck and racecheck, and write logs plus a summary into the
# output folder (first argument, else $OUT, else ./gpu-out).
#
# It needs only nvcc and the headers (the GPU machine has no Catch2, libnvme or liburing), so
# it compiles there instead of carrying a build tree. Later issues add the benches here.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out/bin"
export PATH="$PATH:/usr/local/cuda/bin"
# The device tool brings back at most 8 files: one summary log, one detailed log.
log="$out/gpu-check.log"
detail="$out/gpu-tests.log"
: >"$log"
: >"$detail"
say() { printf '%s\n' "$*" | tee -a "$log"; }

say "giouring gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${GIO_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
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
	local tmp="$out/run.tmp"
	"$@" >"$tmp" 2>&1
	local rc=$?
	{ printf '===== %s (exit %d): %s\n' "$name" "$rc" "$*"; cat "$tmp"; } >>"$detail"
	case $rc in
	0) pass=$((pass + 1)); say "PASS $name" ;;
	77) skip=$((skip + 1)); say "SKIP $name" ;;
	*) fail=$((fail + 1)); say "FAIL $name (exit $rc)"; tail -n 20 "$tmp" | tee -a "$log" ;;
	esac
	grep -h -E '^(PASS|FAIL|SKIP):|ERROR SUMMARY|RACECHECK SUMMARY' "$tmp" | sed 's/^/    /' | tee -a "$log"
	rm -f "$tmp"
}

for src in tests/gpu/test_*.cu; do
	name=$(basename "$src" .cu)
	if ! nvcc -std=c++17 -arch=sm_90 -O2 -lineinfo --Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror \
		-Iinclude "$src" -o "$out/bin/$name" >"$out/build.tmp" 2>&1; then
		fail=$((fail + 1))
		say "FAIL $name (build)"
		tail -n 20 "$out/build.tmp" | tee -a "$log"
		rm -f "$out/build.tmp"
		continue
	fi
	run "$name" timeout 120 "$out/bin/$name"
	run "$name.memcheck" env GIO_GPU_QUICK=1 timeout 250 compute-sanitizer --tool memcheck --error-exitcode 99 "$out/bin/$name"
	run "$name.racecheck" env GIO_GPU_QUICK=1 timeout 250 compute-sanitizer --tool racecheck --error-exitcode 99 "$out/bin/$name"
done
rm -rf "$out/bin" "$out/build.tmp"
say "gpu-check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
