# SPDX-License-Identifier: Apache-2.0
# railnet-preflight (tools/preflight/, docs/preflight.md): the schedule and verdict as a unit
# test; the tool itself between softverbs pods (preflight.sh: healthy, a half-speed port, a
# port on another network, a path cut between two pods, MTU mismatches on a port and on a path, a port down, a worker killed
# or hung mid-check, a rank held up once, a rail lost by one end of a pair, a rank held past a
# burst's bound, a rank without RDMA; heatmap.sh: the --heatmap picture, decoded), label
# "preflight".
set(RN_PF_DIR ${CMAKE_CURRENT_LIST_DIR})
rn_add_test(NAME test_pf SOURCES ${RN_PF_DIR}/test_pf.c LIBS railnet_preflight_core
	LABELS unit preflight)
find_program(RN_PF_BASH bash)
if(RN_PF_BASH AND TARGET railnet-preflight)
	add_test(NAME preflight COMMAND ${RN_PF_BASH} ${RN_PF_DIR}/preflight.sh ${CMAKE_BINARY_DIR}
		${CMAKE_SOURCE_DIR})
	set_tests_properties(preflight PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE
		LABELS "integration;preflight;softverbs")
	# the picture's colours follow the measured GB/s, which the rate model sets in a plain
	# build; under a sanitizer the CPU sets them (healthy cells vary by a third and turn
	# yellow in 1 run of 4), and the drawing is the same code in every build
	if(NOT SANITIZER)
		add_test(NAME preflight_heatmap COMMAND ${RN_PF_BASH} ${RN_PF_DIR}/heatmap.sh
			${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
		set_tests_properties(preflight_heatmap PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
			RUN_SERIAL TRUE LABELS "integration;preflight;softverbs")
	endif()
endif()
