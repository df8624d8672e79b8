#!/usr/bin/env bash
# A/B of the command rate on the GPU machine: bench_gpu_cmdrate built twice in one run, against
# this tree's include/ ("new") and an older copy of it ("old", default .ab-old/include: make it
# with `git archive COMMIT include | tar -x -C .ab-old` and carry .ab-old), then run in
# interleaved rounds so that drift of the machine falls on both alike.
#
#   bash scripts/gpu-ab.sh OUTDIR [POINTS] [ROUNDS]
#
# POINTS as bench_gpu_cmdrate --points (default hbm:2:16,hbm:32:64,host:2:16,host:8:16,host:32:16),
# ROUNDS default 3. Writes OUTDIR/ab.md (every run's tables) and prints it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: gpu-ab.sh OUTDIR [POINTS] [ROUNDS]}
points=${2:-hbm:2:16,hbm:32:64,host:2:16,host:8:16,host:32:16}
rounds=${3:-3}
old_inc=${GIO_AB_OLD:-.ab-old/include}
export PATH="$PATH:/usr/local/cuda/bin"
[[ -d "$old_inc" ]] || { echo "gpu-ab: no old headers at $old_inc" >&2; exit 2; }
mkdir -p "$out"
b=$(mktemp -d)
trap 'rm -rf "$b"' EXIT
gcc -std=c11 -O2 -Iinclude -c src/error.c -o "$b/error.o" && gcc -std=c11 -O2 -Iinclude -c src/clock.c -o "$b/clock.o" || exit 1
for v in new old; do
	inc=include
	[[ $v == old ]] && inc=$old_inc
	nvcc -std=c++17 -arch=sm_90 -O2 -I"$inc" bench/bench_gpu_cmdrate.cu "$b/error.o" "$b/clock.o" -o "$b/$v" \
		>"$b/build-$v.log" 2>&1 || { echo "gpu-ab: build $v failed" >&2; cat "$b/build-$v.log" >&2; exit 1; }
done
{
	echo "points $points, $rounds rounds, old headers: $old_inc"
	for r in $(seq "$rounds"); do
		for v in new old; do
			echo "## run $r $v"
			timeout 120 "$b/$v" --seconds 0.3 --points "$points" | grep -E '^\|'
		done
	done
} >"$out/ab.md" 2>&1
cat "$out/ab.md"
