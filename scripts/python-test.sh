#!/usr/bin/env bash
# The Python package's test (ctest python.pytest, label python; docs/python.md): a venv in
# BUILD_DIR/py-venv with torch 2.11 and pytest from PyPI (the CUDA build of torch with its
# nvidia-* wheels: 3 to 4 GB and 1 to 4 minutes the first time, kept after), the package built
# from this tree into it (BUILD_DIR/py-build keeps its CMake build), then tests/python (its GPU
# tests skip without a GPU).
#   bash scripts/python-test.sh [BUILD_DIR] [PYTEST_ARGS...]
# Needs python3 with venv (scripts/deps.sh installs Debian's); GIO_PYTHON names another Python.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=$(realpath -m "${1:-build}")
shift || true
venv=$build/py-venv
py=${GIO_PYTHON:-python3}

die() { printf 'python-test: error: %s\n' "$*" >&2; exit 1; }
source scripts/lib/venv.sh
command -v "$py" >/dev/null || die "$py not found (scripts/deps.sh installs python3)"
venv_make "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
t=$SECONDS
"${pip[@]}" install --progress-bar off "torch==2.11.*" "pytest>=8" "scikit-build-core>=0.10" ||
  die "pip could not install torch 2.11, pytest and scikit-build-core into $venv"
echo "python-test: torch, pytest, scikit-build-core in $venv ($((SECONDS - t)) s)"
venv_build_package "$venv" "$build/py-build" python-test
"$venv/bin/python" -c 'import giouring, torch; print(f"python-test: giouring {giouring.__version__}, torch {torch.__version__}, GPU engine built: {giouring.has_gpu()}, CUDA device: {torch.cuda.is_available()}")'
exec "$venv/bin/python" -m pytest -p no:cacheprovider -ra tests/python "$@"
