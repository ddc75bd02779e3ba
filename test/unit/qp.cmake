# SPDX-License-Identifier: Apache-2.0
# test_qp: the QP layer over softverbs (the library and sv-mkview from softverbs/).
# test_qp_fault runs the same binary with a create_qp failure injected by softverbs.
# Included from test/CMakeLists.txt (CMAKE_CURRENT_SOURCE_DIR is test/).
rn_add_test(NAME test_qp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_qp.c LABELS unit softverbs
	TIMEOUT 300)
add_test(NAME test_qp_fault COMMAND test_qp fault)
set_tests_properties(test_qp_fault PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS
	"unit;softverbs" ENVIRONMENT "${RN_TEST_ENV};SOFTVERBS_FAIL=ibv_create_qp:3:ENOMEM")
foreach(dep softverbs sv-mkview)
	if(TARGET ${dep})
		add_dependencies(test_qp ${dep})
	endif()
endforeach()
