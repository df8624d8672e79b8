#!/usr/bin/env bash
# On a GPU machine: a real model's time to first token with its prefix KV restored from the SSD
# tier, beside the baselines (bench/ttft_llama.py says what each is, what is measured and what is
# modelled). Builds the Python package offline (scripts/gpu-python.sh --build-only), runs the bench,
# and writes into OUTDIR:
#   OUTDIR/ttft.log    the bench's output (tables at the end)
#   OUTDIR/ttft.json   every figure
#   OUTDIR/env.txt     python, torch, CUDA, GPU
#   bash scripts/gpu-ttft.sh OUTDIR [bench arguments...]
# Needs python3 with torch (CUDA) and transformers 5.x; nothing is downloaded.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: scripts/gpu-ttft.sh OUTDIR [bench arguments...]}
shift
mkdir -p "$out"
out=$(realpath "$out")
py=${GIO_PYTHON:-python3}
bash scripts/gpu-python.sh --build-only "$out" >"$out/build.log" 2>&1 || {
  tail -n 40 "$out/build.log"
  echo "gpu-ttft: the package did not build"
  exit 1
}
PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}" timeout -k 30 "${GIO_TTFT_TIMEOUT:-1500}" \
  "$py" bench/ttft_llama.py --json "$out/ttft.json" "$@" 2>&1 | tee "$out/ttft.log"
rc=${PIPESTATUS[0]}
echo "gpu-ttft: exit $rc"
exit "$rc"
