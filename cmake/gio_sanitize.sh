#!/usr/bin/env bash
# ctest gpu.<test>.memcheck / .racecheck: runs a GPU test under compute-sanitizer.
#   gio_sanitize.sh TOOL API_ERRORS(yes|no) PROGRAM
# Exit 77 (skipped) where there is no compute-sanitizer or no GPU; 99 on a sanitizer report; else
# the program's own status.
set -uo pipefail
tool=$1 api=$2 prog=$3
san=$(command -v compute-sanitizer || true)
[[ -z "$san" && -x /usr/local/cuda/bin/compute-sanitizer ]] && san=/usr/local/cuda/bin/compute-sanitizer
if [[ -z "$san" ]]; then
  echo "gio_sanitize: no compute-sanitizer (PATH, /usr/local/cuda/bin)"
  exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gio_sanitize: no GPU"
  exit 77
fi
args=(--tool "$tool" --error-exitcode 99)
[[ "$tool" == memcheck ]] && args+=(--report-api-errors "$([[ $api == no ]] && echo no || echo explicit)")
exec "$san" "${args[@]}" "$prog"
