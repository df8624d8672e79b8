# ctest install.find_package: installs the build tree into a temporary
# prefix, then builds and runs tests/find_package against it, once through
# find_package(giouring) and once through pkg-config. Any failing step fails.
#
# cmake -DGIO_PARAMS=<install-test-params.cmake> [-DGIO_CONFIG=<config>]
#       -P gio_install_test.cmake
# Set GIO_KEEP_TMP=1 in the environment to keep the temporary directory.
cmake_minimum_required(VERSION 3.25)

if(NOT GIO_PARAMS OR NOT EXISTS "${GIO_PARAMS}")
  message(FATAL_ERROR "gio_install_test: -DGIO_PARAMS=<file> is required")
endif()
include(${GIO_PARAMS})

set(prefix ${GIO_WORK_DIR}/prefix)
set(consumer_build ${GIO_WORK_DIR}/build)
set(consumer_src ${GIO_SOURCE_DIR}/tests/find_package)

macro(gio_cleanup)
  if("$ENV{GIO_KEEP_TMP}" STREQUAL "1")
    message(STATUS "keeping ${GIO_WORK_DIR} (GIO_KEEP_TMP=1)")
  else()
    file(REMOVE_RECURSE ${GIO_WORK_DIR})
  endif()
endmacro()

macro(gio_fail msg)
  gio_cleanup()
  message(FATAL_ERROR "install.find_package: ${msg}")
endmacro()

