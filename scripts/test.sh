#!/usr/bin/env bash
# Installs what is missing, configures build/ (Ninja, RelWithDebInfo), builds
# and runs every ctest test. Extra arguments go to ctest, e.g.
#   bash scripts/test.sh -L host        # only host tests
#   bash scripts/test.sh -R header      # only header tests
#   bash scripts/test.sh -LE fuzz       # everything but the fuzzers
# See scripts/lib.sh for the environment knobs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

gio_deps
gio_configure_build

# ctest's summary stays the last thing printed, and its status is ours.
exec ctest --test-dir "${GIO_BUILD_DIR:-build}" --output-on-failure -j "$(gio_jobs)" "$@"
