#!/usr/bin/env bash
# Builds everything (like scripts/test.sh) and runs the main job: kv_restore stores a
# Llama3-8B KV prefix to an NVMe target and restores it into a shuffled paged pool through
# the rings, verifying every byte. Arguments go to the example, e.g.
#   bash scripts/demo.sh --tokens 16384 --uri 'mem://host?size=4G'
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

gio_deps
gio_configure_build

demo="${GIO_BUILD_DIR:-build}/examples/kv_restore"
if [[ ! -x "$demo" ]]; then
  gio_die "$demo was not built (is GIOURING_BUILD_EXAMPLES=OFF in ${GIO_BUILD_DIR:-build}/CMakeCache.txt?)"
fi
gio_log "$demo $*"
exec "$demo" "$@"
