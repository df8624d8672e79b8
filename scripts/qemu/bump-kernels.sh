#!/usr/bin/env bash
# Moves the guest kernel pins of the QEMU conformance suite to the archive's current packages and
# rewrites kernels.lock beside this script:
#   bump-kernels.sh
# Run it as root on Debian 12 when a pin has left the archive (fetch-kernel.sh or build-kernel.sh
# says so) or to take a newer kernel on purpose; then run ctest -L qemu and commit the lock.
#
# debian12-image: the versioned package that linux-image-amd64 depends on in this machine's
#   bookworm suite (the point release, not bookworm-security; see the lock's header for why).
# iommufd-source: the newest linux-source-N in trixie-backports and trixie (6.19 or later, for
#   VFIO's dma-buf export), through the same private apt configuration build-kernel.sh uses.
# Both are downloaded (never installed) to compute their SHA-256, then deleted.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'qemu-kernel-bump: %s\n' "$*" >&2; }
. "$here/kernel-lib.sh"

[[ "$(id -u)" == 0 ]] || { log "run as root: the system's package lists are refreshed first"; exit 1; }
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ "$codename" == bookworm ]] ||
  { log "the Debian 12 image is resolved from this machine's bookworm lists; this is '$codename'"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gio-kernel-bump.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ---- debian12-image: bookworm's point release ----------------------------------------------------
log "apt-get update (this machine's sources)"
apt-get update >&2
apt_opts=()
# madison: "pkg | version | URI suite/component arch Packages"; the line from the bare codename.
meta_ver=$(apt-cache madison linux-image-amd64 | awk -F'|' -v want="$codename/main" '
  { gsub(/ /, "", $2); split($3, f, " ") } f[2] == want { print $2; exit }')
[[ -n "$meta_ver" ]] || { log "no linux-image-amd64 in $codename/main"; exit 1; }
read -r img_pkg img_ver < <(apt-cache show "linux-image-amd64=$meta_ver" |
  sed -n 's/^Depends: \(linux-image-[0-9][^ ,]*\) (= \([^)]*\)).*/\1 \2/p' | head -n1) ||
  { log "linux-image-amd64 $meta_ver depends on no exact linux-image-N version"; exit 1; }
has_version "$img_pkg" "$img_ver" || { log "$img_pkg=$img_ver is not in the package lists"; exit 1; }
mkdir "$work/image"
apt_download "$work/image" "$img_pkg" "$img_ver" ||
  { cat "$work/image/download.log" >&2; log "apt-get download $img_pkg=$img_ver failed"; exit 1; }
img_sha=$(sha256sum "$work"/image/*.deb | cut -d' ' -f1)
rm -rf "$work/image"
log "debian12-image: $img_pkg $img_ver $img_sha (linux-image-amd64 $meta_ver in $codename)"

# ---- iommufd-source: the newest linux-source-N in trixie-backports and trixie ---------------------
trixie_apt "$work/apt"
log "apt-get update (trixie, trixie-backports)"
trixie_apt_update
src_pkg=$(apt-cache "${apt_opts[@]}" pkgnames linux-source- | grep -E '^linux-source-[0-9]+\.[0-9]+$' |
  sort -t- -k3,3V | tail -n1)
[[ -n "$src_pkg" ]] || { log "no linux-source package in trixie or trixie-backports"; exit 1; }
series=${src_pkg#linux-source-}
if [[ "$(printf '%s\n6.19\n' "$series" | sort -V | head -n1)" != 6.19 ]]; then
  log "$src_pkg is older than 6.19 (no VFIO dma-buf export)"; exit 1
fi
src_ver=$(apt-cache "${apt_opts[@]}" policy "$src_pkg" | awk '/Candidate:/ {print $2}')
src_suite=$(apt-cache "${apt_opts[@]}" madison "$src_pkg" | awk -F'|' -v v="$src_ver" '
  { gsub(/ /, "", $2); split($3, f, " ") } $2 == v { sub(/\/.*/, "", f[2]); print f[2]; exit }')
mkdir "$work/source"
apt_download "$work/source" "$src_pkg" "$src_ver" ||
  { cat "$work/source/download.log" >&2; log "apt-get download $src_pkg=$src_ver failed"; exit 1; }
src_sha=$(sha256sum "$work"/source/*.deb | cut -d' ' -f1)
rm -rf "$work/source"
log "iommufd-source: $src_pkg $src_ver $src_sha ($src_suite)"

# ---- the lock -------------------------------------------------------------------------------------
cat > "$work/kernels.lock" <<EOF
# Guest kernels of the QEMU conformance suite (ctest label qemu, scripts/qemu/run.sh), pinned so
# that a Debian upload cannot change them with no change here. Written by
# scripts/qemu/bump-kernels.sh; run it (as root, on Debian 12) to move the pins, then run
# ctest -L qemu and commit this file. Do not edit the checksums by hand.
#
# One line per kernel, fields separated by blanks:
#   NAME     which kernel: debian12-image (scripts/qemu/fetch-kernel.sh, booted by qemu.conformance
#            and qemu.info) or iommufd-source (scripts/qemu/build-kernel.sh builds qemu.iommufd's
#            kernel from it)
#   PACKAGE  the exact Debian binary package (apt-get download PACKAGE=VERSION)
#   VERSION  its exact Debian version
#   SHA256   SHA-256 of the .deb, checked before it is unpacked
#
# debian12-image comes from bookworm itself (the point release), not bookworm-security: bookworm's
# kernel changes only at a point release, every two to three months, while bookworm-security takes
# a new kernel with each kernel security advisory, and the archive keeps only the newest version of
# a suite, so a security pin would leave the archive much sooner. A TCG guest that only runs the
# tests needs no security fixes.
# iommufd-source comes from the newest linux-source-N (6.19 or later) in trixie-backports or trixie;
# backports keep only their newest upload, so that pin goes stale with each new backported kernel.
#
# Resolved $(date -u +%Y-%m-%d): linux-image-amd64 $meta_ver in $codename; $src_pkg $src_ver in $src_suite.
debian12-image  $img_pkg  $img_ver  $img_sha
iommufd-source  $src_pkg  $src_ver  $src_sha
EOF
pins() { grep -v '^#' "$1"; }
if [[ -f "$lock_file" ]] && diff -q <(pins "$lock_file") <(pins "$work/kernels.lock") >/dev/null; then
  log "pins unchanged: $lock_file left as it is"
  exit 0
fi
[[ -f "$lock_file" ]] && { diff -u <(pins "$lock_file") <(pins "$work/kernels.lock") >&2 || true; }
cp "$work/kernels.lock" "$lock_file"
log "wrote $lock_file"
