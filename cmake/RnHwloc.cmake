# SPDX-License-Identifier: Apache-2.0
# hwloc, linked statically into the core archive (and so into the plugin), from the
# distribution's own libhwloc.a (Debian/Ubuntu: libhwloc-dev). That archive is built for
# executables (-fPIE), not for shared objects, and it reaches outside glibc's oldest symbol
# versions. A copy with a handful of symbols renamed (cmake/hwloc-syms.txt) fixes both; the
# renamed symbols are defined in src/hwloc_shim.c. docs/topology.md explains the choice.
# Result: rn_hwloc (an imported static library) and RN_HWLOC_INCLUDE_DIR.
find_path(RN_HWLOC_INCLUDE_DIR hwloc.h)
find_library(RN_HWLOC_ARCHIVE NAMES libhwloc.a)
if(NOT RN_HWLOC_INCLUDE_DIR OR NOT RN_HWLOC_ARCHIVE)
	message(FATAL_ERROR "hwloc's static library and headers are needed (libhwloc.a, hwloc.h): "
		"apt-get install libhwloc-dev (tools/install-deps.sh lists every package)")
endif()
if(NOT CMAKE_OBJCOPY)
	find_program(CMAKE_OBJCOPY objcopy REQUIRED)
endif()

set(RN_HWLOC_SYMS ${CMAKE_SOURCE_DIR}/cmake/hwloc-syms.txt)
set(RN_HWLOC_RELINKED ${CMAKE_BINARY_DIR}/librn_hwloc.a)
add_custom_command(OUTPUT ${RN_HWLOC_RELINKED}
	COMMAND ${CMAKE_OBJCOPY} --redefine-syms=${RN_HWLOC_SYMS} ${RN_HWLOC_ARCHIVE}
		${RN_HWLOC_RELINKED}
	DEPENDS ${RN_HWLOC_ARCHIVE} ${RN_HWLOC_SYMS}
	COMMENT "hwloc: renaming libc data, dl*, stat*, udev, affinity and modff symbols in libhwloc.a"
	VERBATIM)
add_custom_target(rn_hwloc_archive DEPENDS ${RN_HWLOC_RELINKED})
add_library(rn_hwloc STATIC IMPORTED GLOBAL)
set_target_properties(rn_hwloc PROPERTIES IMPORTED_LOCATION ${RN_HWLOC_RELINKED}
	INTERFACE_INCLUDE_DIRECTORIES ${RN_HWLOC_INCLUDE_DIR})
