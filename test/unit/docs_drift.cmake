# SPDX-License-Identifier: Apache-2.0
# Script (cmake -P) that fails when a generated document differs from its committed copy.
# -DTOOL=generator -DEXPECTED=committed file -DACTUAL=where to write the fresh output
# -DFIX=command that regenerates the committed file (named in the failure message).
foreach(v TOOL EXPECTED ACTUAL FIX)
	if(NOT DEFINED ${v})
		message(FATAL_ERROR "docs_drift.cmake: -D${v}=... is required")
	endif()
endforeach()

execute_process(COMMAND ${TOOL} OUTPUT_FILE ${ACTUAL} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "${TOOL} failed (${rc})")
endif()
if(NOT EXISTS ${EXPECTED})
	message(FATAL_ERROR "${EXPECTED} is missing: run ${FIX}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${EXPECTED} ${ACTUAL} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
	execute_process(COMMAND diff -u ${EXPECTED} ${ACTUAL})
	message(FATAL_ERROR "${EXPECTED} differs from what ${TOOL} prints (diff above): run ${FIX} "
		"and commit the result")
endif()
message(STATUS "${EXPECTED} is up to date")
