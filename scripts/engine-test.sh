#!/usr/bin/env bash
# The engine connectors' tests against the engines' own code (ctests engines.vllm and
# engines.sglang, label engines; docs/vllm.md, docs/sglang.md): one venv per engine, since each
# pins its own torch and transformers (vLLM 0.33.0: torch 2.14.0; SGLang 0.5.23: torch 2.14.1),
# the pinned engine from PyPI into it (4.6 GB to download and ~10 GB on disk each, 5 to 7 minutes
# each on a busy 2-core machine), the package built from this tree against that torch, then
# tests/engines/<engine>.
#   bash scripts/engine-test.sh vllm|sglang|all [BUILD_DIR] [PYTEST_ARGS...]
# The venvs live in BUILD_DIR/engines (default build/) and are reused. Without 25 GB free there
# (12 GB for one engine whose venv is missing) it skips, exit 77, saying so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
which=${1:-}
build=$(realpath -m "${2:-build}")
shift 2 || shift $# || true
py=${GIO_PYTHON:-python3}
declare -A pin=([vllm]="vllm==0.33.0" [sglang]="sglang==0.5.23")

die() { printf 'engine-test: error: %s\n' "$*" >&2; exit 1; }
source scripts/lib/venv.sh
case $which in
  vllm | sglang) engines=("$which") ;;
  all) engines=(vllm sglang) ;;
  *) die "usage: bash scripts/engine-test.sh vllm|sglang|all [BUILD_DIR] [PYTEST_ARGS...] (not '${which}')" ;;
esac
command -v "$py" >/dev/null || die "$py not found (scripts/deps.sh installs python3)"
mkdir -p "$build/engines"

# Disk: each missing venv needs ~12 GB while pip unpacks its wheels.
need=0
for e in "${engines[@]}"; do
  [[ -x $build/engines/$e-venv/bin/python ]] || need=$((need + 12))
done
if ((need > 0)); then
  free=$(($(df -Pk "$build/engines" | awk 'NR == 2 { print $4 }') / 1024 / 1024))
  want=$((need > 12 ? 25 : 12))
  if ((free < want)); then
    echo "engine-test: SKIPPED ${engines[*]}: ${free} GB free in $build/engines, ${want} GB needed for the engines' venvs"
    exit 77
  fi
fi

failed=()
for e in "${engines[@]}"; do
  venv=$build/engines/$e-venv
  venv_make "$venv"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check)
  t=$SECONDS
  # --no-cache-dir: pip's cache would hold a second copy of every wheel (several GB).
  "${pip[@]}" install --no-cache-dir --progress-bar off "${pin[$e]}" "pytest>=8" "scikit-build-core>=0.10" cmake ninja ||
    die "pip could not install ${pin[$e]} into $venv"
  echo "engine-test: ${pin[$e]} in $venv ($((SECONDS - t)) s)"
  # Built against the engine's own torch (no isolation), which is why each venv builds its own.
  venv_build_package "$venv" "$build/engines/$e-pybuild" engine-test
  t=$SECONDS
  # HF_HUB_OFFLINE: the tests' model is a config.json in the tree; nothing may reach for a hub.
  if HF_HUB_OFFLINE=1 "$venv/bin/python" -m pytest -p no:cacheprovider -ra -W ignore::DeprecationWarning \
       --rootdir "tests/engines/$e" "tests/engines/$e" "$@"; then
    echo "engine-test: $e passed ($((SECONDS - t)) s)"
  else
    echo "engine-test: $e FAILED ($((SECONDS - t)) s)"
    failed+=("$e")
  fi
done
((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
