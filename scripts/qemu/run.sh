#!/usr/bin/env bash
# QEMU conformance runs (ctest label qemu): boots a Debian kernel under QEMU TCG with a virtual
# Intel IOMMU and emulated NVMe controllers, runs the project's static test programs in a busybox
# initramfs and judges from the serial log. Both guest kernels (Debian 12's image, and the source
# the iommufd kernel is built from) are pinned by version and SHA-256 in kernels.lock beside this
# script; bump-kernels.sh moves the pins.
#
#   run.sh conformance BUILD_DIR   the nvme-pci suite on two controllers bound to vfio-pci, then a
#                                  canary DMA to an unmapped IOVA that must show up as a fault
#   run.sh info BUILD_DIR          giouring-info with no kernel-bound controller (must fail), then
#                                  with the nvme driver loaded and a namespace mounted
#   run.sh iommufd BUILD_DIR       the suite again through iommufd (device cdev, /dev/iommu) on a
#                                  kernel built from Debian's source (scripts/qemu/build-kernel.sh:
#                                  Debian's own kernels lack IOMMUFD), files mapped with
#                                  IOMMU_IOAS_MAP_FILE, and a peer controller's BAR imported as a
#                                  VFIO-exported dma-buf; then the canary
#   run.sh kv_store BUILD_DIR      the KV store over both controllers (tests/qemu/kv_store.c): each
#                                  shape put, closed, opened with the controllers the other way
#                                  round and read back, each device read raw; then a second boot on
#                                  the same drive files opens the last store again, and then kills
#                                  a writer on a new store at random points, 10 to 20 times in at
#                                  most 60 s, every reopen checked byte for byte
#   run.sh staged BUILD_DIR        the staged path's host half (tests/qemu/staged.c): a plan over
#                                  both controllers whose devices are staged, chunks saved and
#                                  loaded through slot rings registered through VFIO, every byte
#                                  compared, a read past the namespace reported with its status
#   run.sh sriov BUILD_DIR         one SSD shared with the kernel (tests/qemu/sriov.c): the PF on the
#                                  kernel's nvme driver with ext4 on its namespace, two SR-IOV VFs
#                                  set up with giouring-sriov (dry run, the safety rule, an offline
#                                  VF refused), each with a namespace of its own and a KV store in
#                                  a process of its own while ext4 takes fsync'd writes, one of
#                                  them killed; isolation both ways, e2fsck, then undo
#   run.sh bench BUILD_DIR [SECONDS]  commands/s at QD1 and QD32 (TCG: for regressions only)
#
# Exit 0 pass, 1 fail, 77 skipped (QEMU or busybox-static missing: scripts/deps.sh installs them,
# GIO_QEMU_SKIP=1 skips on purpose). Environment: GIO_QEMU_CACHE (kernel cache, default
# BUILD_DIR/qemu-cache), GIO_QEMU_TIMEOUT (outer timeout of each boot, default 240 s),
# GIO_QEMU_KEEP=1 keeps the work directory, GIO_QEMU_REQUIRED=1 turns skips into failures,
# GIO_QEMU_KILL_SEED (a number) repeats the kv_store kill rounds of an earlier log's seed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:?usage: run.sh conformance|iommufd|info|kv_store|staged|sriov|bench BUILD_DIR}
build=$(cd "${2:?usage: run.sh MODE BUILD_DIR}" && pwd)
bench_seconds=${3:-5}

log() { printf 'qemu-%s: %s\n' "$mode" "$*" >&2; }
# CI sets GIO_QEMU_REQUIRED=1: there a missing tool is a failure, not a skip.
skip() {
  if [[ "${GIO_QEMU_REQUIRED:-0}" == 1 ]]; then log "FAIL (GIO_QEMU_REQUIRED=1): $*"; exit 1; fi
  log "SKIP: $*"; exit 77
}

