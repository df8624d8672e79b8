#!/usr/bin/env bash
# Builds everything (like scripts/test.sh) and runs the plan_restore example.
# Arguments go to the example, e.g.  bash scripts/demo.sh mem://host?size=1G
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

gio_deps
gio_configure_build

demo="${GIO_BUILD_DIR:-build}/examples/plan_restore"
if [[ ! -x "$demo" ]]; then
  if [[ ! -f examples/plan_restore.c ]]; then
    gio_die "$demo was not built: examples/plan_restore.c does not exist yet"
  fi
  gio_die "$demo was not built (is GIOURING_BUILD_EXAMPLES=OFF in ${GIO_BUILD_DIR:-build}/CMakeCache.txt?)"
fi
gio_log "$demo $*"
exec "$demo" "$@"
