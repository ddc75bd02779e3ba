# SPDX-License-Identifier: Apache-2.0
# railnet-preflight (tools/preflight/, docs/preflight.md): the schedule and verdict as a unit
# test; the tool itself between softverbs pods (preflight.sh: healthy, port down, half-speed
# port, disjoint rails; heatmap.sh: the --heatmap picture, decoded), label "preflight".
set(RN_PF_DIR ${CMAKE_CURRENT_LIST_DIR})
rn_add_test(NAME test_pf SOURCES ${RN_PF_DIR}/test_pf.c LIBS railnet_preflight_core
	LABELS unit preflight)
find_program(RN_PF_BASH bash)
if(RN_PF_BASH AND TARGET railnet-preflight)
	add_test(NAME preflight COMMAND ${RN_PF_BASH} ${RN_PF_DIR}/preflight.sh ${CMAKE_BINARY_DIR}
		${CMAKE_SOURCE_DIR})
	set_tests_properties(preflight PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
		LABELS "integration;preflight;softverbs")
	add_test(NAME preflight_heatmap COMMAND ${RN_PF_BASH} ${RN_PF_DIR}/heatmap.sh
		${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	set_tests_properties(preflight_heatmap PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
		RUN_SERIAL TRUE LABELS "integration;preflight;softverbs")
endif()
