# SPDX-License-Identifier: Apache-2.0
# Rails and GIDs (issue 4): scenario tests over the softverbs fixtures in real network
# namespaces (railnet-doctor --json checked field by field, test_plugin inside a pod; needs
# root, else SKIP), and the doctor's human output judged from outside the pods (--ifaddrs).
# Included from test/CMakeLists.txt; the unit tests are test/unit/test_{hca,gid,vdev}.c.
find_program(RN_RAILS_BASH bash)
if(RN_RAILS_BASH)
	add_test(NAME rails_scenarios COMMAND ${RN_RAILS_BASH}
		${CMAKE_CURRENT_LIST_DIR}/scenarios.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	add_test(NAME rails_doctor_text COMMAND ${RN_RAILS_BASH}
		${CMAKE_CURRENT_LIST_DIR}/doctor_text.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	# scenarios bring up network namespaces named from their own temporary OUTDIR
	set_tests_properties(rails_scenarios rails_doctor_text PROPERTIES SKIP_RETURN_CODE 77
		TIMEOUT 300 LABELS "integration;rails")
endif()

# test_gdr_reg: RAILNET_GDR_POLICY at regMr/regMrDmaBuf with CUDA buffers (a fake driver through
# cuda.h's seam); run by scenarios.sh inside small.spec's pod0, never on its own.
add_executable(test_gdr_reg ${CMAKE_CURRENT_LIST_DIR}/test_gdr_reg.c)
set_target_properties(test_gdr_reg PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
target_link_libraries(test_gdr_reg PRIVATE rn_testsupport)
