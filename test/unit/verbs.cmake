# SPDX-License-Identifier: Apache-2.0
# test_verbs: src/verbs.c against fake libibverbs builds (one source, several version scripts
# and symbol sets) and, as test_verbs_system, against the system libibverbs. Also the lint
# seam tests: the "only verbs.c calls ibv_*/mlx5dv_*" rule on the tree and on a planted
# violation. Included from test/CMakeLists.txt (CMAKE_CURRENT_SOURCE_DIR is test/).

set(RN_FAKE_DIR ${CMAKE_BINARY_DIR}/test/fake)
set(RN_FAKE_SRC ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_verbs_lib.c)

# Required symbols, all at IBVERBS_1.1 (reference/verbs-abi.md §1).
set(RN_FAKE_REQUIRED ibv_get_device_list ibv_free_device_list ibv_get_device_name
	ibv_open_device ibv_close_device ibv_get_async_event ibv_ack_async_event
	ibv_query_device ibv_query_port ibv_query_gid ibv_query_pkey ibv_query_qp ibv_alloc_pd
	ibv_dealloc_pd ibv_reg_mr ibv_dereg_mr ibv_create_cq ibv_destroy_cq ibv_create_qp
	ibv_modify_qp ibv_destroy_qp ibv_fork_init ibv_event_type_str ibv_wc_status_str)
set(RN_FAKE_OPTIONAL ibv_reg_mr_iova2 ibv_query_ece ibv_set_ece _ibv_query_gid_ex
	_ibv_query_gid_table ibv_reg_dmabuf_mr ibv_query_port_speed)
list(JOIN RN_FAKE_REQUIRED "; " _rn_req)
list(REMOVE_ITEM RN_FAKE_REQUIRED ibv_open_device)
list(JOIN RN_FAKE_REQUIRED "; " _rn_req_no_open)
list(JOIN RN_FAKE_OPTIONAL "; " _rn_opt)
set(_rn_ctl "FAKE_CTL_1 { global: fake_verbs_*; };")

# variant -> version script text ("" = no version script at all)
set(RN_FAKE_MAP_full "IBVERBS_1.0 { };\nIBVERBS_1.1 { global: ${_rn_req}; local: *; } IBVERBS_1.0;\n${_rn_ctl}\n")
set(RN_FAKE_MAP_missing "${RN_FAKE_MAP_full}")
set(RN_FAKE_MAP_opt "IBVERBS_1.0 { };
IBVERBS_1.1 { global: ${_rn_req}; local: *; } IBVERBS_1.0;
IBVERBS_1.8 { global: ibv_reg_mr_iova2; } IBVERBS_1.1;
IBVERBS_1.10 { global: ibv_query_ece; ibv_set_ece; } IBVERBS_1.8;
IBVERBS_1.11 { global: _ibv_query_gid_ex; _ibv_query_gid_table; } IBVERBS_1.10;
IBVERBS_1.12 { global: ibv_reg_dmabuf_mr; } IBVERBS_1.11;
IBVERBS_1.16 { global: ibv_query_port_speed; } IBVERBS_1.12;
${_rn_ctl}
")
# optional symbols present, but all at the classic node: none may be bound
set(RN_FAKE_MAP_optwrong "IBVERBS_1.1 { global: ${_rn_req}; ${_rn_opt}; local: *; };\n${_rn_ctl}\n")
# ibv_open_device only at the old-ABI node
set(RN_FAKE_MAP_wrongnode "IBVERBS_1.0 { global: ibv_open_device; };\nIBVERBS_1.1 { global: ${_rn_req_no_open}; local: *; } IBVERBS_1.0;\n${_rn_ctl}\n")
# ibv_open_device exported at the base version of a versioned library
set(RN_FAKE_MAP_basever "IBVERBS_1.1 { global: ${_rn_req_no_open}; };\n${_rn_ctl}\n")
set(RN_FAKE_MAP_unversioned "")

set(RN_FAKE_DEFS_missing FAKE_OMIT_OPEN_DEVICE)
set(RN_FAKE_DEFS_opt FAKE_OPTIONAL)
set(RN_FAKE_DEFS_optwrong FAKE_OPTIONAL)

set(RN_FAKE_TARGETS)
foreach(v full missing opt optwrong wrongnode basever unversioned)
	set(t fake_verbs_${v})
	add_library(${t} SHARED ${RN_FAKE_SRC})
	set_target_properties(${t} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${RN_FAKE_DIR})
	target_compile_options(${t} PRIVATE -Wno-missing-prototypes)
	if(RN_FAKE_DEFS_${v})
		target_compile_definitions(${t} PRIVATE ${RN_FAKE_DEFS_${v}})
	endif()
	if(NOT "${RN_FAKE_MAP_${v}}" STREQUAL "")
		set(map ${CMAKE_CURRENT_BINARY_DIR}/fake_verbs_${v}.map)
		file(CONFIGURE OUTPUT ${map} CONTENT "${RN_FAKE_MAP_${v}}" @ONLY)
		target_link_options(${t} PRIVATE -Wl,--version-script=${map})
		set_target_properties(${t} PROPERTIES LINK_DEPENDS ${map})
	endif()
	list(APPEND RN_FAKE_TARGETS ${t})
endforeach()

# No version information at all (no libc, hence no DT_VERSYM): glibc's dlvsym binds any
# version here, so only verbs.c's own check stops it. Not instrumented: no runtime to need.
add_library(fake_verbs_bare SHARED ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_verbs_bare.c)
set_target_properties(fake_verbs_bare PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${RN_FAKE_DIR})
target_compile_options(fake_verbs_bare PRIVATE -fno-sanitize=all)
target_link_options(fake_verbs_bare PRIVATE -fno-sanitize=all -nostdlib)
list(APPEND RN_FAKE_TARGETS fake_verbs_bare)

rn_add_test(NAME test_verbs SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_verbs.c
	LIBS ${CMAKE_DL_LIBS} Threads::Threads ENV "RN_FAKE_VERBS_DIR=${RN_FAKE_DIR}"
	LABELS unit verbs)
add_dependencies(test_verbs ${RN_FAKE_TARGETS})

# The same binary against the system library; exits 77 where there is none.
add_test(NAME test_verbs_system COMMAND test_verbs --system)
set_tests_properties(test_verbs_system PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
	ENVIRONMENT "${RN_TEST_ENV};RN_FAKE_VERBS_DIR=${RN_FAKE_DIR}" LABELS "unit;verbs")

# The lint seam: the grep rule over the tree, and proof that it catches a planted call.
find_program(RN_BASH bash)
if(RN_BASH)
	add_test(NAME lint_verbs_rule
		COMMAND ${RN_BASH} ${CMAKE_SOURCE_DIR}/tools/lint.sh --rule-only)
	add_test(NAME lint_verbs_rule_selftest
		COMMAND ${RN_BASH} ${CMAKE_SOURCE_DIR}/tools/lint.sh --rule-selftest)
	set_tests_properties(lint_verbs_rule lint_verbs_rule_selftest PROPERTIES
		WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} TIMEOUT 60 LABELS "lint;verbs")
endif()
