#!/usr/bin/env bash
# Builds the guest kernel for the iommufd runs of the QEMU conformance suite into a cache:
#   build-kernel.sh CACHE_DIR
# leaves CACHE_DIR/bzImage, CACHE_DIR/version and CACHE_DIR/package.
#
# Why build: Debian's kernels (every flavour, every suite up to 7.3) leave CONFIG_IOMMUFD unset,
# so /dev/iommu, the VFIO device cdev and IOMMU_IOAS_MAP_FILE exist in none of them. This builds
# Debian's own kernel source (the newest linux-source-N in the archive's trixie-backports and
# trixie suites; 6.19 or later, for VFIO's dma-buf export) from x86_64 tinyconfig plus
# iommufd.config beside this script, everything built in: about 4 minutes on 2 cores.
#
# The archive: the suites are added in a private apt configuration under CACHE_DIR, pointing at
# the URI this machine's own Debian sources already use (nothing else is contacted, the system's
# apt configuration is untouched). Needs flex, bison, bc, libelf-dev, libssl-dev (scripts/deps.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:?usage: build-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
log() { printf 'qemu-kernel-build: %s\n' "$*" >&2; }

for tool in flex bison bc make gcc xz; do
  command -v "$tool" >/dev/null || { log "missing $tool (scripts/deps.sh installs the kernel build tools)"; exit 1; }
done
[[ -f /usr/include/gelf.h ]] ||
  { log "missing libelf headers (libelf-dev)"; exit 1; }

# ---- the archive URI this machine already uses --------------------------------------------------
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
uri=""
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f "$f" ]] || continue
  # deb822 stanzas: the URIs of the one whose Suites name this release's codename.
  uri=$(awk -v want="$codename" '
    /^[ \t]*$/ { if (u != "" && s) { print u; exit } u = ""; s = 0; next }
    /^URIs:/ { u = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) s = 1 }
    END { if (u != "" && s) print u }' "$f" | head -n1)
  [[ -n "$uri" ]] && break
done
if [[ -z "$uri" && -f /etc/apt/sources.list ]]; then
  uri=$(awk -v want="$codename" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++;
        if ($(i + 1) == want) { print $i; exit } }' /etc/apt/sources.list)
fi
[[ -n "$uri" ]] || { log "no Debian archive URI for '$codename' in this machine's apt sources"; exit 1; }

apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts" "$apt_dir/cache/archives/partial"
cat > "$apt_dir/parts/kernel.sources" <<EOF
Types: deb
URIs: $uri
Suites: trixie-backports trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$apt_dir/parts"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1
  -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 || { cat "$apt_dir/update.log" >&2; log "apt-get update failed"; exit 1; }

# The newest linux-source-N.M at 6.19 or later.
pkg=$(apt-cache "${apt_opts[@]}" pkgnames linux-source- | grep -E '^linux-source-[0-9]+\.[0-9]+$' |
  sort -t- -k3,3V | tail -n1)
[[ -n "$pkg" ]] || { log "no linux-source package in trixie or trixie-backports"; exit 1; }
series=${pkg#linux-source-}
if [[ "$(printf '%s\n6.19\n' "$series" | sort -V | head -n1)" != 6.19 ]]; then
  log "$pkg is older than 6.19 (no VFIO dma-buf export)"; exit 1
fi
ver=$(apt-cache "${apt_opts[@]}" policy "$pkg" | awk '/Candidate:/ {print $2}')
stamp="$pkg $ver $(sha256sum "$here/iommufd.config" | cut -c1-16)"
if [[ -f "$cache/package" && "$(cat "$cache/package")" == "$stamp" && -f "$cache/bzImage" ]]; then
  log "cached: $stamp"
  exit 0
fi

log "building $pkg $ver (tinyconfig + iommufd.config) with $(nproc) jobs"
start=$(date +%s)
src=$cache/src
rm -rf "$src" "$cache/dl"
mkdir -p "$src" "$cache/dl"
chmod 0777 "$cache/dl"
(cd "$cache/dl" && apt-get "${apt_opts[@]}" download "$pkg" >"$apt_dir/download.log" 2>&1) ||
  { cat "$apt_dir/download.log" >&2; log "apt-get download $pkg failed"; exit 1; }
dpkg-deb --fsys-tarfile "$cache"/dl/*.deb | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
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
