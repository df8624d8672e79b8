#!/usr/bin/env bash
# Fetches the Debian guest kernel for the QEMU conformance suite into a cache directory:
#   fetch-kernel.sh CACHE_DIR
# leaves CACHE_DIR/vmlinuz, CACHE_DIR/version and CACHE_DIR/modules/ (vfio, nvme and ext4 modules,
# uncompressed, in load order in CACHE_DIR/modules/order). linux-image-amd64 names a versioned
# package whose number changes with security updates (old ones leave the mirror), so it is
# resolved here at run time; the package is downloaded and unpacked, never installed.
set -euo pipefail
cache=${1:?usage: fetch-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

log() { printf 'qemu-kernel: %s\n' "$*" >&2; }

resolve() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1; }
pkg=$(resolve)
if [[ -z "$pkg" && "$(id -u)" == 0 ]]; then
  log "package lists lack linux-image-amd64: apt-get update"
  apt-get update >&2 || true
  pkg=$(resolve)
fi
if [[ -z "$pkg" ]]; then
  log "apt-cache cannot resolve linux-image-amd64; run apt-get update (scripts/deps.sh does)"
  exit 1
fi
if [[ -f "$cache/package" && "$(cat "$cache/package")" == "$pkg" && -f "$cache/vmlinuz" && -f "$cache/modules/order" ]]; then
  log "cached: $pkg"
  exit 0
fi
log "fetching $pkg"
rm -rf "$cache/dl" "$cache/root" "$cache/modules"
mkdir -p "$cache/dl" "$cache/root" "$cache/modules"
chmod 0777 "$cache/dl" # apt-get download drops privileges to _apt where it can
(cd "$cache/dl" && apt-get download "$pkg" >&2)
dpkg-deb -x "$cache"/dl/*.deb "$cache/root"
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
echo "$pkg" > "$cache/package"
log "kernel $version; modules: $(tr '\n' ' ' < "$cache/modules/order")"
