#!/usr/bin/env bash
# A/B of a bench on a GPU machine: the bench built from this tree ("new") and from older whole
# source trees (every .ab-old/<name>/: make one with
#   mkdir -p .ab-old/<name> && git archive <commit> | tar -x -C .ab-old/<name>
# and carry .ab-old/ and .gpu-deps/), each through CMake, then run in interleaved rounds so that
# drift of the machine falls on every version alike.
#
#   bash scripts/gpu-ab.sh OUTDIR BENCH ROUNDS [BENCH ARGUMENTS...]
#   e.g. bash scripts/gpu-ab.sh "$OUT" bench_gpu_cmdrate 3 --seconds 0.3 --points hbm:2:16,host:8:16 --no-ceiling
#        bash scripts/gpu-ab.sh "$OUT" bench_kv_restore 2 --tokens 32K --reps 1 --paths bulk,giouring --gio-sms 8
#
# Writes OUTDIR/ab.md: every run's table rows under "## run R VERSION", and prints it. An older
# tree builds this way where its CMake lists already had the bench as a target.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
usage="usage: gpu-ab.sh OUTDIR BENCH ROUNDS [BENCH ARGUMENTS...]"
out=${1:?$usage}
bench=${2:?$usage}
rounds=${3:?$usage}
shift 3
export PATH="$PATH:/usr/local/cuda/bin"
mkdir -p "$out"
versions=(new)
for d in .ab-old/*/; do [[ -f "$d/CMakeLists.txt" ]] && versions+=("$(basename "$d")"); done
((${#versions[@]} > 1)) || { echo "gpu-ab: no old trees in .ab-old/<name>/" >&2; exit 2; }
# No tests are built (older trees need Catch2 for them); liburing from .gpu-deps/ where present,
# also for older trees that link it as -luring.
deps=(-DGIOURING_BUILD_TESTS=OFF)
[[ -d .gpu-deps ]] && deps+=("-DCMAKE_PREFIX_PATH=$PWD/.gpu-deps" "-DCMAKE_EXE_LINKER_FLAGS=-L$PWD/.gpu-deps/lib")
declare -A bin
for v in "${versions[@]}"; do
	src=.
	[[ $v != new ]] && src=.ab-old/$v
	b=build-ab/$v
	if ! { cmake -S "$src" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGIOURING_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
		-DGIOURING_HOST_TESTS=OFF -DGIOURING_FUZZ=OFF -DGIOURING_DOCS=OFF -DGIOURING_INFO=OFF "${deps[@]}" &&
		cmake --build "$b" -j "$(nproc)" --target "$bench"; } >"$out/build-$v.log" 2>&1; then
		echo "gpu-ab: building $bench from $src failed (see $out/build-$v.log)" >&2
		exit 1
	fi
	bin[$v]=$(find "$b" -type f -name "$bench" -perm -u+x | head -n1)
	rm -f "$out/build-$v.log"
done
{
	echo "$bench $*; $rounds rounds; versions: ${versions[*]}"
	for r in $(seq "$rounds"); do
		for v in "${versions[@]}"; do
			echo "## run $r $v"
			timeout 300 "${bin[$v]}" "$@" | grep -E '^\|'
		done
	done
} >"$out/ab.md" 2>&1
cat "$out/ab.md"
