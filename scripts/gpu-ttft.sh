#!/usr/bin/env bash
# On a GPU machine: a real model's time to first token with its prefix KV restored from the SSD
# tier, beside the baselines (bench/ttft_llama.py says what each is, what is measured and what is
# modelled). Builds the Python package offline (scripts/gpu-python.sh --build-only), runs the bench,
# and writes into OUTDIR:
#   OUTDIR/ttft.log    the bench's output (tables at the end)
#   OUTDIR/ttft.json   every figure
#   OUTDIR/env.txt     python, torch, CUDA, GPU
#   OUTDIR/stacks.txt  when the bench's output stood still for GIO_TTFT_STALL seconds (default 120):
#                      every thread's native and Python stack (py-spy from .gpu-deps/tools, made by
#                      scripts/gpu-deps.sh); then the bench is stopped (a CUDA call waiting
#                      behind persistent kernels never returns: waiting on would only spend the
#                      device time the rest of a gpu-check needs)
#   bash scripts/gpu-ttft.sh OUTDIR [bench arguments...]
#   GIO_TTFT_SITE=DIR/site: use a package built before (scripts/gpu-python.sh --build-only DIR)
# Needs python3 with torch (CUDA) and transformers 5.x; nothing is downloaded.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: scripts/gpu-ttft.sh OUTDIR [bench arguments...]}
shift
mkdir -p "$out"
out=$(realpath "$out")
py=${GIO_PYTHON:-python3}
# GIO_TTFT_SITE: a package already built by scripts/gpu-python.sh --build-only (its site/ folder),
# for several runs in one device session; else it is built here.
site=${GIO_TTFT_SITE:-$out/site}
if [[ -z ${GIO_TTFT_SITE:-} ]]; then
  bash scripts/gpu-python.sh --build-only "$out" >"$out/build.log" 2>&1 || {
    tail -n 40 "$out/build.log"
    echo "gpu-ttft: the package did not build"
    exit 1
  }
elif [[ ! -d $site/giouring ]]; then
  echo "gpu-ttft: GIO_TTFT_SITE=$site holds no built giouring package"
  exit 1
fi
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" timeout -k 30 "${GIO_TTFT_TIMEOUT:-1500}" \
  "$py" bench/ttft_llama.py --json "$out/ttft.json" "$@" >"$out/ttft.log" 2>&1 &
pid=$!
# A stall says where it is: a CUDA call waiting behind the stand-in drives' persistent executors
# shows only in native frames (faulthandler, inside the bench, prints Python frames only).
spy=$(command -v py-spy || echo .gpu-deps/tools/py-spy)
stall=${GIO_TTFT_STALL:-120}
last=-1 still=0 dumped=0
tail -n +1 -f --pid="$pid" "$out/ttft.log" &
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
  size=$(stat -c %s "$out/ttft.log" 2>/dev/null || echo 0)
  if [[ $size != "$last" ]]; then
    last=$size still=0 dumped=0
    continue
  fi
  still=$((still + 1))
  if ((still >= stall && !dumped)); then
    dumped=1
    bench=$(pgrep -P "$pid" -f ttft_llama.py | head -n1)
    {
      echo "== $(date -u +%FT%TZ): no output for ${stall} s; stacks of pid ${bench:-?}"
      if [[ -x $spy && -n $bench ]]; then "$spy" dump --native --pid "$bench" 2>&1; else echo "(no py-spy: scripts/gpu-deps.sh)"; fi
    } >>"$out/stacks.txt"
    echo "gpu-ttft: the bench stood still for ${stall} s: stacks in $out/stacks.txt; stopping it"
    kill -TERM "$pid" 2>/dev/null # timeout passes it on; its -k 30 follows with KILL
  fi
done
wait "$pid"
rc=$?
echo "gpu-ttft: exit $rc"
exit "$rc"
