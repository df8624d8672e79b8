# shellcheck shell=bash
# Shared helpers for scripts/test.sh and scripts/demo.sh; source it, do not run it.
#
# Environment knobs:
#   GIO_BUILD_DIR    build directory (default: build)
#   GIO_BUILD_TYPE   CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   GIO_CMAKE_ARGS   extra arguments for the configure step (word-split)
#   GIO_SKIP_DEPS=1  do not run scripts/deps.sh

gio_log() { printf '==> %s\n' "$*" >&2; }
gio_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

gio_jobs() { nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2; }

gio_deps() {
  if [[ "${GIO_SKIP_DEPS:-0}" == 1 ]]; then
    gio_log "GIO_SKIP_DEPS=1: not checking packages"
    return
  fi
  bash scripts/deps.sh
}

# Puts nvcc on PATH when it is only in /usr/local/cuda/bin; sets GIO_HAVE_NVCC.
gio_find_nvcc() {
  if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  if command -v nvcc >/dev/null 2>&1; then
    GIO_HAVE_NVCC=1
  else
    GIO_HAVE_NVCC=0
  fi
}

# Configures (Ninja) and builds GIO_BUILD_DIR with every core.
gio_configure_build() {
  local build_dir="${GIO_BUILD_DIR:-build}"
  local build_type="${GIO_BUILD_TYPE:-RelWithDebInfo}"
  local -a args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type")

  gio_find_nvcc
  if [[ "$GIO_HAVE_NVCC" == 0 ]]; then
    gio_log "notice: nvcc not found (PATH, /usr/local/cuda/bin): configuring with -DGIOURING_CUDA=OFF"
    args+=(-DGIOURING_CUDA=OFF)
  fi

  # Reuse an existing build dir only if it was made with Ninja.
  if [[ -f "$build_dir/CMakeCache.txt" ]]; then
    local gen
    gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build_dir/CMakeCache.txt")
    if [[ "$gen" != "Ninja" ]]; then
      gio_die "$build_dir was configured with '$gen', not Ninja; remove it (rm -rf $build_dir) or set GIO_BUILD_DIR"
    fi
  else
    args+=(-G Ninja)
  fi

  # shellcheck disable=SC2206 # GIO_CMAKE_ARGS is meant to be word-split
  args+=(${GIO_CMAKE_ARGS:-})

  gio_log "cmake ${args[*]}"
  cmake "${args[@]}"
  gio_log "cmake --build $build_dir -j $(gio_jobs)"
  cmake --build "$build_dir" -j "$(gio_jobs)"
}
