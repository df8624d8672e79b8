#!/usr/bin/env bash
# Copies liburing's headers and static library from this (Debian) machine into .gpu-deps/, for a
# GPU machine that has nvcc and cmake but no liburing: scripts/gpu-check.sh points CMake there
# (CMAKE_PREFIX_PATH). .gpu-deps/ is git-ignored; carry it to the GPU machine with the tree.
# Also py-spy (a static binary from its PyPI wheel, into .gpu-deps/tools/): scripts/gpu-ttft.sh
# dumps a stalled bench's native stacks with it, where the GPU machine has no debugger.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# This machine's own library: with other architectures' packages installed (the aarch64 stage),
# a plain search can find theirs first.
arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
lib=$(find "/usr/lib/$arch" /usr/lib64 -name liburing.a 2>/dev/null | head -n1 || true)
[[ -n "$lib" && -f /usr/include/liburing.h ]] || { echo "gpu-deps: liburing-dev is not installed (scripts/deps.sh)" >&2; exit 1; }
rm -rf .gpu-deps
mkdir -p .gpu-deps/include .gpu-deps/lib
cp /usr/include/liburing.h .gpu-deps/include/
cp -r /usr/include/liburing .gpu-deps/include/
cp "$lib" .gpu-deps/lib/
echo "gpu-deps: .gpu-deps/ holds liburing $(dpkg-query -W -f='${Version}' liburing-dev 2>/dev/null || echo '?') ($lib)"
# py-spy: optional (a machine without network access to the package index still gets liburing).
mkdir -p .gpu-deps/tools
tmp=$(mktemp -d)
if python3 -m pip download py-spy==0.4.3 --only-binary=:all: --platform manylinux2014_x86_64 --no-deps -q -d "$tmp" 2>/dev/null &&
  python3 -c 'import sys, zipfile, glob; z = zipfile.ZipFile(glob.glob(sys.argv[1] + "/py_spy-*.whl")[0]); n = [x for x in z.namelist() if x.endswith("/py-spy")][0]; open(sys.argv[2], "wb").write(z.read(n))' "$tmp" .gpu-deps/tools/py-spy; then
  chmod +x .gpu-deps/tools/py-spy
  echo "gpu-deps: .gpu-deps/tools/py-spy (0.4.3)"
else
  echo "gpu-deps: py-spy not fetched (no pip or no index): stalled benches will show Python stacks only"
fi
rm -rf "$tmp"
