#!/usr/bin/env bash
# A/B of the KV restore on the GPU machine: bench_kv_restore built against this tree's include/
# ("new") and against older copies of it (every .ab-old/<name>/include: make one with
# `git archive COMMIT include | tar -x -C .ab-old/COMMIT`, carry .ab-old), then run in
# interleaved rounds, only the bulk copy and giouring rows.
#
#   bash scripts/gpu-ab-restore.sh OUTDIR [TOKENS] [ROUNDS] [GIO_SMS]
#
# Writes OUTDIR/ab-restore.md (every run's table) and prints it. Needs .gpu-deps/ (liburing) for
# the host library, as scripts/gpu-check.sh.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: gpu-ab-restore.sh OUTDIR [TOKENS] [ROUNDS] [GIO_SMS]}
tokens=${2:-32K}
rounds=${3:-2}
sms=${4:-8}
export PATH="$PATH:/usr/local/cuda/bin"
mkdir -p "$out"
b=$(mktemp -d)
trap 'rm -rf "$b"' EXIT
for f in src/*.c; do gcc -std=c11 -O2 -Iinclude -I.gpu-deps/inc -c "$f" -o "$b/$(basename "$f" .c).o" || exit 1; done
ar rcs "$b/libgio.a" "$b"/*.o
versions=(new)
for d in .ab-old/*/include; do versions+=("$(basename "$(dirname "$d")")"); done
for v in "${versions[@]}"; do
	inc=include
	[[ $v != new ]] && inc=.ab-old/$v/include
	nvcc -std=c++17 -arch=sm_90 -O2 -I"$inc" bench/bench_kv_restore.cu "$b/libgio.a" .gpu-deps/liburing.a -ldl -lpthread \
		-o "$b/$v" >"$b/build-$v.log" 2>&1 &
done
wait
{
	echo "tokens $tokens, gio SMs $sms, $rounds rounds, versions: ${versions[*]}"
	for r in $(seq "$rounds"); do
		for v in "${versions[@]}"; do
			echo "## run $r $v"
			[[ -x "$b/$v" ]] || { echo "build failed:"; tail -5 "$b/build-$v.log"; continue; }
			timeout 120 "$b/$v" --tokens "$tokens" --paths bulk,giouring --gio-sms "$sms" --reps 3 --no-pread --no-cufile |
				grep -E '^\| (bulk|giouring)'
		done
	done
} >"$out/ab-restore.md" 2>&1
cat "$out/ab-restore.md"
