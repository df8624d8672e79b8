#!/usr/bin/env bash
# NIXL's GIOURING backend against the real NIXL (ctests nixl.*, label nixl; docs/nixl.md): a venv
# in BUILD_DIR/nixl-venv with the pinned wheels, nixl==1.5.1 and nixl-cu13==1.5.1, without their
# dependencies (no torch: nothing here needs it; ~10 s and ~330 MB), plus numpy and pytest; the
# plugin built in BUILD_DIR copied next to the wheel's own plugins (NIXL_PLUGIN_DIR replaces the
# wheel's directory instead of adding to it, and the wheel's plugins find their libraries only
# from there), then one step:
#   bash scripts/nixl-test.sh venv [BUILD_DIR]            the venv (ctest nixl.venv)
#   bash scripts/nixl-test.sh vtable [BUILD_DIR] [LIB]    nixl/check_vtable.py: the plugin's (or
#                                                         LIB's) vtable against the wheel's
#                                                         libplugin_POSIX.so (ctest nixl.vtable)
#   bash scripts/nixl-test.sh pytest [BUILD_DIR] ARGS...  pytest ARGS in the venv (tests/nixl)
#   bash scripts/nixl-test.sh bench [BUILD_DIR] ARGS...   bench/nixl_bench.py ARGS in the venv
#                                                         (ctest nixl.bench: --quick)
#   bash scripts/nixl-test.sh wheels DIR [PYVER]          downloads the two pinned wheels for
#                                                         CPython PYVER (default: this python3's,
#                                                         e.g. 3.12) into DIR, for a machine
#                                                         without network (~60 MB)
# With GIO_NIXL_WHEELS=DIR, "venv" installs the wheels from DIR without network into
# BUILD_DIR/nixl-venv/site, for GIO_PYTHON (or python3) with its own numpy and pytest: the GPU
# machine's way (GIO_PYTHON=/opt/torch/.venv/bin/python3 there).
# Exit 77 (skipped, saying why) where BUILD_DIR has no plugin (GIOURING_NIXL=OFF).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
step=${1:-}
build=$(realpath -m "${2:-build}")
shift 2 || shift $# || true
py=${GIO_PYTHON:-python3}
venv=$build/nixl-venv
plugin=$build/nixl/plugins/libplugin_GIOURING.so

die() { printf 'nixl-test: error: %s\n' "$*" >&2; exit 1; }
source scripts/lib/venv.sh
if [[ $step == wheels ]]; then
  # (the arguments are shifted: BUILD_DIR's place holds DIR, and PYVER is $1)
  dir=$build
  ver=${1:-$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}
  "$py" -m pip --disable-pip-version-check download --no-deps --only-binary=:all: --python-version "$ver" \
    --platform manylinux_2_28_x86_64 -d "$dir" nixl==1.5.1 nixl-cu13==1.5.1 ||
    die "pip could not download nixl==1.5.1 and nixl-cu13==1.5.1 for Python $ver into $dir"
  exit 0
fi
[[ -f $plugin ]] || { echo "nixl-test: SKIPPED: no $plugin (configure with -DGIOURING_NIXL=ON, build it)"; exit 77; }

# The wheel's plugins folder, where NIXL looks by default.
plugins_dir() {
  "$venv/bin/python" -c 'import glob, os, site
import sys
d = [p for s in site.getsitepackages() + sys.path for p in glob.glob(os.path.join(s, ".nixl_cu*.mesonpy.libs", "plugins"))]
print(d[0] if d else "")'
}

case $step in
  venv)
    command -v "$py" >/dev/null || die "$py not found (scripts/deps.sh installs python3)"
    t=$SECONDS
    if [[ -n ${GIO_NIXL_WHEELS:-} ]]; then
      # Not a venv: GIO_PYTHON may itself be a venv's (the GPU machine's torch venv, with numpy
      # and pytest), whose packages a new venv would not see. The wheels go to a folder of their
      # own and $venv/bin/python runs GIO_PYTHON with that folder on its path.
      rm -rf "$venv"
      mkdir -p "$venv/bin"
      "$py" -m pip --disable-pip-version-check install --progress-bar off --no-index --no-deps \
        --find-links "$GIO_NIXL_WHEELS" --target "$venv/site" nixl==1.5.1 nixl-cu13==1.5.1 ||
        die "no nixl==1.5.1 and nixl-cu13==1.5.1 wheels for $py in $GIO_NIXL_WHEELS"
      printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec "%s" "$@"\n' "$venv/site" "$(command -v "$py")" \
        >"$venv/bin/python"
      chmod +x "$venv/bin/python"
      "$venv/bin/python" -c 'import numpy, pytest, nixl._api' || die "$py lacks numpy or pytest, or nixl does not load"
      echo "nixl-test: nixl 1.5.1 from $GIO_NIXL_WHEELS for $py in $venv/site ($((SECONDS - t)) s)"
      exit 0
    fi
    venv_make "$venv"
    # --no-deps: unpinned, nixl pulls in torch and the nixl-cu12 wheels (several GB) it does not
    # need for DRAM, files and loopback UCX.
    pip=("$venv/bin/python" -m pip --disable-pip-version-check install --progress-bar off)
    "${pip[@]}" --no-deps nixl==1.5.1 nixl-cu13==1.5.1 ||
      die "pip could not install nixl==1.5.1 and nixl-cu13==1.5.1 into $venv"
    "${pip[@]}" numpy "pytest>=8" || die "pip could not install numpy and pytest into $venv"
    echo "nixl-test: nixl 1.5.1 in $venv ($((SECONDS - t)) s)"
    ;;
  vtable | pytest | bench)
    [[ -x $venv/bin/python ]] || die "no venv in $venv: run 'bash scripts/nixl-test.sh venv $build' first"
    dir=$(plugins_dir)
    [[ -n $dir ]] || die "no NIXL plugins folder in $venv (is nixl-cu13 installed?)"
    if [[ $step == vtable ]]; then
      exec "$py" nixl/check_vtable.py "$dir/libplugin_POSIX.so" nixlPosixEngine "${1:-$plugin}" gio_nixl::engine
    fi
    install -m 0755 "$plugin" "$dir/libplugin_GIOURING.so"
    export GIO_NIXL_PLUGIN="$dir/libplugin_GIOURING.so"
    [[ $step == bench ]] && exec "$venv/bin/python" bench/nixl_bench.py --plugin "$GIO_NIXL_PLUGIN" "$@"
    exec "$venv/bin/python" -m pytest -p no:cacheprovider -ra "$@"
    ;;
  *) die "usage: bash scripts/nixl-test.sh venv|vtable|pytest|bench|wheels [BUILD_DIR] [PYTEST_ARGS...] (not '${step}')" ;;
esac
