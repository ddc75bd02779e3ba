# SPDX-License-Identifier: Apache-2.0
# Test registration helpers, included from the top-level CMakeLists before any subdirectory.
find_library(CMOCKA_LIBRARY cmocka REQUIRED)
find_path(CMOCKA_INCLUDE_DIR cmocka.h REQUIRED)

add_library(rn_testsupport STATIC ${CMAKE_SOURCE_DIR}/test/support/rn_test.c
	${CMAKE_SOURCE_DIR}/test/support/rn_test_sv.c)
target_include_directories(rn_testsupport PUBLIC ${CMAKE_SOURCE_DIR}/test/support
	${CMOCKA_INCLUDE_DIR})
target_link_libraries(rn_testsupport PUBLIC railnet_core ${CMOCKA_LIBRARY})

# The system's libibverbs.so.1, for the tests that load it by path: where the toolchain's
# library search finds it (the multiarch directory of any architecture), never a fixed path.
find_library(RN_SYSTEM_IBVERBS NAMES libibverbs.so.1)
if(NOT RN_SYSTEM_IBVERBS)
	set(RN_SYSTEM_IBVERBS "")
endif()

# Environment every test gets: where the build and the sources are, the system libibverbs.
set(RN_TEST_ENV
	"RN_BUILD_DIR=${CMAKE_BINARY_DIR}"
	"RN_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
	"RN_PLUGIN_SO=$<TARGET_FILE:nccl-net-railnet>"
	"RN_SYSTEM_IBVERBS=${RN_SYSTEM_IBVERBS}")

# rn_add_test(NAME name SOURCES a.c b.c [LIBS ...] [INCLUDES ...] [ENV ...] [TIMEOUT s]
#             [LABELS ...] [ARGS ...])
function(rn_add_test)
	cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;INCLUDES;ENV;LABELS;ARGS" ${ARGN})
	add_executable(${T_NAME} ${T_SOURCES})
	set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
	target_link_libraries(${T_NAME} PRIVATE rn_testsupport ${T_LIBS})
	if(T_INCLUDES)
		target_include_directories(${T_NAME} PRIVATE ${T_INCLUDES})
	endif()
	add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
	if(NOT T_TIMEOUT)
		set(T_TIMEOUT 300)
	endif()
	set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT}
		ENVIRONMENT "${RN_TEST_ENV};${T_ENV}")
	if(T_LABELS)
		set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
	endif()
endfunction()

