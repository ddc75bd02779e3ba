# SPDX-License-Identifier: Apache-2.0
# test_plugin: dlopens the built plugin and drives every exported ncclNetPlugin_vN table.
# It uses the fake libibverbs of test/unit/verbs.cmake (one device) when that is built.
# Included from test/CMakeLists.txt (CMAKE_CURRENT_SOURCE_DIR is test/).
rn_add_test(NAME test_plugin SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_plugin.c
	LIBS ${CMAKE_DL_LIBS} INCLUDES ${CMAKE_SOURCE_DIR}/nccl_headers
	ENV "RN_FAKE_VERBS_DIR=${CMAKE_BINARY_DIR}/test/fake" LABELS unit abi)
add_dependencies(test_plugin nccl-net-railnet)
# the loopback device of test_loopback_device and test_finalize_orphans: softverbs on a view
# from sv-mkview whose GID is 127.0.0.1 on lo (no root, no network namespace)
foreach(dep softverbs sv-mkview)
	if(TARGET ${dep})
		add_dependencies(test_plugin ${dep})
	endif()
endforeach()
