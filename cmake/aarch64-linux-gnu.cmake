# SPDX-License-Identifier: Apache-2.0
# CMake toolchain for the arm64 (aarch64) cross-build of the plugin on an amd64 Debian/Ubuntu
# host: Debian's cross gcc (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) and a private
# sysroot with the arm64 hwloc and libibverbs development files (RN_CROSS_SYSROOT, made by
# tools/cross-arm64.sh from the distribution's arm64 packages; nothing is installed on the
# host). Used with -DRAILNET_PLUGIN_ONLY=ON: the plugin, softverbs' library and
# railnet-loadcheck, nothing that needs MPI, cmocka or CUDA.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

# try_compile projects read this file again: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RN_CROSS_SYSROOT)
if(NOT RN_CROSS_SYSROOT)
	message(FATAL_ERROR "RN_CROSS_SYSROOT is not set: the folder holding the arm64 usr/ of "
		"libhwloc-dev and libibverbs-dev (tools/cross-arm64.sh makes it)")
endif()
# The compiler's own target libc first, then the private sysroot; programs are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${RN_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# hwloc's generated config.h lives in the multiarch include folder.
set(CMAKE_C_FLAGS_INIT
	"-isystem ${RN_CROSS_SYSROOT}/usr/include -isystem ${RN_CROSS_SYSROOT}/usr/include/aarch64-linux-gnu")
