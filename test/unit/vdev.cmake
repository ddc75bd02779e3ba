# SPDX-License-Identifier: Apache-2.0
# test_vdev: the merge rules (vdev.h) over tables of ports, and makeVDevice under RAILNET_MERGE
# through net.h over a softverbs view (the library and sv-mkview from softverbs/).
# Included from test/CMakeLists.txt (CMAKE_CURRENT_SOURCE_DIR is test/).
rn_add_test(NAME test_vdev SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_vdev.c
	LABELS unit softverbs)
foreach(dep softverbs sv-mkview)
	if(TARGET ${dep})
		add_dependencies(test_vdev ${dep})
	endif()
endforeach()
