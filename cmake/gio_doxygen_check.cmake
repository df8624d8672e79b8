# ctest docs.doxygen: runs `doxygen docs/Doxyfile` from the root of a copy of what it reads
# (README.md, docs/, include/, and the examples and tests it may quote), as in a fresh clone, and
# fails on a non-zero exit, on any warning, or when the pages it must hold are missing.
#
# cmake -DGIO_DOXYGEN=doxygen -DGIO_SOURCE_DIR=<repo> -DGIO_WORK_DIR=<dir> -P gio_doxygen_check.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var GIO_DOXYGEN GIO_SOURCE_DIR GIO_WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "gio_doxygen_check: -D${var}=... is required")
  endif()
endforeach()

set(tree ${GIO_WORK_DIR}/tree)
file(REMOVE_RECURSE ${GIO_WORK_DIR})
file(MAKE_DIRECTORY ${tree})
file(COPY ${GIO_SOURCE_DIR}/README.md DESTINATION ${tree})
foreach(d include docs examples tests)
  file(COPY ${GIO_SOURCE_DIR}/${d} DESTINATION ${tree} PATTERN api EXCLUDE)
endforeach()

execute_process(COMMAND ${GIO_DOXYGEN} docs/Doxyfile
  WORKING_DIRECTORY ${tree}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE warnings)
string(STRIP "${warnings}" warnings)
if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "")
  message("${out}")
  message("---- doxygen warnings ----\n${warnings}\n----")
  message(FATAL_ERROR "docs.doxygen: `doxygen docs/Doxyfile` exited ${rc} with warnings; every public symbol needs "
                      "its documentation")
endif()
set(html ${tree}/docs/api/html)
if(NOT EXISTS ${html}/index.html)
  message(FATAL_ERROR "docs.doxygen: no ${html}/index.html: OUTPUT_DIRECTORY is not docs/api")
endif()
file(GLOB pages RELATIVE ${GIO_SOURCE_DIR}/docs ${GIO_SOURCE_DIR}/docs/*.md)
foreach(page IN LISTS pages)
  get_filename_component(stem ${page} NAME_WE)
  # Doxygen writes a '-' of a page's file name as '_' (store-format.md: ..._store_format.html).
  string(REPLACE "-" "_" stem "${stem}")
  file(GLOB found ${html}/*${stem}*.html)
  if(NOT found)
    message(FATAL_ERROR "docs.doxygen: docs/${page} is not among the pages Doxygen wrote")
  endif()
endforeach()
message(STATUS "docs.doxygen: ok (${html}/index.html)")
