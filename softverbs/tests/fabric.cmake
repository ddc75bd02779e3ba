# SPDX-License-Identifier: Apache-2.0
# softverbs-fabric tests (ctest -R fabric), included from CMakeLists.txt. The topology test links
# libhwloc for itself only.
find_library(HWLOC_LIBRARY hwloc)
find_path(HWLOC_INCLUDE_DIR hwloc.h)

rn_add_test(NAME test_fabric_spec SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fabric_spec.c
	LIBS svfabric LABELS softverbs)
rn_add_test(NAME test_fabric_views SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fabric_views.c
	LIBS svfabric LABELS softverbs)
if(HWLOC_LIBRARY AND HWLOC_INCLUDE_DIR)
	rn_add_test(NAME test_fabric_topo SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fabric_topo.c
		LIBS svfabric ${HWLOC_LIBRARY} INCLUDES ${HWLOC_INCLUDE_DIR} LABELS softverbs)
else()
	message(STATUS "libhwloc not found: test_fabric_topo is not built (apt install libhwloc-dev)")
endif()
rn_add_test(NAME test_fabric_netns SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_fabric_netns.c
	LIBS svfabric LABELS softverbs TIMEOUT 120)
add_dependencies(test_fabric_netns softverbs-fabric)
# every fixture compiles with the command-line tool too, and so do the GPU scripts' specs
# (test/gpu: `check` parses cuda= without binding it, so they need no GPU here)
file(GLOB SV_FABRIC_SPECS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/test/fixtures/*.spec
	${CMAKE_SOURCE_DIR}/test/gpu/*.spec)
foreach(spec ${SV_FABRIC_SPECS})
	get_filename_component(base ${spec} NAME_WE)
	add_test(NAME fabric_check_${base} COMMAND softverbs-fabric check ${spec})
	set_tests_properties(fabric_check_${base} PROPERTIES LABELS softverbs)
endforeach()
# `exec`: the pod's private /sys, laid out as the kernel would, and cuda= binding (root)
add_test(NAME fabric_exec_sys COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fabric_exec_sys.sh
	${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
set_tests_properties(fabric_exec_sys PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS softverbs)
