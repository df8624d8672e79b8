#!/usr/bin/env bash
# Builds everything (like scripts/test.sh) and runs the main job: a Llama3-8B KV prefix stored to
# an NVMe target and restored into a shuffled paged pool through the rings, every byte verified.
# With a GPU (nvidia-smi lists one and the CUDA example was built) it takes the GPU path:
# examples/layerwise.cu (a store over GPU-executed targets, one launch of the library's I/O kernel
# per layer, a compute kernel per layer waiting on the device). Without one:
# examples/kv_restore.c (a CPU thread plays the I/O kernel; file target). GIO_DEMO=cpu or gpu
# forces a path. Arguments go to the example, e.g.
#   bash scripts/demo.sh --tokens 16384
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

gio_deps
gio_configure_build

demo="${GIO_BUILD_DIR:-build}/examples/kv_restore"
gpu_demo="${GIO_BUILD_DIR:-build}/examples/layerwise"
path="${GIO_DEMO:-auto}"
if [[ "$path" == auto ]]; then
  path=cpu
  if [[ -x "$gpu_demo" ]] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    path=gpu
  fi
fi
if [[ "$path" == gpu ]]; then
  gio_log "$gpu_demo $*"
  exec "$gpu_demo" "$@"
fi
if [[ ! -x "$demo" ]]; then
  gio_die "$demo was not built (is GIOURING_BUILD_EXAMPLES=OFF in ${GIO_BUILD_DIR:-build}/CMakeCache.txt?)"
fi
gio_log "$demo $*"
exec "$demo" "$@"
