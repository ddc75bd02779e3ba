# SPDX-License-Identifier: Apache-2.0
# test_nccl_result: plugin.c's -errno -> ncclResult_t conversion as a table. plugin.c is
# compiled into the test (its exported tables are inert there), with nccl_headers/ for
# include/railnet/nccl_result.h. Included from test/CMakeLists.txt.
rn_add_test(NAME test_nccl_result SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_nccl_result.c
	${CMAKE_SOURCE_DIR}/src/plugin.c INCLUDES ${CMAKE_SOURCE_DIR}/nccl_headers
	LABELS unit abi)
