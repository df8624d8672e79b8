# Cross-compiling toolchain: aarch64 Linux (Debian's gcc-aarch64-linux-gnu and g++-aarch64-linux-gnu,
# with arm64 builds of the libraries from Debian multiarch: liburing-dev:arm64). Programs run under
# qemu-user: ctest prefixes every test whose command is a target of this build with the emulator.
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DGIOURING_CUDA=OFF
# scripts/test.sh's aarch64 stage configures it so (scripts/lib.sh, gio_aarch64_build).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's cross compilers search the multiarch directories (/usr/include, /usr/lib/aarch64-linux-gnu)
# themselves, and CMake finds packages there by this architecture.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The C library the cross compiler links against (libc6-arm64-cross): qemu-user takes the dynamic
# loader from there (-L), and the loader must take every shared library from there too
# (LD_LIBRARY_PATH). Without it, the loader's default directories (/lib/aarch64-linux-gnu) find the
# multiarch libc6:arm64 that liburing-dev:arm64 depends on: another build of glibc than the loader's,
# and the two share private structures (the first pthread_create() spins forever in that mix).
set(GIO_AARCH64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH "Where qemu-user finds the aarch64 loader and libraries")
find_program(GIO_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static DOC "qemu-user for aarch64")
if(NOT GIO_QEMU_AARCH64)
  message(FATAL_ERROR "aarch64-linux-gnu.cmake: qemu-aarch64 not found (Debian: qemu-user)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${GIO_QEMU_AARCH64} -L ${GIO_AARCH64_SYSROOT} -E LD_LIBRARY_PATH=${GIO_AARCH64_SYSROOT}/lib)
