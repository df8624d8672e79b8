# shellcheck shell=bash
# Sourced by fetch-kernel.sh, build-kernel.sh and bump-kernels.sh (which set $here to this folder
# and define log()): the pins in kernels.lock, the private apt configuration for the trixie suites,
# and the download of exactly one pinned package, checked against its pinned SHA-256.

lock_file=${here:?set by the script that sources kernel-lib.sh}/kernels.lock
# How to move a pin, said after every failure about one.
log_bump() {
  log "  to move the pins: bash scripts/qemu/bump-kernels.sh as root (it resolves the current"
  log "  versions, downloads them, checksums them and rewrites scripts/qemu/kernels.lock), then"
  log "  ctest --test-dir build -L qemu, and commit the lock"
}

# lock_entry NAME: the pin named NAME as "package version sha256".
lock_entry() {
  local line n
  [[ -f "$lock_file" ]] || { log "no lock file $lock_file"; log_bump; return 1; }
  n=$(awk -v want="$1" '$1 == want' "$lock_file" | wc -l)
  # (mawk, Debian's awk, has no {64} intervals.)
  line=$(awk -v want="$1" '$1 == want && NF == 4 && length($4) == 64 && $4 ~ /^[0-9a-f]+$/ {
    print $2, $3, $4 }' "$lock_file")
  if [[ "$n" != 1 || -z "$line" ]]; then
    log "$lock_file needs exactly one line '$1 PACKAGE VERSION SHA256' (SHA-256 in lower-case hex)"
    log_bump
    return 1
  fi
  echo "$line"
}

# The URI of this machine's Debian archive: the URIs of the apt source whose Suites name this
# release's codename (deb822 first, then a one-line sources.list). Nothing else is contacted.
archive_uri() {
  local codename uri="" f
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
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
  [[ -n "$uri" ]] || { log "no Debian archive URI for '$codename' in this machine's apt sources"; return 1; }
  echo "$uri"
}

# trixie_apt DIR: a private apt configuration under DIR naming the trixie-backports and trixie
# suites at this machine's archive URI (the system's apt configuration is untouched); sets
# apt_opts for apt-get and apt-cache. trixie_apt_update fetches its package lists.
trixie_apt() {
  local dir=$1 uri
  uri=$(archive_uri) || return 1
  mkdir -p "$dir/lists/partial" "$dir/parts" "$dir/cache/archives/partial"
  cat > "$dir/parts/kernel.sources" <<EOF
Types: deb
URIs: $uri
Suites: trixie-backports trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt_opts=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$dir/parts"
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  apt_dir=$dir
}
trixie_apt_update() {
  apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
    { cat "$apt_dir/update.log" >&2; log "apt-get update (trixie, trixie-backports) failed"; return 1; }
}

# has_version PACKAGE VERSION: whether the package lists (apt_opts) offer exactly that version.
has_version() {
  apt-cache "${apt_opts[@]}" madison "$1" 2>/dev/null | awk -F'|' -v v="$2" '
    { gsub(/ /, "", $2) } $2 == v { found = 1 } END { exit !found }'
}

# apt_download DIR PACKAGE VERSION: apt-get download PACKAGE=VERSION (apt_opts) into the empty
# folder DIR, its output in DIR/download.log.
apt_download() {
  chmod 0777 "$1" # apt-get download drops privileges to _apt where it can
  (cd "$1" && apt-get "${apt_opts[@]}" download "$2=$3" >"$1/download.log" 2>&1)
}

# download_pinned DIR PACKAGE VERSION SHA256: downloads PACKAGE=VERSION into the empty folder DIR
# with apt_opts, checks its SHA-256 against the pin and prints the .deb's path. Nothing is
# unpacked before the check. refresh_lists (defined by the caller) re-reads the package lists once
# where the pin is missing or its download fails: stale lists name files the archive has dropped.
download_pinned() {
  local dir=$1 pkg=$2 ver=$3 want=$4 refreshed=0 deb got
  if ! has_version "$pkg" "$ver"; then
    refresh_lists && refreshed=1
    if ! has_version "$pkg" "$ver"; then
      log "the pinned $pkg=$ver (scripts/qemu/kernels.lock) is not in the archive's package lists:"
      log "  Debian drops superseded versions (at point releases, and at each new backports or"
      log "  security upload), so the pin is stale."
      ((refreshed)) || log "  (the package lists were not refreshed: as root, apt-get update first)"
      log_bump
      return 1
    fi
  fi
  until apt_download "$dir" "$pkg" "$ver"; do
    if ((refreshed == 0)) && refresh_lists; then
      refreshed=1
      if has_version "$pkg" "$ver"; then continue; fi
      log "the pinned $pkg=$ver (scripts/qemu/kernels.lock) has left the archive: Debian drops"
      log "  superseded versions (at point releases, and at each new backports or security upload)."
      log_bump
      return 1
    fi
    cat "$dir/download.log" >&2
    log "apt-get download $pkg=$ver failed; if the archive no longer has that version:"
    log_bump
    return 1
  done
  deb=$(ls "$dir"/*.deb)
  got=$(sha256sum "$deb" | cut -d' ' -f1)
  if [[ "$got" != "$want" ]]; then
    log "SHA-256 mismatch for $pkg=$ver: the download has"
    log "  $got, scripts/qemu/kernels.lock pins"
    log "  $want; nothing was unpacked."
    log "  A corrupt or altered download, or an edited lock: retry; only if the archive really"
    log "  publishes other bytes under that version, move the pin deliberately and review the diff:"
    log_bump
    rm -f "$deb"
    return 1
  fi
  echo "$deb"
}
