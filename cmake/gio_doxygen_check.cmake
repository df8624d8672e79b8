# ctest docs.doxygen: runs doxygen with docs/Doxyfile from the repository
# root, writing into GIO_OUT_DIR, and fails on a non-zero exit or on any line
# in the warning log.
#
# cmake -DGIO_DOXYGEN=doxygen -DGIO_SOURCE_DIR=<repo> -DGIO_OUT_DIR=<dir>
#       -P gio_doxygen_check.cmake
# GIO_OUT_DIR may also come from the environment variable GIO_DOCS_OUT.
cmake_minimum_required(VERSION 3.25)

if(NOT GIO_OUT_DIR AND DEFINED ENV{GIO_DOCS_OUT})
  set(GIO_OUT_DIR "$ENV{GIO_DOCS_OUT}")
endif()
foreach(var GIO_DOXYGEN GIO_SOURCE_DIR GIO_OUT_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "gio_doxygen_check: -D${var}=... is required")
  endif()
endforeach()

set(doxyfile ${GIO_SOURCE_DIR}/docs/Doxyfile)
if(NOT EXISTS ${doxyfile})
  message(FATAL_ERROR "gio_doxygen_check: ${doxyfile} does not exist")
endif()

file(REMOVE_RECURSE ${GIO_OUT_DIR})
file(MAKE_DIRECTORY ${GIO_OUT_DIR})
set(log ${GIO_OUT_DIR}/doxygen-warnings.log)

# Later assignments win in a Doxyfile: point the output and the warning log
# into the build tree without touching docs/Doxyfile.
file(READ ${doxyfile} config)
string(APPEND config "\n# appended by gio_doxygen_check.cmake\n"
                     "OUTPUT_DIRECTORY = \"${GIO_OUT_DIR}\"\n"
                     "WARN_LOGFILE = \"${log}\"\n")
set(run_config ${GIO_OUT_DIR}/Doxyfile.ctest)
file(WRITE ${run_config} "${config}")

execute_process(COMMAND ${GIO_DOXYGEN} ${run_config}
  WORKING_DIRECTORY ${GIO_SOURCE_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)

set(warnings "")
if(EXISTS ${log})
  file(READ ${log} warnings)
  string(STRIP "${warnings}" warnings)
endif()

if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "")
  message("${out}")
  if(NOT warnings STREQUAL "")
    message("---- doxygen warnings (${log}) ----\n${warnings}\n----")
  endif()
  message(FATAL_ERROR "docs.doxygen: doxygen exited ${rc} with warnings; every public symbol needs its documentation")
endif()
message(STATUS "docs.doxygen: no warnings; HTML in ${GIO_OUT_DIR}/html")
