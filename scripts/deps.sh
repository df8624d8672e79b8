#!/usr/bin/env bash
# Installs the Debian 12 packages giouring's build and tests need, and only
# those that are missing: with everything present it runs no apt command.
# Also reports whether nvcc (CUDA) is reachable; without it CMake builds
# everything but the CUDA parts.
#
# Extra packages: GIO_EXTRA_PACKAGES="qemu-system-x86 ..." bash scripts/deps.sh
set -euo pipefail

packages=(
  cmake
  ninja-build
  g++
  pkg-config
  catch2
  libnvme-dev
  liburing-dev
  doxygen
  clang
)
# The QEMU conformance runs (ctest label qemu, scripts/qemu/run.sh): the emulator, a static
# busybox for the guest, cpio for its initramfs, kmod (depmod, modprobe) to order the guest
# kernel's modules. The guest kernel itself is downloaded at run time, never installed. The
# iommufd run builds its guest kernel from Debian's source (scripts/qemu/build-kernel.sh): flex,
# bison, bc, libelf-dev and libssl-dev are the kernel build's tools. The SR-IOV run puts
# e2fsprogs' mke2fs and e2fsck into its guest (ext4 beside giouring on one SSD).
packages+=(
  qemu-system-x86
  busybox-static
  cpio
  kmod
  flex
  bison
  bc
  libelf-dev
  libssl-dev
  xz-utils
  e2fsprogs
)
# The aarch64 stage (scripts/test.sh): Debian's cross compilers, qemu-user to run their programs,
# and the arm64 build of liburing from Debian multiarch (dpkg --add-architecture arm64, done below
# when missing). Catch2 needs no arm64 build: Debian's catch2 2.x is headers and CMake files only,
# which the cross build takes from the amd64 package (catch2:arm64 could not be installed beside it:
# the package is Multi-Arch: foreign).
packages+=(
  gcc-aarch64-linux-gnu
  g++-aarch64-linux-gnu
  qemu-user
  liburing-dev:arm64
)
# The Python package's stage (scripts/python-test.sh): a venv for torch from PyPI. The NIXL tests
# (scripts/nixl-test.sh): a venv for the pinned NIXL wheels, and binutils' readelf, nm and c++filt
# for nixl/check_vtable.py (g++ pulls binutils in already; named for what uses it). matplotlib:
# bench/plot.py, whose TTFT plots tests/python/test_ttft_analysis.py draws.
packages+=(
  python3
  python3-venv
  python3-matplotlib
  binutils
)
extra_packages=()
if [[ -n "${GIO_EXTRA_PACKAGES:-}" ]]; then
  read -r -a env_extra <<<"$GIO_EXTRA_PACKAGES"
  extra_packages+=("${env_extra[@]}")
fi

log() { printf 'deps: %s\n' "$*" >&2; }

# Whether package $1 is installed: "name:arch" as named, a bare name for the native architecture
# (or all); with multiarch a bare name may have an instance per architecture.
installed() {
  local want=all native
  native=$(dpkg --print-architecture)
  [[ "$1" == *:* ]] && want=${1##*:}
  dpkg-query -W -f='${Architecture} ${Status}\n' "$1" 2>/dev/null |
    awk -v want="$want" -v native="$native" '
      $2 " " $3 " " $4 == "install ok installed" && ($1 == want || $1 == native || $1 == "all") { ok = 1 }
      END { exit !ok }'
}

# libFuzzer ships in libclang-rt-<N>-dev, N = clang's major version.
clang_rt_package() {
  local major=""
  if command -v clang >/dev/null 2>&1; then
    major=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
  elif command -v apt-cache >/dev/null 2>&1; then
    major=$(apt-cache depends clang 2>/dev/null |
            sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
  fi
  echo "libclang-rt-${major:-14}-dev"
}

missing_packages() {
  local p
  for p in "${packages[@]}" "$(clang_rt_package)" ${extra_packages[@]+"${extra_packages[@]}"}; do
    installed "$p" || printf '%s\n' "$p"
  done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  log "dpkg-query not found: not a Debian system; install by hand: ${packages[*]} $(clang_rt_package) ${extra_packages[*]:-}"
  exit 1
fi

mapfile -t missing < <(missing_packages)

if ((${#missing[@]} > 0)); then
  log "missing: ${missing[*]}"
  sudo_cmd=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo_cmd=(sudo)
    else
      log "error: cannot install ${missing[*]}: not root and no sudo."
      log "install them as root: apt-get install -y --no-install-recommends ${missing[*]}"
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    log "error: cannot install ${missing[*]}: apt-get not found"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Packages of a foreign architecture (liburing-dev:arm64) need it in dpkg's list before the update.
  for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
    if [[ "$arch" != "$(dpkg --print-architecture)" ]] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
      log "adding the $arch architecture to dpkg (multiarch)"
      "${sudo_cmd[@]}" dpkg --add-architecture "$arch" || { log "error: dpkg --add-architecture $arch failed"; exit 1; }
    fi
  done
  if ! "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update; then
    log "error: apt-get update failed; could not install ${missing[*]}"
    exit 1
  fi
  # With fresh package lists apt-cache can name clang's libclang-rt version.
  mapfile -t missing < <(missing_packages)
  if ! "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
       apt-get install -y --no-install-recommends "${missing[@]}"; then
    log "error: apt-get install failed for: ${missing[*]}"
    exit 1
  fi
  # clang just installed may want another libclang-rt version than guessed.
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} > 0)); then
    log "installing ${missing[*]}"
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y --no-install-recommends "${missing[@]}" ||
      { log "error: apt-get install failed for: ${missing[*]}"; exit 1; }
  fi
else
  log "all packages present"
fi

if command -v nvcc >/dev/null 2>&1; then
  log "nvcc: $(command -v nvcc)"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  log "nvcc: /usr/local/cuda/bin/nvcc (not on PATH; CMake finds it there)"
else
  log "notice: nvcc not found (PATH, /usr/local/cuda/bin): CUDA is disabled;"
  log "        CMake builds the headers, the host library and the host tests only"
fi
