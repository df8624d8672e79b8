# ctest fuzz.<target>: copies the seed corpus tests/fuzz/corpus/<target>/ (and the
# regression inputs in tests/fuzz/regressions/<target>/) into
# the build tree (libFuzzer adds inputs to it; the source tree stays clean) and
# runs the fuzzer for GIO_SECONDS. A crash, leak, timeout or sanitizer report
# makes libFuzzer exit non-zero, which fails the test; the reproducer is left
# in <work>/artifacts/.
#
# cmake -DGIO_FUZZER=<binary> -DGIO_CORPUS_SRC=<seed dir> -DGIO_WORK_DIR=<dir>
#       -DGIO_SECONDS=<n> -P gio_fuzz_run.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var GIO_FUZZER GIO_CORPUS_SRC GIO_WORK_DIR GIO_SECONDS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "gio_fuzz_run: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS ${GIO_FUZZER})
  message(FATAL_ERROR "gio_fuzz_run: ${GIO_FUZZER} was not built (is GIOURING_FUZZ on and the build up to date?)")
endif()

set(corpus ${GIO_WORK_DIR}/corpus)
set(artifacts ${GIO_WORK_DIR}/artifacts)
file(REMOVE_RECURSE ${GIO_WORK_DIR})
file(MAKE_DIRECTORY ${corpus} ${artifacts})
if(IS_DIRECTORY ${GIO_CORPUS_SRC})
  file(COPY ${GIO_CORPUS_SRC}/ DESTINATION ${corpus})
else()
  message(STATUS "no seed corpus at ${GIO_CORPUS_SRC}; starting empty")
endif()
# Inputs that once found a bug (tests/fuzz/regressions/<target>/) run first, every time.
get_filename_component(target_name ${GIO_CORPUS_SRC} NAME)
get_filename_component(fuzz_dir ${GIO_CORPUS_SRC}/../.. ABSOLUTE)
if(IS_DIRECTORY ${fuzz_dir}/regressions/${target_name})
  file(COPY ${fuzz_dir}/regressions/${target_name}/ DESTINATION ${corpus})
endif()

set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
set(cmd ${GIO_FUZZER}
    -max_total_time=${GIO_SECONDS} -timeout=10 -print_final_stats=1
    -artifact_prefix=${artifacts}/
    ${corpus})
string(JOIN " " shown ${cmd})
message(STATUS "${shown}")
execute_process(COMMAND ${cmd} WORKING_DIRECTORY ${GIO_WORK_DIR} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${artifacts}/*)
  message(FATAL_ERROR "fuzzer exited ${rc}; reproducers: ${found}\n"
                      "replay one with: ${GIO_FUZZER} <file>")
endif()
