#!/usr/bin/env bash
# Copies liburing's headers and static library from this (Debian) machine into .gpu-deps/, for a
# GPU machine that has nvcc and cmake but no liburing: scripts/gpu-check.sh points CMake there
# (CMAKE_PREFIX_PATH). .gpu-deps/ is git-ignored; carry it to the GPU machine with the tree.
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
