# SPDX-License-Identifier: Apache-2.0
# test_abi: runtime offsetof/sizeof checks of nccl_headers/ (the _Static_asserts, visible in
# ctest). Included from test/CMakeLists.txt.
rn_add_test(NAME test_abi SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_abi.c
	INCLUDES ${CMAKE_SOURCE_DIR}/nccl_headers LABELS unit abi)
