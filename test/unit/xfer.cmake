# SPDX-License-Identifier: Apache-2.0
# test_xfer: the data path (xfer.c) between a send and a receive comm in one process over
# softverbs (the library and sv-mkview from softverbs/), no root, no network namespace. The fault
# groups run the same binary once per softverbs fault setting, which the library reads when it
# is loaded: a port of the sender's or of the receiver's device going down mid-stream
# (SOFTVERBS_PORT_DOWN, 1 s after load), every QP breaking (SOFTVERBS_QP_ERR_AFTER), the
# acknowledgements of a delivered part lost (SOFTVERBS_DROP_ACK: exactly once after failover),
# and every QP's link dying 3 s after load with both comms alive (SOFTVERBS_CUT_LINK: the
# keepalive probes, RAILNET_KEEPALIVE_MS).
# Included from test/CMakeLists.txt.
rn_add_test(NAME test_xfer SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_xfer.c
	LABELS unit softverbs xfer TIMEOUT 120)
foreach(entry
		"portdown|portdown|SOFTVERBS_PORT_DOWN=svdev0:1:1000"
		"portdown_recv|portdown|SOFTVERBS_PORT_DOWN=svdev1:2:1000"
		"qperr|qperr|SOFTVERBS_QP_ERR_AFTER=40"
		"ackdrop|ackdrop|SOFTVERBS_DROP_ACK=1"
		"cutlink|cutlink|SOFTVERBS_CUT_LINK=3000")
	string(REPLACE "|" ";" f "${entry}")
	list(GET f 0 name)
	list(GET f 1 group)
	list(GET f 2 env)
	add_test(NAME test_xfer_${name} COMMAND test_xfer ${group})
	set_tests_properties(test_xfer_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
		LABELS "unit;softverbs;xfer" ENVIRONMENT "${RN_TEST_ENV};${env}")
endforeach()
foreach(dep softverbs sv-mkview)
	if(TARGET ${dep})
		add_dependencies(test_xfer ${dep})
	endif()
endforeach()