# Runs a command, shows it and its output, fails the test on a non-zero exit.
# The output is left in gio_out.
function(gio_step what)
  string(JOIN " " shown ${ARGN})
  message(STATUS "[${what}] ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(gio_out "${out}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message("${out}")
    gio_fail("${what} failed (exit ${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE ${GIO_WORK_DIR})
file(MAKE_DIRECTORY ${prefix} ${consumer_build})

# 1. install
set(install_cmd ${CMAKE_COMMAND} --install ${GIO_BUILD_DIR} --prefix ${prefix})
if(GIO_CONFIG)
  list(APPEND install_cmd --config ${GIO_CONFIG})
endif()
gio_step("install" ${install_cmd})

set(gpu_lib "")
if(GIO_CUDA)
  set(gpu_lib ${GIO_LIBDIR}/libgiouring_gpu.a)
endif()
foreach(f
    ${GIO_INCLUDEDIR}/giouring/giouring.h
    ${GIO_INCLUDEDIR}/giouring/target/gpu_target.h
    ${gpu_lib}
    ${GIO_LIBDIR}/libgiouring_host.a
    ${GIO_LIBDIR}/cmake/giouring/giouring-config.cmake
    ${GIO_LIBDIR}/cmake/giouring/giouring-config-version.cmake
    ${GIO_LIBDIR}/cmake/giouring/giouring-targets.cmake
    ${GIO_LIBDIR}/pkgconfig/giouring.pc)
  if(NOT EXISTS ${prefix}/${f})
    gio_fail("installed tree lacks ${f}")
  endif()
endforeach()

# 2. find_package(giouring) from an outside project
set(configure_cmd ${CMAKE_COMMAND} -S ${consumer_src} -B ${consumer_build}
    -G "${GIO_GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    "-DCMAKE_C_COMPILER=${GIO_C_COMPILER}")
if(GIO_MAKE_PROGRAM)
  list(APPEND configure_cmd "-DCMAKE_MAKE_PROGRAM=${GIO_MAKE_PROGRAM}")
endif()
if(GIO_BUILD_TYPE)
  list(APPEND configure_cmd "-DCMAKE_BUILD_TYPE=${GIO_BUILD_TYPE}")
endif()
if(GIO_CUDA)
  list(APPEND configure_cmd -DCONSUMER_CUDA=ON
       "-DCMAKE_CUDA_COMPILER=${GIO_CUDA_COMPILER}"
       "-DCMAKE_CUDA_ARCHITECTURES=${GIO_CUDA_ARCHITECTURES}")
  if(GIO_CUDA_HOST_COMPILER)
    list(APPEND configure_cmd "-DCMAKE_CUDA_HOST_COMPILER=${GIO_CUDA_HOST_COMPILER}")
  endif()
else()
  list(APPEND configure_cmd -DCONSUMER_CUDA=OFF)
endif()
gio_step("configure consumer" ${configure_cmd})

# The package must come from our prefix, not from some other install.
file(STRINGS ${consumer_build}/CMakeCache.txt found_dir REGEX "^giouring_DIR:")
string(REGEX REPLACE "^giouring_DIR:[A-Z]*=" "" found_dir "${found_dir}")
file(REAL_PATH "${found_dir}" found_dir)
file(REAL_PATH "${prefix}" real_prefix)
string(FIND "${found_dir}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  gio_fail("find_package found giouring in '${found_dir}', not under ${real_prefix}")
endif()

set(build_cmd ${CMAKE_COMMAND} --build ${consumer_build})
if(GIO_CONFIG)
  list(APPEND build_cmd --config ${GIO_CONFIG})
endif()
gio_step("build consumer" ${build_cmd})

gio_step("run consumer_c" ${consumer_build}/consumer_c)
message(STATUS "consumer_c: ${gio_out}")
if(NOT gio_out MATCHES "^giouring [^\n]+")
  gio_fail("consumer_c printed '${gio_out}', expected 'giouring <version>'")
endif()
if(GIO_CUDA)
  gio_step("run consumer_cuda" ${consumer_build}/consumer_cuda)
  message(STATUS "consumer_cuda: ${gio_out}")
  gio_step("run consumer_gpu" ${consumer_build}/consumer_gpu)
  message(STATUS "consumer_gpu: ${gio_out}")
endif()

# 2b. README.md's CMake lines, as an engine would paste them, in a project of their own.
file(READ ${GIO_SOURCE_DIR}/README.md readme)
set(readme_cmake "")
set(rest "${readme}")
while(TRUE)
  string(FIND "${rest}" "```cmake\n" at)
  if(at EQUAL -1)
    break()
  endif()
  math(EXPR at "${at} + 9")
  string(SUBSTRING "${rest}" ${at} -1 rest)
  string(FIND "${rest}" "```" end)
  string(SUBSTRING "${rest}" 0 ${end} block)
  string(APPEND readme_cmake "${block}")
  string(SUBSTRING "${rest}" ${end} -1 rest)
endwhile()
if(readme_cmake STREQUAL "")
  gio_fail("README.md has no ```cmake block")
endif()
set(readme_src ${GIO_WORK_DIR}/readme-project)
file(MAKE_DIRECTORY ${readme_src})
file(COPY ${consumer_src}/main.c DESTINATION ${readme_src})
file(WRITE ${readme_src}/CMakeLists.txt
  "cmake_minimum_required(VERSION 3.25)\nproject(readme_engine C)\nadd_executable(my_engine main.c)\n${readme_cmake}")
set(readme_configure ${CMAKE_COMMAND} -S ${readme_src} -B ${readme_src}/build -G "${GIO_GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DCMAKE_C_COMPILER=${GIO_C_COMPILER}")
if(GIO_MAKE_PROGRAM)
  list(APPEND readme_configure "-DCMAKE_MAKE_PROGRAM=${GIO_MAKE_PROGRAM}")
endif()
gio_step("configure README's CMake lines" ${readme_configure})
gio_step("build README's CMake lines" ${CMAKE_COMMAND} --build ${readme_src}/build)
gio_step("run README's my_engine" ${readme_src}/build/my_engine)

# 3. pkg-config
if(NOT GIO_PKG_CONFIG)
  gio_fail("pkg-config not found (scripts/deps.sh installs it)")
endif()
set(ENV{PKG_CONFIG_PATH} "${prefix}/${GIO_LIBDIR}/pkgconfig")
gio_step("pkg-config" ${GIO_PKG_CONFIG} --cflags --libs giouring)
string(STRIP "${gio_out}" pc_flags)
message(STATUS "pkg-config --cflags --libs giouring: ${pc_flags}")
separate_arguments(pc_list UNIX_COMMAND "${pc_flags}")
foreach(want "-I${prefix}/${GIO_INCLUDEDIR}" "-L${prefix}/${GIO_LIBDIR}" "-lgiouring_host")
  if(NOT want IN_LIST pc_list)
    gio_fail("pkg-config gave '${pc_flags}', which lacks '${want}'")
  endif()
endforeach()
gio_step("pkg-config version" ${GIO_PKG_CONFIG} --modversion giouring)
string(STRIP "${gio_out}" pc_version)
if(NOT pc_version STREQUAL GIO_VERSION)
  gio_fail("pkg-config --modversion gave '${pc_version}', expected '${GIO_VERSION}'")
endif()

gio_step("compile with pkg-config flags"
  ${GIO_C_COMPILER} -std=c11 -Wall -Wextra -Werror
  ${consumer_src}/main.c -o ${GIO_WORK_DIR}/consumer_pc ${pc_list})
gio_step("run consumer_pc" ${GIO_WORK_DIR}/consumer_pc)
message(STATUS "consumer_pc: ${gio_out}")
if(NOT gio_out MATCHES "^giouring [^\n]+")
  gio_fail("consumer_pc printed '${gio_out}', expected 'giouring <version>'")
endif()

gio_cleanup()
message(STATUS "install.find_package: ok")