[[ "${GIO_QEMU_SKIP:-0}" == 1 ]] && skip "GIO_QEMU_SKIP=1"
qemu=$(command -v qemu-system-x86_64 || true)
[[ -n "$qemu" ]] || skip "qemu-system-x86_64 not found (GIO_EXTRA_PACKAGES or scripts/deps.sh installs qemu-system-x86)"
busybox=/bin/busybox
# The guest has no libc: busybox must be the static one (busybox-static).
[[ -x "$busybox" ]] && { ldd "$busybox" 2>&1 || true; } | grep -q 'not a dynamic' || skip "a static busybox is needed (busybox-static)"
command -v cpio >/dev/null || skip "cpio not found"
if [[ "$mode" == sriov ]]; then
  # e2fsprogs' own mke2fs and e2fsck: busybox's applets make no ext4 and check nothing.
  mke2fs=$(PATH=/usr/sbin:/sbin:$PATH command -v mke2fs || true)
  e2fsck=$(PATH=/usr/sbin:/sbin:$PATH command -v e2fsck || true)
  [[ -n "$mke2fs" && -n "$e2fsck" ]] || skip "mke2fs and e2fsck not found (e2fsprogs)"
  [[ -x "$build/tools/giouring-sriov" ]] || skip "no $build/tools/giouring-sriov (built where libnvme is found)"
fi
bios=()
[[ -f /usr/share/qemu/qboot.rom ]] && bios=(-bios /usr/share/qemu/qboot.rom) # ~1 s faster than SeaBIOS

cache=${GIO_QEMU_CACHE:-$build/qemu-cache}
if [[ "$mode" == iommufd ]]; then
  bash "$here/build-kernel.sh" "$cache/iommufd" || { log "FAIL: the iommufd guest kernel could not be built"; exit 1; }
  kernel=$cache/iommufd/bzImage
  kernel_version=$(cat "$cache/iommufd/version")
else
  bash "$here/fetch-kernel.sh" "$cache"
  kernel=$cache/vmlinuz
  kernel_version=$(cat "$cache/version")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gio-qemu-$mode.XXXXXX")
cleanup() { [[ "${GIO_QEMU_KEEP:-0}" == 1 ]] && log "kept $work" || rm -rf "$work"; }
trap cleanup EXIT

