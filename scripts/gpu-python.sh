#!/usr/bin/env bash
# On a GPU machine: builds the Python package offline from this tree and runs its whole pytest
# suite, the GPU tests included (tests/python/test_gpu.py: the GPU engine over GPU-executed
# targets, as examples/layerwise.cu), writing everything to OUTDIR:
#   bash scripts/gpu-python.sh [--build-only] OUTDIR
# (--build-only: the package into OUTDIR/site and no suite; scripts/gpu-ttft.sh builds this way)
# Needs python3 with torch (CUDA), pytest, scikit-build-core, cmake, ninja and nvcc; no network:
# nothing is downloaded. liburing comes from .gpu-deps/ (made by scripts/gpu-deps.sh on a Debian
# machine and carried with the tree) where the machine has none. The package is installed into
# OUTDIR/site (pip --target), never into the system's Python.
#   OUTDIR/pytest.log     the build's and the suite's output (also on stdout)
#   OUTDIR/junit.xml      the suite's results
#   OUTDIR/py-op-cost.md  bench/py_op_cost.py --gpu: the host time of a per-layer call, GPU engine
#   OUTDIR/env.txt        python, torch, CUDA, GPU
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_only=0
if [[ ${1:-} == --build-only ]]; then
  build_only=1
  shift
fi
out=${1:?usage: scripts/gpu-python.sh [--build-only] OUTDIR}
mkdir -p "$out"
out=$(realpath "$out")
log=$out/pytest.log
py=${GIO_PYTHON:-python3}
{
  echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  "$py" -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'
  command -v nvcc && nvcc --version | tail -n1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

args=(--no-build-isolation --no-deps --no-index --force-reinstall --target "$out/site" -Cbuild-dir=build/py-gpu-build)
if [[ -d .gpu-deps ]]; then
  args+=("-Ccmake.define.CMAKE_PREFIX_PATH=$PWD/.gpu-deps")
fi
{
  echo "== pip install ${args[*]} ."
  # --target installs into a folder of ours, which an externally managed Python allows.
  PIP_BREAK_SYSTEM_PACKAGES=1 "$py" -m pip install "${args[@]}" . || { echo "gpu-python: the build failed"; exit 1; }
  ((build_only)) && exit 0
  # The whole suite, bounded: a hung CUDA call (a kernel loaded lazily behind a persistent one)
  # must end the run, not hold the machine. A test past 60 s dumps every thread's Python stack
  # (faulthandler, from its own thread: it works while the main thread is blocked inside a CUDA
  # call, where pytest-timeout's signal never gets handled).
  echo "== pytest"
  PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}" timeout -k 30 1200 \
    "$py" -m pytest -p no:cacheprovider -ra -v -o faulthandler_timeout=60 --junitxml="$out/junit.xml" tests/python
} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if ((rc == 0 && !build_only)); then
  # What one per-layer call costs the host on the GPU engine (the launch on the current stream).
  PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}" timeout -k 10 120 \
    "$py" bench/py_op_cost.py --gpu --layers 32 >"$out/py-op-cost.md" 2>&1 || echo "gpu-python: py_op_cost failed (see $out/py-op-cost.md)"
fi
echo "gpu-python: exit $rc; log in $log"
exit "$rc"
