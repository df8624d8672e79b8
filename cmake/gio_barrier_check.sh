#!/usr/bin/env bash
# ctest arch.barriers: disassembles the probe library (tests/arch/barrier_probe.c) and checks that
# each of the host's ordering primitives, and the ring's doorbell paths, emit the barrier
# giouring/ring/ordering.h argues for this architecture:
#   aarch64: gio_fence_release() is `dsb sy`; a release store is `dmb osh` then `stlr`/`stlrh`;
#            gio_mmio_write32() is one `str wN, [xM]`; in the ring's SQ and CQ doorbell paths a
#            `dsb sy` comes before the MMIO store with no other store between, and a `dmb osh`
#            before the shadow doorbell's `stlr`; an acquire load is `ldar`/`ldarh` then `dmb oshld`
#            (the word may be a device's: a CQE's status, a GPU's shadow doorbell).
#   x86-64:  no fence instruction anywhere; gio_fence_release() is empty, a release store, an
#            acquire load and an MMIO store one `mov` each (what the C11 builtins compile to: unchanged by ordering.h).
#   bash gio_barrier_check.sh OBJDUMP ARCH LIBRARY
set -euo pipefail
objdump=$1 arch=$2 lib=$3

dis=$("$objdump" -d --no-show-raw-insn "$lib")

# The instructions of one function, one per line ("mnemonic operands"), without objdump's
# comments ("// ..." on aarch64, "# ..." on x86; an aarch64 immediate "#0x1" stays) and without the
# alignment padding after its end.
insns() {
  awk -v fn="$1" '
    $0 ~ "^[0-9a-f]+ <" fn ">:$" { on = 1; next }
    on && /^$/ { exit }
    on && /^ *[0-9a-f]+:\t/ {
      sub(/^ *[0-9a-f]+:\t/, ""); sub(/[ \t]*\/\/.*$/, ""); sub(/[ \t]+# .*$/, "")
      gsub(/\t/, " "); gsub(/  +/, " "); sub(/ +$/, "")
      line[n++] = $0
    }
    END {
      last = n - 1
      while (last >= 0 && line[last] ~ /^(nop|xchg %ax,%ax|data16|cs nop|int3)/) last--
      for (i = 0; i <= last; i++) print line[i]
    }' <<<"$dis"
}

failures=0
fail() { printf 'arch.barriers: FAIL: %s\n' "$*"; failures=$((failures + 1)); }
pass() { printf 'arch.barriers: ok: %s\n' "$*"; }

# Whether function $1 has barrier $2 whose first later store (or call) matches the regex $3.
barrier_then() {
  insns "$1" | awk -v bar="$2" -v want="$3" '
    $0 == bar { armed = 1; next }
    armed && ($1 ~ /^st/ || $1 == "bl") { if ($0 ~ want) found = 1; armed = 0 }
    END { exit !found }'
}

expect_body() { # function, expected instructions (regexes, one per line, ret excluded)
  local fn=$1 got want
  shift
  got=$(insns "$fn" | grep -v -E '^(ret|endbr64|nop|bti)' || true)
  want=$(printf '%s\n' "$@")
  if [[ -z "$want" && -z "$got" ]]; then pass "$fn: no instruction but ret"; return; fi
  if [[ $(wc -l <<<"$got") -eq $# ]] && paste <(printf '%s\n' "$got") <(printf '%s\n' "$want") |
       awk -F'\t' '$1 !~ "^" $2 "$" { bad = 1 } END { exit bad }'; then
    pass "$fn: $(tr '\n' ';' <<<"$got")"
  else
    fail "$fn: expected [$(tr '\n' ';' <<<"$want")], got [$(tr '\n' ';' <<<"$got")]"
  fi
}

for fn in gio_probe_fence_release gio_probe_store_release gio_probe_store_release16 gio_probe_mmio_write32 \
          gio_probe_load_acquire gio_probe_load_acquire16 gio_probe_qp_publish gio_probe_qp_reap; do
  [[ -n "$(insns "$fn")" ]] || fail "$fn: not found in $lib"
done

case "$arch" in
aarch64 | arm64)
  expect_body gio_probe_fence_release 'dsb sy'
  expect_body gio_probe_mmio_write32 'str (w[0-9]+|wzr), \[x[0-9]+\]'
  expect_body gio_probe_load_acquire 'ldar w[0-9]+, \[x[0-9]+\]' 'dmb oshld'
  # A 16-bit result may be zero-extended after (GCC does): the load, then the barrier, first.
  if insns gio_probe_load_acquire16 | head -n 2 | paste -sd';' | grep -qE '^ldarh w[0-9]+, \[x[0-9]+\];dmb oshld$'; then
    pass "gio_probe_load_acquire16: ldarh, then dmb oshld"
  else fail "gio_probe_load_acquire16: not ldarh then dmb oshld"; fi
  mmio='^str (w[0-9]+|wzr), \[x[0-9]+\]$'
  shadow='^stlr (w[0-9]+|wzr), \[x[0-9]+\]$'
  # A 16-bit argument may first be zero-extended (GCC does, Clang does not): no exact body.
  for p in "gio_probe_store_release:$shadow" "gio_probe_store_release16:^stlrh (w[0-9]+|wzr), \[x[0-9]+\]$"; do
    if barrier_then "${p%%:*}" 'dmb osh' "${p#*:}"; then pass "${p%%:*}: dmb osh, then the release store"
    else fail "${p%%:*}: no dmb osh directly before the release store"; fi
  done
  for fn in gio_probe_qp_publish gio_probe_qp_reap; do
    if barrier_then "$fn" 'dsb sy' "$mmio"; then pass "$fn: dsb sy, then the MMIO doorbell str"
    else fail "$fn: no dsb sy directly before a str to a doorbell"; fi
    if barrier_then "$fn" 'dmb osh' "$shadow"; then pass "$fn: dmb osh, then the shadow doorbell stlr"
    else fail "$fn: no dmb osh directly before an stlr"; fi
  done
  ;;
x86_64 | AMD64 | amd64)
  expect_body gio_probe_fence_release
  expect_body gio_probe_store_release 'mov %e[a-z0-9]+,\(%r[a-z0-9]+\)'
  expect_body gio_probe_store_release16 'mov %[a-z0-9]+,\(%r[a-z0-9]+\)'
  expect_body gio_probe_mmio_write32 'mov %e[a-z0-9]+,\(%r[a-z0-9]+\)'
  expect_body gio_probe_load_acquire 'mov \(%r[a-z0-9]+\),%eax'
  expect_body gio_probe_load_acquire16 'movz?wl? \(%r[a-z0-9]+\),%e?ax'
  for fn in gio_probe_qp_publish gio_probe_qp_reap; do
    if insns "$fn" | grep -qE '^(mfence|sfence|lfence)'; then fail "$fn: a fence instruction"
    else pass "$fn: no fence instruction"; fi
  done
  ;;
*)
  echo "arch.barriers: no expectations for $arch"
  exit 1
  ;;
esac

if ((failures)); then
  printf '%s\n' "$dis"
  echo "arch.barriers: $failures check(s) failed"
  exit 1
fi
echo "arch.barriers: all checks passed for $arch"
