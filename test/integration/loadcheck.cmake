# SPDX-License-Identifier: Apache-2.0
# railnet-loadcheck: sees only nccl_headers/ and libdl, exactly what NCCL sees. Included by
# tests.cmake and, in the plugin-only (arm64 cross) build, by the top-level CMakeLists.txt.
add_executable(railnet-loadcheck ${CMAKE_SOURCE_DIR}/test/integration/rn_loadcheck.c)
target_include_directories(railnet-loadcheck PRIVATE ${CMAKE_SOURCE_DIR}/nccl_headers)
target_link_libraries(railnet-loadcheck PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(railnet-loadcheck nccl-net-railnet)
