#!/usr/bin/env bash
# Fetches the Debian guest kernel for the QEMU conformance suite into a cache directory:
#   fetch-kernel.sh CACHE_DIR
# leaves CACHE_DIR/vmlinuz, CACHE_DIR/version and CACHE_DIR/modules/ (vfio, nvme and ext4 modules,
# uncompressed, in load order in CACHE_DIR/modules/order). The package is the one pinned as
# debian12-image in kernels.lock beside this script (exact name, version and SHA-256), so a Debian
# upload cannot change the guest kernel under the tests; bump-kernels.sh moves the pin. It is
# downloaded with this machine's own apt sources, checked against the pinned SHA-256, unpacked,
# never installed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:?usage: fetch-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

log() { printf 'qemu-kernel: %s\n' "$*" >&2; }
. "$here/kernel-lib.sh"

read -r pkg ver sha < <(lock_entry debian12-image) || exit 1
# The stamp is the whole pin: a bumped pin fetches again, an unchanged one needs no archive.
stamp="$pkg $ver $sha"
if [[ -f "$cache/package" && "$(cat "$cache/package")" == "$stamp" && -f "$cache/vmlinuz" && -f "$cache/modules/order" ]]; then
  log "cached: $pkg $ver"
  exit 0
fi
apt_opts=() # this machine's apt sources and package lists
refresh_lists() {
  [[ "$(id -u)" == 0 ]] || return 1
  log "refreshing the package lists: apt-get update"
  apt-get update >&2
}
log "fetching $pkg $ver (pinned in kernels.lock)"
rm -rf "$cache/dl"
mkdir -p "$cache/dl"
deb=$(download_pinned "$cache/dl" "$pkg" "$ver" "$sha") || { rm -rf "$cache/dl"; exit 1; }
# Only a verified package replaces the cache: a failed fetch leaves the previous pin's kernel usable.
rm -rf "$cache/root" "$cache/modules" "$cache/package"
mkdir -p "$cache/root" "$cache/modules"
dpkg-deb -x "$deb" "$cache/root"
version=$(basename "$(ls -d "$cache"/root/lib/modules/*/ | head -n1)")
cp "$cache/root/boot/vmlinuz-$version" "$cache/vmlinuz"
# The package carries no modules.dep (its postinst runs depmod): make one for modprobe below.
depmod -b "$cache/root" "$version"
# Load order from modprobe itself (dependencies first), for vfio-pci, nvme and ext4 (a mounted
# namespace for giouring-info).
for m in vfio-pci nvme ext4; do
  modprobe --show-depends -d "$cache/root" -S "$version" "$m" | awk '$1 == "insmod" {print $2}'
done | awk '!seen[$0]++' > "$cache/modules/paths"
: > "$cache/modules/order"
while read -r path; do
  name=$(basename "$path")
  case "$name" in
    *.ko.xz) xz -dc "$path" > "$cache/modules/${name%.xz}"; name=${name%.xz} ;;
    *.ko.zst) zstd -qdc "$path" > "$cache/modules/${name%.zst}"; name=${name%.zst} ;;
    *) cp "$path" "$cache/modules/$name" ;;
  esac
  echo "$name" >> "$cache/modules/order"
done < "$cache/modules/paths"
echo "$version" > "$cache/version"
rm -rf "$cache/dl" "$cache/root"
echo "$stamp" > "$cache/package"
log "kernel $version; modules: $(tr '\n' ' ' < "$cache/modules/order")"
