# SPDX-License-Identifier: Apache-2.0
# test_conn: listen/connect/accept (conn.c) over loopback TCP and softverbs (the library and
# sv-mkview from softverbs/). test_conn_fault runs the same binary with the acceptor's
# first create_qp failing (SOFTVERBS_FAIL). Included from test/CMakeLists.txt.
rn_add_test(NAME test_conn SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_conn.c
	LABELS unit softverbs TIMEOUT 300)
add_test(NAME test_conn_fault COMMAND test_conn fault)
set_tests_properties(test_conn_fault PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS
	"unit;softverbs" ENVIRONMENT "${RN_TEST_ENV};SOFTVERBS_FAIL=ibv_create_qp:5:ENOMEM")
foreach(dep softverbs sv-mkview)
	if(TARGET ${dep})
		add_dependencies(test_conn ${dep})
	endif()
endforeach()
