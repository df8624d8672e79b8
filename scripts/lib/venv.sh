# Sourced by the scripts that test Python code in a venv of their own (python-test.sh,
# engine-test.sh, nixl-test.sh): making the venv and building this tree's package into it, each
# failure a message naming what to install. The caller defines die() and sets py (the Python).

# venv_make VENV: a venv at VENV, unless one is there already.
venv_make() {
  [[ -x $1/bin/python ]] || "$py" -m venv "$1" || die "$py -m venv $1 failed (Debian: python3-venv, scripts/deps.sh)"
}

# venv_build_package VENV BUILD_DIR TAG: the package from this tree, built against the venv's own
# torch (no build isolation), its CMake build kept in BUILD_DIR; TAG prefixes the timing line.
venv_build_package() {
  local t=$SECONDS
  "$1/bin/python" -m pip --disable-pip-version-check install --no-build-isolation --no-deps --force-reinstall \
    -Cbuild-dir="$2" . || die "building the package into $1 failed"
  echo "$3: the package built into $1 ($((SECONDS - t)) s)"
}
