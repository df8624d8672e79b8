# ctest docs.snippets: the code blocks of README.md and docs/*.md work as written.
#   cmake -DGIO_PARAMS=<file written by gio_add_snippet_test> -DGIO_HOST_LIB=<libgiouring_host.a>
#         -P gio_doc_snippets.cmake
# Each ```c block is a whole C11 program: compiled with -Wall -Wextra -Werror against the headers,
# linked with giouring::host, and run (it must exit 0 on a machine without a GPU or an NVMe
# device). Each ```cuda block is a translation unit nvcc compiles (-c), where CUDA is built. Each
# ```python block is run by the Python package's suite (tests/python/test_docs.py, ctest
# python.pytest): counted here. A block whose opening fence names no language fails: say ```sh,
# ```cmake or ```text.
cmake_minimum_required(VERSION 3.25)
include(${GIO_PARAMS})

file(REMOVE_RECURSE ${GIO_WORK_DIR})
file(MAKE_DIRECTORY ${GIO_WORK_DIR})
set(failures "")
set(counts_c 0)
set(counts_cuda 0)
set(counts_python 0)
foreach(md IN LISTS GIO_DOCS)
  get_filename_component(stem ${md} NAME_WE)
  # awk writes every block to <work>/<stem>-<line>.<lang> and names them on stdout; a fence that
  # opens with no language is reported as "untagged <line>".
  execute_process(
    COMMAND awk -v dir=${GIO_WORK_DIR} -v stem=${stem} "
      /^```/ {
        if (!inblock) {
          lang = substr($0, 4); gsub(/[ \\t\\r]+$/, \"\", lang); inblock = 1; start = NR + 1
          if (lang == \"\") { print \"untagged \" NR; file = \"\" }
          else { file = dir \"/\" stem \"-\" start \".\" lang; printf \"\" > file; print lang \" \" start \" \" file }
          next
        }
        inblock = 0; if (file != \"\") close(file); next
      }
      inblock && file != \"\" { print > file }
      END { if (inblock) print \"unclosed \" start }" ${md}
    OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "docs.snippets: awk failed on ${md}")
  endif()
  string(REPLACE "\n" ";" entries "${listing}")
  foreach(entry IN LISTS entries)
    if(entry STREQUAL "")
      continue()
    endif()
    separate_arguments(f UNIX_COMMAND "${entry}")
    list(GET f 0 lang)
    list(GET f 1 line)
    set(where "${md}:${line}")
    if(lang STREQUAL "untagged" OR lang STREQUAL "unclosed")
      list(APPEND failures "${where}: a code block ${lang} (name its language: c, cuda, sh, cmake, text)")
      continue()
    endif()
    list(GET f 2 src)
    if(lang STREQUAL "c")
      math(EXPR counts_c "${counts_c} + 1")
      set(exe ${src}.out)
      execute_process(COMMAND ${GIO_C_COMPILER} -std=c11 -Wall -Wextra -Werror -I${GIO_INCLUDE_DIR} -x c ${src} -x none
                              ${GIO_HOST_LIB} ${GIO_LIBURING} -lpthread -ldl -o ${exe}
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(NOT rc EQUAL 0)
        list(APPEND failures "${where}: the C block does not compile:\n${out}")
        continue()
      endif()
      execute_process(COMMAND ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 120)
      if(NOT rc EQUAL 0)
        list(APPEND failures "${where}: the C block exits ${rc}:\n${out}")
        continue()
      endif()
      message(STATUS "${where}: c: compiled and ran")
    elseif(lang STREQUAL "cuda")
      math(EXPR counts_cuda "${counts_cuda} + 1")
      if(NOT GIO_CUDA_COMPILER)
        message(STATUS "${where}: cuda: not compiled (no CUDA in this build)")
        continue()
      endif()
      set(arch "")
      if(GIO_CUDA_ARCH)
        set(arch -arch=sm_${GIO_CUDA_ARCH})
      endif()
      execute_process(COMMAND ${GIO_CUDA_COMPILER} -std=c++17 ${arch} --Werror all-warnings
                              -Xcompiler=-Wall,-Wextra,-Werror -I${GIO_INCLUDE_DIR} -x cu -c ${src} -o ${src}.o
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(NOT rc EQUAL 0)
        list(APPEND failures "${where}: the CUDA block does not compile:\n${out}")
        continue()
      endif()
      message(STATUS "${where}: cuda: compiled")
    elseif(lang STREQUAL "python")
      math(EXPR counts_python "${counts_python} + 1")
      message(STATUS "${where}: python: run by python.pytest (tests/python/test_docs.py)")
    endif()
  endforeach()
endforeach()
if(failures)
  list(JOIN failures "\n" shown)
  message(FATAL_ERROR "docs.snippets:\n${shown}")
endif()
message(STATUS "docs.snippets: ${counts_c} C programs compiled and run, ${counts_cuda} CUDA blocks, "
               "${counts_python} Python blocks (run by python.pytest)")
