# shellcheck shell=bash
# Shared helpers for scripts/test.sh and scripts/demo.sh; source it, do not run it.
#
# Environment knobs:
#   GIO_BUILD_DIR    build directory (default: build)
#   GIO_BUILD_TYPE   CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   GIO_CMAKE_ARGS   extra arguments for the configure step (word-split)
#   GIO_SKIP_DEPS=1  do not run scripts/deps.sh
#   GIO_SANITIZERS   scripts/test.sh's sanitizer stages: auto (default: only when it runs the
#                    whole suite, i.e. without ctest arguments, as CI does), 1 (always), 0 (never)
#   GIO_SAN_STRESS_COMMANDS  GIO_STRESS_COMMANDS of test_stress in the sanitizer stages
#                    (default 100000)
#   GIO_SAN_CHURN_CYCLES  GIO_CHURN_CYCLES of test_lifecycle in the ThreadSanitizer stage
#                    (default 10000; the AddressSanitizer stage runs the full 100000)
#   GIO_AARCH64      scripts/test.sh's aarch64 stage (cross-built, run under qemu-user): auto
#                    (default: with the sanitizer stages), 1 (always), 0 (never)
#   GIO_AARCH64_STRESS_COMMANDS  GIO_STRESS_COMMANDS of test_stress in the aarch64 stage
#                    (default 1000000, of which its memory-target section runs a quarter)

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

# Configures (Ninja) and builds GIO_BUILD_DIR with every core: every target, or only the
# targets given as arguments.
gio_configure_build() {
  local build_dir="${GIO_BUILD_DIR:-build}"
  local build_type="${GIO_BUILD_TYPE:-RelWithDebInfo}"
  local -a args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type")
  # CMake finds nvcc (PATH, /usr/local/cuda/bin) or builds without CUDA, and says which.

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
  cmake "${args[@]}" || return
  local -a build=(--build "$build_dir" -j "$(gio_jobs)")
  if (($# > 0)); then
    build+=(--target "$@")
  fi
  gio_log "cmake ${build[*]}"
  cmake "${build[@]}"
}

# Prints a stage banner on stdout, in line with ctest's output.
gio_banner() { printf '\n== %s\n' "$*"; }

# ThreadSanitizer maps its shadow memory at fixed addresses; with many bits of mmap
# randomisation (vm.mmap_rnd_bits 32, recent kernels) older runtimes abort with "unexpected
# memory mapping". Running without address randomisation (setarch -R, inherited by ctest's
# children) avoids that everywhere; where setarch cannot (no personality syscall), run plainly.
gio_no_aslr() {
  if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
    setarch "$(uname -m)" -R "$@"
  else
    "$@"
  fi
}

# Configures and builds DIR with GIOURING_SANITIZE=SANITIZE (host code only), building TARGETS
# (a space-separated list, or "" for everything).
#   gio_sanitizer_build DIR SANITIZE TARGETS
gio_sanitizer_build() {
  local dir=$1 sanitize=$2 targets=$3
  local -a target_list=()
  read -r -a target_list <<<"$targets"
  GIO_BUILD_DIR="$dir" \
    GIO_CMAKE_ARGS="-DGIOURING_SANITIZE=$sanitize -DGIOURING_CUDA=OFF -DGIOURING_FUZZ=OFF -DGIOURING_DOCS=OFF ${GIO_CMAKE_ARGS:-}" \
    gio_configure_build ${target_list[@]+"${target_list[@]}"}
}

# Cross-compiles the host library, the host tests and the examples for aarch64 in DIR, CUDA off
# (cmake/aarch64-linux-gnu.cmake: Debian's cross compilers and arm64 libraries; ctest runs each
# program under qemu-user).
#   gio_aarch64_build DIR
gio_aarch64_build() {
  local dir=$1
  GIO_BUILD_DIR="$dir" \
    GIO_CMAKE_ARGS="-DCMAKE_TOOLCHAIN_FILE=$PWD/cmake/aarch64-linux-gnu.cmake -DGIOURING_CUDA=OFF -DGIOURING_FUZZ=OFF -DGIOURING_DOCS=OFF -DGIOURING_INFO=OFF ${GIO_CMAKE_ARGS:-}" \
    gio_configure_build
}

# Prints what the QEMU conformance runs (label qemu) reported, from ctest's log of the last run in
# build dir $1: per controller the commands by kind, the result and the IOMMU fault count, the KV
# store's shapes and where their chunks went, the SR-IOV run's writers, ext4 files, set-up and
# SR-IOV state, and giouring-info's output against the kernel-bound controllers. ctest shows a passing test's
# output nowhere else, and CI must show these.
gio_qemu_report() {
  local log="$1/Testing/Temporary/LastTest.log"
  [[ -f "$log" ]] && grep -q "Testing: qemu\." "$log" || return 0
  gio_banner "QEMU conformance report (from $log)"
  awk '/Testing: qemu\./ { on = 1 } /^".*" end time/ { on = 0 } on' "$log" |
    grep -E '^(== controller|== p2p|  IOMMU interface|  nsid|COMMANDS|CHURN|RESULT|KV |WRITER|KILLED-STORE|EXT4 |PF-NS|VFs: |NOTE|SKIP|FAIL|  errors\.|  outstanding|  giouring: |  peer BAR|qemu-[a-z_]+: (IOMMU faults|PASS|FAIL|booting))' || true
  awk '/==INFO-KERNEL==/ { on = 1; next } /==INFO-KERNEL-RC/ { print; on = 0 } on' "$log"
  # The SR-IOV run: giouring-info with both VFs set up, and giouring-sriov's set-up of the first.
  awk '/^==(INFO|SETUP-1)==$/ { on = 1; next } /^==(INFO|SETUP-1)-RC/ { print; on = 0 } on' "$log"
}
