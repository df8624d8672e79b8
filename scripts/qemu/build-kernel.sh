#!/usr/bin/env bash
# Builds the guest kernel for the iommufd runs of the QEMU conformance suite into a cache:
#   build-kernel.sh CACHE_DIR
# leaves CACHE_DIR/bzImage, CACHE_DIR/version and CACHE_DIR/package.
#
# Why build: Debian's kernels (every flavour, every suite up to 7.3) leave CONFIG_IOMMUFD unset,
# so /dev/iommu, the VFIO device cdev and IOMMU_IOAS_MAP_FILE exist in none of them. This builds
# Debian's own kernel source, the linux-source-N package pinned as iommufd-source in kernels.lock
# beside this script (exact version and SHA-256; bump-kernels.sh moves the pin to the newest
# linux-source-N in trixie-backports and trixie, 6.19 or later for VFIO's dma-buf export), from
# x86_64 tinyconfig plus iommufd.config beside this script, everything built in. The first run
# downloads 167 MB and takes 5 to 10 minutes on 2 cores shared with other work (303 s, 531 s and
# 614 s in three runs); later runs reuse the cache until the pin or iommufd.config changes.
#
# The archive: the trixie suites are named in a private apt configuration under CACHE_DIR/apt,
# pointing at the URI this machine's own Debian sources already use (nothing else is contacted, the
# system's apt configuration is untouched). The .deb is checked against the pinned SHA-256 before
# it is unpacked. Needs flex, bison, bc, libelf-dev, libssl-dev (scripts/deps.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:?usage: build-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
log() { printf 'qemu-kernel-build: %s\n' "$*" >&2; }
. "$here/kernel-lib.sh"

for tool in flex bison bc make gcc xz; do
  command -v "$tool" >/dev/null || { log "missing $tool (scripts/deps.sh installs the kernel build tools)"; exit 1; }
done
[[ -f /usr/include/gelf.h ]] ||
  { log "missing libelf headers (libelf-dev)"; exit 1; }

read -r pkg ver sha < <(lock_entry iommufd-source) || exit 1
# The stamp is the pin and the configuration fragment: a bumped pin or an edited iommufd.config
# rebuilds, an unchanged one reuses the cache without contacting the archive.
stamp="$pkg $ver $sha $(sha256sum "$here/iommufd.config" | cut -c1-16)"
if [[ -f "$cache/package" && "$(cat "$cache/package")" == "$stamp" && -f "$cache/bzImage" ]]; then
  log "cached: $pkg $ver"
  exit 0
fi
trixie_apt "$cache/apt" || exit 1
# The private lists are read only when the pin is missing from them or its download fails (stale).
refresh_lists() { log "apt-get update (trixie, trixie-backports)"; trixie_apt_update; }

log "building $pkg $ver (pinned in kernels.lock; tinyconfig + iommufd.config) with $(nproc) jobs"
start=$(date +%s)
src=$cache/src
rm -rf "$src" "$cache/dl"
mkdir -p "$src" "$cache/dl"
deb=$(download_pinned "$cache/dl" "$pkg" "$ver" "$sha") || { rm -rf "$cache/dl" "$src"; exit 1; }
# Only a verified package replaces the cache: a failed download leaves the previous pin's kernel.
rm -f "$cache/package"
dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
  xz -dc -T0 | tar -x -C "$src"
rm -rf "$cache/dl"
tree=$(ls -d "$src"/linux-source-*/ | head -n1)
(
  cd "$tree"
  make -s ARCH=x86_64 tinyconfig >/dev/null
  scripts/kconfig/merge_config.sh -m .config "$here/iommufd.config" >/dev/null
  make -s ARCH=x86_64 olddefconfig
  # Every symbol the fragment asks for must have survived olddefconfig (a renamed or newly
  # dependent option would drop silently).
  missing=$(grep -E '^CONFIG_[A-Z0-9_]+=y' "$here/iommufd.config" | while read -r line; do
    grep -qx "$line" .config || echo "${line%=y}"; done)
  for extra in CONFIG_DMA_SHARED_BUFFER CONFIG_VFIO_PCI_DMABUF; do
    grep -qx "$extra=y" .config || missing="$missing $extra"
  done
  [[ -z "${missing// /}" ]] || { log "the kernel configuration lacks: $missing"; exit 1; }
  make ARCH=x86_64 -j"$(nproc)" bzImage >"$cache/build.log" 2>&1 || { tail -40 "$cache/build.log" >&2; exit 1; }
  cp arch/x86/boot/bzImage "$cache/bzImage"
  make -s kernelrelease > "$cache/version"
)
rm -rf "$src"
echo "$stamp" > "$cache/package"
log "built $(cat "$cache/version") in $(($(date +%s) - start)) s"