# ---- initramfs -------------------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,mnt,modules,lib64,lib/x86_64-linux-gnu}
cp "$busybox" "$root/bin/busybox"
# The iommufd kernel has everything built in: no modules.
[[ "$mode" == iommufd ]] || cp "$cache"/modules/*.ko "$cache/modules/order" "$root/modules/"
# copy_dynamic PROGRAM DIR: a dynamic program into DIR of the guest, its libraries and the
# loader along (the guest has no libc of its own).
copy_dynamic() {
  mkdir -p "$root$2"
  cp "$1" "$root$2/"
  ldd "$1" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}
case "$mode" in
  conformance|iommufd|bench)
    cp "$build/tests/gio-qemu-conformance" "$root/bin/" ;;
  kv_store)
    cp "$build/tests/gio-qemu-kv-store" "$root/bin/" ;;
  staged)
    cp "$build/tests/gio-qemu-staged" "$root/bin/" ;;
  info)
    copy_dynamic "$build/tools/giouring-info" /bin ;;
  sriov)
    cp "$build/tests/gio-qemu-sriov" "$root/bin/"
    copy_dynamic "$build/tools/giouring-info" /bin
    copy_dynamic "$build/tools/giouring-sriov" /bin
    # Called by full path: busybox's applets of the same names would win on PATH.
    copy_dynamic "$mke2fs" /e2fs
    copy_dynamic "$e2fsck" /e2fs ;;
  *) log "unknown mode $mode"; exit 2 ;;
esac

cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
load() { # modules named in order up to and including $1 (none where the kernel has them built in)
  [ -f /modules/order ] || return 0
  for m in $(cat /modules/order); do
    insmod /modules/$m 2>/dev/null || grep -q "^$(echo ${m%.ko} | tr - _) " /proc/modules || echo "note: insmod $m failed"
    [ "$m" = "$1" ] && break
  done
}
nvme_bdfs() { # NVMe controllers by class code
  for d in /sys/bus/pci/devices/*; do [ "$(cat $d/class)" = 0x010802 ] && basename $d; done
}
to_vfio() {
  echo vfio-pci > /sys/bus/pci/devices/$1/driver_override
  echo $1 > /sys/bus/pci/drivers_probe
  [ -e /dev/vfio/$(basename $(readlink /sys/bus/pci/devices/$1/iommu_group)) ] || echo "FAIL bind $1 to vfio-pci"
}
dump_faults() {
  echo "==DMESG $1=="
  dmesg -c | grep -iE 'DMAR|fault|iommu' || true
  echo "==DMESG-END=="
}
echo "==GUEST-UP== $(uname -r) $(nproc) cpus"
. /mode.sh
echo "==GUEST-DONE=="
poweroff -f
INIT
chmod +x "$root/init"

case "$mode" in
  conformance) cat > "$root/mode.sh" <<'M'
load vfio-pci.ko
dump_faults boot
for b in $(nvme_bdfs); do to_vfio $b; done
gio-qemu-conformance test 0000:00:04.0 512 524288
gio-qemu-conformance test 0000:00:05.0 4096 4194304
dump_faults tests
echo "==CANARY=="
gio-qemu-conformance canary 0000:00:04.0
dump_faults canary
M
  ;;
  iommufd) cat > "$root/mode.sh" <<'M'
dump_faults boot
for b in $(nvme_bdfs); do to_vfio $b; done
echo "iommufd: /dev/iommu $( [ -c /dev/iommu ] && echo present || echo absent), cdevs: $(ls /dev/vfio/devices 2>/dev/null | tr '\n' ' ')"
gio-qemu-conformance test 0000:00:04.0 512 524288 iommufd
gio-qemu-conformance test 0000:00:05.0 4096 4194304 auto
gio-qemu-conformance p2p 0000:00:04.0 0000:00:05.0
dump_faults tests
echo "==CANARY=="
gio-qemu-conformance canary 0000:00:04.0 iommufd
dump_faults canary
M
  ;;
  # Boot 1 formats and fills the stores; boot 2 (gio_boot=2 on the kernel command line) finds
  # the last one on the same drive files, after QEMU and its controllers were restarted, then
  # formats the drives again for the kill rounds (they need the reopen's store no more).
  kv_store)
    seed=${GIO_QEMU_KILL_SEED:-}
    [[ -z "$seed" || "$seed" =~ ^[0-9]+$ ]] || { log "GIO_QEMU_KILL_SEED=$seed: want a decimal number"; exit 2; }
    { [[ -z "$seed" ]] || echo "export GIO_QEMU_KILL_SEED=$seed"; cat <<'M'; } > "$root/mode.sh"
load vfio-pci.ko
dump_faults boot
for b in $(nvme_bdfs); do to_vfio $b; done
if grep -q 'gio_boot=2' /proc/cmdline; then
  gio-qemu-kv-store reopen 0000:00:04.0 0000:00:05.0; echo "==KV-RC reopen $?=="
  gio-qemu-kv-store kill 0000:00:04.0 0000:00:05.0; echo "==KV-RC kill $?=="
else
  gio-qemu-kv-store run 0000:00:04.0 0000:00:05.0; echo "==KV-RC run $?=="
fi
dump_faults kv_store
M
  ;;
  staged) cat > "$root/mode.sh" <<'M'
load vfio-pci.ko
dump_faults boot
for b in $(nvme_bdfs); do to_vfio $b; done
gio-qemu-staged 0000:00:04.0 0000:00:05.0; echo "==STAGED-RC $?=="
dump_faults staged
M
  ;;
  # One SSD (a subsystem of one PF with two VFs, three namespaces the guest attaches): namespace
  # 1 to the PF for the kernel's ext4, 2 to VF 1 and 3 to VF 2 for giouring (giouring-sriov).
  sriov) cat > "$root/mode.sh" <<'M'
PF=0000:00:04.0
pfs=/sys/bus/pci/devices/$PF
wait_for() { # PATH: up to 10 s
  i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 100 ] && { echo "FAIL $1 did not appear"; return 1; }; sleep 0.1; done
}
load ext4.ko # vfio-pci, then nvme (which takes the PF), then ext4
wait_for /dev/nvme0 && wait_for $pfs/sriov_numvfs
dump_faults boot
echo "==INFO-BEFORE=="; giouring-info; echo "==INFO-BEFORE-RC $?=="
gio-qemu-sriov attach /dev/nvme0 1
echo 1 > /sys/class/nvme/nvme0/rescan_controller
wait_for /dev/nvme0n1
/e2fs/mke2fs -q -t ext4 /dev/nvme0n1 && mount -t ext4 /dev/nvme0n1 /mnt || echo "FAIL ext4 on the PF's namespace"
echo "==DRY-SETUP=="; giouring-sriov setup $PF 1 2 --dry-run; echo "==DRY-SETUP-RC $?=="
echo "after the dry run: sriov_numvfs $(cat $pfs/sriov_numvfs), autoprobe $(cat $pfs/sriov_drivers_autoprobe)"
echo "==SAFETY=="; giouring-sriov setup $PF 1 1; echo "==SAFETY-RC $?=="
# VF 1 enabled and bound by hand, its secondary controller still offline: refused, and why.
echo 0 > $pfs/sriov_drivers_autoprobe
echo 2 > $pfs/sriov_numvfs
VF1=$(basename $(readlink $pfs/virtfn0)); VF2=$(basename $(readlink $pfs/virtfn1))
echo "VFs: $VF1 (IOMMU group $(basename $(readlink /sys/bus/pci/devices/$VF1/iommu_group))), $VF2 (IOMMU group $(basename $(readlink /sys/bus/pci/devices/$VF2/iommu_group)))"
to_vfio $VF1
gio-qemu-sriov refuse-offline $VF1 2
echo "==SETUP-1=="; giouring-sriov setup $PF 1 2; echo "==SETUP-1-RC $?=="
echo "==SETUP-2=="; giouring-sriov setup $PF 2 3 --queues 2; echo "==SETUP-2-RC $?=="
echo "==INFO=="; giouring-info; echo "==INFO-RC $?=="
# Isolation: the PF's kernel sees only namespace 1; a VF opens only its own.
echo 1 > /sys/class/nvme/nvme0/rescan_controller; sleep 1
gio-qemu-sriov pf-ns /dev/nvme0 1
for n in /dev/nvme0n2 /dev/nvme0n3; do [ -e $n ] && echo "FAIL the PF's kernel has $n, a VF's namespace"; done
gio-qemu-sriov refuse-ns $VF1 1
gio-qemu-sriov refuse-ns $VF1 3
gio-qemu-sriov queues $VF1 2 3
gio-qemu-sriov queues $VF2 3 1
# At once: ext4 on the PF takes fsync'd writes; a KV store on each VF, in a process of its own.
rm -f /tmp/stop; echo 0 > /tmp/ext4-files
( n=0; while [ ! -e /tmp/stop ]; do
    dd if=/dev/urandom of=/mnt/f$n bs=4k count=16 conv=fsync 2>/dev/null || echo "FAIL ext4 write of f$n"
    # Renamed into place: a reader of a file being rewritten with > may find it empty (a CI run
    # read "" after 40 files, so during-stores came out -40).
    md5sum /mnt/f$n >> /tmp/sums; n=$((n+1)); echo $n > /tmp/ext4-files.new; mv /tmp/ext4-files.new /tmp/ext4-files
  done ) &
ext4=$!
sleep 1
before=$(cat /tmp/ext4-files)
gio-qemu-sriov pair $VF1 2 $VF2 3 8
after=$(cat /tmp/ext4-files)
touch /tmp/stop; wait $ext4
echo "EXT4 files=$(cat /tmp/ext4-files) during-stores=$((after - before))"
umount /mnt
/e2fs/e2fsck -fn /dev/nvme0n1; echo "==E2FSCK-RC $?=="
mount -t ext4 -o ro /dev/nvme0n1 /mnt && md5sum -c -s /tmp/sums; echo "==EXT4-SUMS-RC $?=="
umount /mnt
dump_faults sriov
echo "==DRY-UNDO=="; giouring-sriov undo $PF 1 2 --dry-run; echo "==DRY-UNDO-RC $?=="
echo "==UNDO-1=="; giouring-sriov undo $PF 1 2; echo "==UNDO-1-RC $?=="
echo "==UNDO-2=="; giouring-sriov undo $PF 2 3; echo "==UNDO-2-RC $?=="
echo "after undo: sriov_numvfs $(cat $pfs/sriov_numvfs), autoprobe $(cat $pfs/sriov_drivers_autoprobe)"
[ -e /sys/bus/pci/devices/$VF1 ] && echo "FAIL $VF1 is still there after undo"
echo "==INFO-AFTER=="; giouring-info; echo "==INFO-AFTER-RC $?=="
dump_faults undo
M
  ;;
  bench) cat > "$root/mode.sh" <<M
load vfio-pci.ko
for b in \$(nvme_bdfs); do to_vfio \$b; done
gio-qemu-conformance bench 0000:00:04.0 $bench_seconds
dump_faults bench
M
  ;;
  info) cat > "$root/mode.sh" <<'M'
echo "==INFO-NONE=="
giouring-info; echo "==INFO-NONE-RC $?=="
load ext4.ko
i=0; while [ ! -e /dev/nvme0n1 ] || [ ! -e /dev/nvme1n1 ]; do i=$((i+1)); [ $i -gt 100 ] && break; sleep 0.1; done
mke2fs -q -b 4096 /dev/nvme1n1 && mount -t ext2 /dev/nvme1n1 /mnt
echo "==INFO-KERNEL=="
giouring-info; echo "==INFO-KERNEL-RC $?=="
dump_faults info
M
  ;;
esac
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$work/initrd.gz"

# ---- disks and boot ---------------------------------------------------------------------------
qlog=$work/qemu.log
timeout_s=${GIO_QEMU_TIMEOUT:-240}
if [[ "$mode" == sriov ]]; then
  # One PF with two VFs in a subsystem; its flexible queues and interrupts are what the VFs can
  # be given (QEMU wants at least 2 queues a VF). Namespaces shared and attached to no one: the
  # guest decides who sees which.
  truncate -s 64M "$work/ns1.img"
  truncate -s 32M "$work/ns2.img" "$work/ns3.img"
  devices=(-device nvme-subsys,id=subsys0,nqn=gio-sriov
           -device nvme,id=nvme0,serial=gio-sriov-pf,subsys=subsys0,bus=pcie.0,addr=0x4,sriov_max_vfs=2,sriov_vq_flexible=8,sriov_vi_flexible=4,sriov_max_vq_per_vf=4,sriov_max_vi_per_vf=2)
  for n in 1 2 3; do
    devices+=(-drive file="$work/ns$n.img",if=none,id=ns$n,format=raw
              -device nvme-ns,drive=ns$n,bus=nvme0,nsid=$n,shared=on,detached=on)
  done
else
  truncate -s 64M "$work/nvme1.img" "$work/nvme2.img"
  # The second controller has a 1 MiB controller memory buffer (BAR2): the peer memory the
  # iommufd run imports as a dma-buf.
  ctrl2_extra=""
  [[ "$mode" == iommufd ]] && ctrl2_extra=",cmb_size_mb=1"
  devices=(-drive file="$work/nvme1.img",if=none,id=d1,format=raw
           -device nvme,serial=gio-ctrl-1,drive=d1,bus=pcie.0,addr=0x4
           -drive file="$work/nvme2.img",if=none,id=d2,format=raw
           -device nvme,serial=gio-ctrl-2,drive=d2,bus=pcie.0,addr=0x5,mdts=10,logical_block_size=4096,physical_block_size=4096$ctrl2_extra)
fi
elapsed=0 boots=0 timed_out=0
# boot [KERNEL_ARG]: one boot on the drive files above (which keep what earlier boots wrote);
# its serial log is appended to $qlog.txt.
boot() {
  local start qrc
  log "booting $kernel_version under TCG (timeout ${timeout_s} s)${1:+, $1}"
  start=$(date +%s)
  set +e
  timeout --kill-after=10 "$timeout_s" "$qemu" -M q35 -accel tcg -cpu max -smp 2 -m 1024 "${bios[@]}" \
    -device intel-iommu,intremap=on \
    -kernel "$kernel" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 intel_iommu=on iommu=nopt quiet panic=-1${1:+ $1}" \
    "${devices[@]}" \
    -display none -serial stdio -monitor none -no-reboot >"$qlog" 2>&1
  qrc=$?
  set -e
  boots=$((boots + 1))
  elapsed=$((elapsed + $(date +%s) - start))
  tr -d '\r' < "$qlog" | tee -a "$qlog.txt"
  log "QEMU exit $qrc after $(($(date +%s) - start)) s"
  # Init prints ==GUEST-UP== first: without it the kernel never ran the guest's script (with
  # quiet, a guest that resets early leaves no line at all).
  grep -q '^==GUEST-UP==' "$qlog" || log "boot $boots: no ==GUEST-UP== line: the kernel did not reach init ($(wc -c < "$qlog") bytes of serial output)"
  ((qrc == 124 || qrc == 137)) && timed_out=1
  return 0
}
: > "$qlog.txt"
boot
if [[ "$mode" == kv_store ]]; then boot gio_boot=2; fi

# ---- judging ----------------------------------------------------------------------------------
fail=0
die() { log "FAIL: $*"; fail=1; }
((timed_out)) && die "QEMU did not finish within ${timeout_s} s"
done_n=$(grep -c '^==GUEST-DONE==' "$qlog.txt" || true)
((done_n == boots)) || die "the guest reached the end of its script in $done_n of $boots boot(s)"
# IOMMU faults: the guest kernel's DMAR lines and QEMU's vtd messages (QEMU completes an unmapped
# DMA with SUCCESS, so the logs are the only place a fault shows).
fault_re='DMAR:.*([Ff]ault|DMA (Read|Write))|vtd_|detected translation failure'
before=$qlog.txt
if [[ "$mode" == conformance || "$mode" == iommufd ]]; then
  before=$work/before-canary
  sed '/^==CANARY==/,$d' "$qlog.txt" > "$before"
  after=$(sed -n '/^==CANARY==/,$p' "$qlog.txt" | grep -cE "$fault_re" || true)
  ((after > 0)) || die "the canary's unmapped DMA left no fault in the logs: the fault scan is blind"
  log "canary: $after fault line(s) after the canary, as required"
fi
faults=$(grep -cE "$fault_re" "$before" || true)
((faults == 0)) || { grep -E "$fault_re" "$before" >&2; die "$faults IOMMU fault line(s)"; }
grep -E '^FAIL' "$qlog.txt" >&2 && die "guest checks failed"

case "$mode" in
  conformance)
    n=$(grep -c '^RESULT .* fail=0$' "$qlog.txt" || true)
    ((n == 2)) || die "want RESULT ... fail=0 for both controllers, got $n"
    # Debian's kernel has no iommufd: iommu=auto must have taken the legacy container.
    n=$(grep -c '^  IOMMU interface: type1 (asked: auto)$' "$qlog.txt" || true)
    ((n == 2)) || die "iommu=auto took another interface than type1 on a kernel without iommufd"
    # Queue pairs destroyed with commands outstanding, and churned: on both controllers.
    for want in 'PASS lifecycle.outstanding.all-outstanding-reported' 'PASS lifecycle.churn'; do
      n=$(grep -c "^$want\$" "$qlog.txt" || true)
      ((n == 2)) || die "want '$want' for both controllers, got $n"
    done
    grep -E '^(RESULT|COMMANDS|CHURN)' "$qlog.txt" >&2 ;;
  iommufd)
    n=$(grep -c '^RESULT .* fail=0$' "$qlog.txt" || true)
    ((n == 3)) || die "want RESULT ... fail=0 for both controllers and p2p, got $n"
    for want in 'PASS bringup.iommu' 'PASS fd-map.memfd-io-both-ways' 'PASS fd-map.foreign-dmabuf-refused' \
                'PASS fd-map.unregister-and-again' 'PASS lifecycle.churn' 'PASS p2p.import-peer-bar' \
                'PASS p2p.io-both-ways' 'PASS p2p.unregister'; do
      grep -q "^$want\$" "$qlog.txt" || die "no '$want' line"
    done
    # The second controller ran with iommu=auto, which must take iommufd where it exists.
    grep -q '^  IOMMU interface: iommufd (asked: auto)$' "$qlog.txt" || die "iommu=auto did not take iommufd"
    grep -E '^(RESULT|COMMANDS|CHURN)' "$qlog.txt" >&2 ;;
  kv_store)
    for run in run reopen kill; do
      grep -q "^RESULT kv-store-$run pass=[1-9][0-9]* fail=0\$" "$qlog.txt" || die "want RESULT kv-store-$run ... fail=0"
      grep -q "^==KV-RC $run 0==\$" "$qlog.txt" || die "gio-qemu-kv-store $run did not exit 0"
    done
    # Every shape's store, and the last one again after the reboot.
    n=$(grep -c '^KV ' "$qlog.txt" || true)
    ((n == 4)) || die "want 4 KV lines (3 shapes, then the reboot), got $n"
    # Enough kill rounds ran, every one passed (its FAIL line and the RESULT line say so too).
    kill_line=$(grep -m1 '^KILL seed=' "$qlog.txt" || true)
    rounds=$(sed -n 's/.* rounds=\([0-9]*\) .*/\1/p' <<< "$kill_line")
    failed=$(sed -n 's/.* failed=\([0-9]*\) .*/\1/p' <<< "$kill_line")
    [[ -n "$rounds" ]] || die "no KILL line from the kill rounds"
    ((${rounds:-0} >= 10)) || die "want at least 10 kill rounds, got ${rounds:-none}"
    [[ "$failed" == 0 ]] || die "kill rounds failed: ${failed:-unknown}"
    grep -E '^(== controller|KV |KILL |RESULT)' "$qlog.txt" >&2 ;;
  staged)
    grep -q '^RESULT staged pass=[1-9][0-9]* fail=0$' "$qlog.txt" || die "want RESULT staged ... fail=0"
    grep -q '^==STAGED-RC 0==$' "$qlog.txt" || die "gio-qemu-staged did not exit 0"
    for want in 'PASS save.committed' 'PASS load.every-byte' 'PASS past-end.status-intact' \
                'PASS past-end.object-untouched' 'PASS past-end.slots-back'; do
      grep -q "^$want\$" "$qlog.txt" || die "no '$want' line"
    done
    n=$(grep -c '^PASS slots.reused$' "$qlog.txt" || true)
    ((n == 2)) || die "want 'PASS slots.reused' for both controllers, got $n"
    grep -q '^STAGED 0000:00:04.0: .*, SGL Data Blocks, ' "$qlog.txt" || die "the first controller did not take SGL Data Blocks"
    grep -q '^STAGED 0000:00:05.0: .*, PRP table, ' "$qlog.txt" || die "the second controller did not take the PRP staging table"
    grep -E '^(STAGED|RESULT)' "$qlog.txt" >&2 ;;
  bench)
    grep -q '^BENCH QD32' "$qlog.txt" || die "no bench figures"
    grep '^BENCH' "$qlog.txt" >&2 ;;
  sriov)
    # section NAME: the lines between ==NAME== and ==NAME-RC
    section() { sed -n "/^==$1==\$/,/^==$1-RC /p" "$qlog.txt"; }
    want_in() { section "$1" | grep -qF -- "$2" || die "$1: no '$2'"; }
    for s in INFO-BEFORE DRY-SETUP SETUP-1 SETUP-2 INFO E2FSCK EXT4-SUMS DRY-UNDO UNDO-1 UNDO-2 INFO-AFTER; do
      grep -q "^==$s-RC 0==\$" "$qlog.txt" || die "==$s-RC 0== missing: that step failed"
    done
    # Every guest program's checks passed, and all of them ran.
    n=$(grep -c '^RESULT sriov-[a-z-]* pass=[1-9][0-9]* fail=0$' "$qlog.txt" || true)
    ((n == 7)) || die "want 7 RESULT sriov-... fail=0 lines (refuse-offline, pf-ns, 2 refuse-ns, 2 queues, pair), got $n"
    for want in 'PASS attach.pf' 'PASS refuse.offline-vf' 'PASS isolation.pf-sees-only-its-namespaces' \
                'PASS queues.one-more-refused' 'PASS pair.first-killed' 'PASS pair.second-unharmed' \
                'PASS pair.killed-store-intact'; do
      grep -q "^$want\$" "$qlog.txt" || die "no '$want' line"
    done
    n=$(grep -c '^PASS isolation.vf-refuses-unattached-namespace$' "$qlog.txt" || true)
    ((n == 2)) || die "want both refusals of a namespace not attached to the VF (the PF's, the other VF's), got $n"
    n=$(grep -c '^WRITER 1 .* all served after a reopen$' "$qlog.txt" || true)
    ((n == 1)) || die "the surviving writer did not report its chunks served after its reopen"
    # giouring-info before: SR-IOV and Virtualization Management reported, no VF enabled.
    want_in INFO-BEFORE 'SR-IOV: up to 2 virtual functions, 0 enabled'
    want_in INFO-BEFORE 'Virtualization Management: yes - OACS bit 7 is clear, but the Commands Supported and Effects log lists it; Namespace Management: yes'
    want_in INFO-BEFORE 'flexible resources (primary controller'
    want_in INFO-BEFORE 'secondary controller 1: VF 1 (not enabled), offline, 0 queues, 0 interrupts'
    # The dry run printed every step and did none of them.
    want_in DRY-SETUP '(dry run: not done)'
    want_in DRY-SETUP 'dry run done: nothing was changed'
    for step in 'autoprobe off' "enable the PF's 2 VFs" 'assign 4 flexible queues' 'assign 1 flexible interrupt' \
                'set the secondary controller online' 'attach namespace 2' 'bind the VF to vfio-pci'; do
      want_in DRY-SETUP "$step"
    done
    grep -q '^after the dry run: sriov_numvfs 0, autoprobe 1$' "$qlog.txt" || die "the dry run changed the PF's state"
    # The safety rule: the PF's (ext4's) namespace is never given to a VF.
    grep -q '^==SAFETY-RC 1==$' "$qlog.txt" || die "giouring-sriov gave the PF's namespace to a VF"
    want_in SAFETY "(the PF's: the kernel's)"
    # Set up for real: steps done by hand before (autoprobe, the VFs, VF 1's driver) skipped.
    want_in SETUP-1 'VF drivers autoprobe off: already so, skipped'
    want_in SETUP-1 "enable the PF's VFs: already so, skipped"
    want_in SETUP-1 'bind the VF to vfio-pci: already so, skipped'
    want_in SETUP-1 'is ready: nvme-pci://'
    want_in SETUP-2 'assign 2 flexible queues'
    want_in SETUP-2 'is ready: nvme-pci://'
    want_in INFO 'SR-IOV: up to 2 virtual functions, 2 enabled'
    want_in INFO '(driver: vfio-pci), online, 4 queues, 1 interrupts'
    want_in INFO '(driver: vfio-pci), online, 2 queues, 1 interrupts'
    want_in INFO 'an SR-IOV virtual function of 0000:00:04.0'
    # ext4 took fsync'd writes while the stores ran, and is clean.
    ext4_line=$(grep -m1 '^EXT4 files=' "$qlog.txt" || true)
    during=$(sed -n 's/.* during-stores=\([0-9]*\)$/\1/p' <<< "$ext4_line")
    ((${during:-0} >= 1)) || die "ext4 took no write while the stores ran (${ext4_line:-no EXT4 line})"
    # Undo: the first leaves the VFs enabled (the second is in use), the second disables them.
    want_in DRY-UNDO 'dry run done: nothing was changed'
    want_in UNDO-1 'left enabled, VF 2 is online'
    want_in UNDO-2 "disable the PF's VFs (none is in use)"
    grep -q '^after undo: sriov_numvfs 0, autoprobe 1$' "$qlog.txt" || die "undo did not disable the VFs"
    want_in INFO-AFTER 'secondary controller 1: VF 1 (not enabled), offline, 0 queues, 0 interrupts'
    want_in INFO-AFTER 'secondary controller 2: VF 2 (not enabled), offline, 0 queues, 0 interrupts'
    grep -E '^(VFs:|  open nvme-pci|  0000|  writer|KILLED-STORE|WRITER|EXT4|PF-NS|RESULT)' "$qlog.txt" >&2 ;;
  info)
    grep -q '^==INFO-NONE-RC [1-9]' "$qlog.txt" || die "giouring-info without controllers must exit non-zero"
    grep -q '^==INFO-KERNEL-RC 0==' "$qlog.txt" || die "giouring-info with kernel-bound controllers must exit 0"
    for want in 'QEMU NVMe Ctrl' 'gio-ctrl-1' 'gio-ctrl-2' 'MDTS: 7 (largest transfer 512 KiB' 'MDTS: 10 (largest transfer 4096 KiB' \
                'SGL support: yes' '4096-byte blocks, 0 bytes metadata (in use)' 'mounted: yes' 'drivers_probe' 'I/O queues granted' \
                'IOMMU interface for nvme-pci: VFIO type1 container' 'GPU memory path (URI path=auto): staged'; do
      sed -n '/^==INFO-KERNEL==/,/^==INFO-KERNEL-RC/p' "$qlog.txt" | grep -q -- "$want" || die "giouring-info output lacks '$want'"
    done ;;
esac
log "IOMMU faults: $faults; boot-and-test ${elapsed} s ($boots boot(s))"
((fail == 0)) && log "PASS" || log "FAIL"
exit $fail
