#!/usr/bin/env bash
# Installs what is missing, configures build/ (Ninja, RelWithDebInfo), builds
# and runs every ctest test. Extra arguments go to ctest, e.g.
#   bash scripts/test.sh -L host        # only host tests
#   bash scripts/test.sh -R header      # only header tests
#   bash scripts/test.sh -LE fuzz       # everything but the fuzzers
#   bash scripts/test.sh -L qemu        # only the QEMU conformance runs (scripts/qemu/run.sh)
# Without ctest arguments (GIO_SANITIZERS=auto, the default) two sanitizer stages follow a
# passing main run:
#   == ThreadSanitizer: build-tsan/ (GIOURING_SANITIZE=thread): test_stress, test_ctx, test_uring
#   == AddressSanitizer+UBSan: build-asan/ (address,undefined), the host unit tests
# with test_stress at GIO_SAN_STRESS_COMMANDS commands (default 100000). The first stage that
# fails ends the script with its status, so ctest's summary of the last stage run is always the
# last thing printed. GIO_SANITIZERS=1 runs the stages with ctest arguments too, 0 never.
# See scripts/lib.sh for the environment knobs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

sanitizers="${GIO_SANITIZERS:-auto}"
if [[ "$sanitizers" == auto ]]; then
  if (($# == 0)); then sanitizers=1; else sanitizers=0; fi
fi

gio_deps
if [[ "$sanitizers" != 1 ]]; then
  gio_configure_build
  # ctest's summary stays the last thing printed, and its status is ours.
  exec ctest --test-dir "${GIO_BUILD_DIR:-build}" --output-on-failure -j "$(gio_jobs)" "$@"
fi

times=()
gio_timed gio_configure_build
times+=("build ${GIO_STAGE_SECONDS} s")
gio_banner "Main: ctest in ${GIO_BUILD_DIR:-build} ${*:-(every test)}"
gio_timed ctest --test-dir "${GIO_BUILD_DIR:-build}" --output-on-failure -j "$(gio_jobs)" "$@" || exit $?
times+=("main tests ${GIO_STAGE_SECONDS} s")
gio_qemu_report "${GIO_BUILD_DIR:-build}"

san_stress="${GIO_SAN_STRESS_COMMANDS:-100000}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

# ThreadSanitizer: the ring stress test (many producers, queue pairs, executor threads) and the
# context tests (controller bring-up, reset and shutdown while executor threads serve; faults).
# A TSan report makes the test exit non-zero (exitcode 66) after printing every report.
gio_sanitizer_build "ThreadSanitizer" build-tsan thread "test_stress test_ctx test_uring"
times+=("tsan build ${GIO_STAGE_SECONDS} s")
gio_banner "ThreadSanitizer: ctest -R 'test_(stress|ctx|uring)' in build-tsan (GIO_STRESS_COMMANDS=$san_stress; so far: ${times[*]})"
GIO_STRESS_COMMANDS="$san_stress" TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1}" \
  gio_timed gio_no_aslr ctest --test-dir build-tsan --output-on-failure -R '^test_(stress|ctx|uring)$' || exit $?
times+=("tsan tests ${GIO_STAGE_SECONDS} s")

# AddressSanitizer + UndefinedBehaviorSanitizer (no recovery: any report fails): every host unit
# test, the stress test included.
gio_sanitizer_build "AddressSanitizer+UBSan" build-asan "address,undefined" ""
times+=("asan build ${GIO_STAGE_SECONDS} s")
gio_banner "AddressSanitizer+UBSan: ctest -L host -LE 'fuzz|headers|install|docs' in build-asan (GIO_STRESS_COMMANDS=$san_stress; so far: ${times[*]})"
GIO_STRESS_COMMANDS="$san_stress" \
  exec ctest --test-dir build-asan --output-on-failure -j "$(gio_jobs)" -L host -LE 'fuzz|headers|install|docs'
