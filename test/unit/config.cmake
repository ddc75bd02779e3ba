# SPDX-License-Identifier: Apache-2.0
# Registers the config tests: the cmocka binary, and the docs-drift check that runs
# railnet-envdoc and compares its output with the committed docs/env.md.
rn_add_test(NAME test_config SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_config.c LABELS unit)

if(TARGET railnet-envdoc)
	add_test(NAME config_env_docs
		COMMAND ${CMAKE_COMMAND}
			-DTOOL=$<TARGET_FILE:railnet-envdoc>
			-DEXPECTED=${CMAKE_SOURCE_DIR}/docs/env.md
			-DACTUAL=${CMAKE_CURRENT_BINARY_DIR}/env.md.generated
			-DFIX=make\ docs
			-P ${CMAKE_CURRENT_SOURCE_DIR}/unit/docs_drift.cmake)
	set_tests_properties(config_env_docs PROPERTIES LABELS unit TIMEOUT 60)
endif()
