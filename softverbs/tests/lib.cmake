# SPDX-License-Identifier: Apache-2.0
# softverbs library conformance tests: plain C verbs clients linked against
# build/softverbs/libibverbs.so.1 (not railnet_core), one ctest per case
# ("softverbs.<binary>.<case>"), exit 77 = skipped; binaries in build/test/. Also sv-mkview
# (build/bin/), the minimal pod view that railnet's verbs-level tests use too. Included from
# CMakeLists.txt when the library is built.
add_library(sv_testlib STATIC sv_test.c)
target_include_directories(sv_testlib PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(sv_testlib PUBLIC softverbs-lib)

add_executable(sv-mkview sv_mkview.c)
target_link_libraries(sv-mkview PRIVATE sv_testlib)
set_target_properties(sv-mkview PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

# sv_add_tests(binary source "case1;case2;..." [ENV ...] [SUFFIX s])
function(sv_add_tests bin src cases)
	cmake_parse_arguments(T "" "SUFFIX;TIMEOUT" "ENV" ${ARGN})
	if(NOT TARGET ${bin})
		add_executable(${bin} ${src})
		target_link_libraries(${bin} PRIVATE sv_testlib ${CMAKE_DL_LIBS})
		set_target_properties(${bin} PROPERTIES
			RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
	endif()
	if(NOT T_TIMEOUT)
		set(T_TIMEOUT 120)
	endif()
	foreach(c ${cases})
		set(name softverbs.${bin}.${c}${T_SUFFIX})
		add_test(NAME ${name} COMMAND ${bin} ${c})
		set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT}
			ENVIRONMENT "RN_BUILD_DIR=${CMAKE_BINARY_DIR};${T_ENV}"
			LABELS softverbs)
	endforeach()
endfunction()

set(SV_DATA_CASES write write_large write_imm read send unsignaled sq_full wr_api channel
	loopback loop_pair two_ports cq_ex fork_close)
sv_add_tests(test_sv_data test_sv_data.c "${SV_DATA_CASES}")
sv_add_tests(test_sv_data test_sv_data.c "${SV_DATA_CASES}" SUFFIX .defer
	ENV "SOFTVERBS_NIC_DEFER_US=200")
sv_add_tests(test_sv_data test_sv_data.c "${SV_DATA_CASES}" SUFFIX .stream
	ENV "SOFTVERBS_VM=off")
# the TCP transport (used across network namespaces), forced onto loopback
sv_add_tests(test_sv_data test_sv_data.c "write_large;write_imm;read;send;wr_api" SUFFIX .tcp
	ENV "SOFTVERBS_TCP=127.0.0.1;SOFTVERBS_VM=off")
sv_add_tests(test_sv_data test_sv_data.c "write;read;send" SUFFIX .tcp_vm
	ENV "SOFTVERBS_TCP=127.0.0.1")

set(SV_VERBS_CASES symbols layout query mr cq qp_states unsupported strings views nic_thread)
if(NOT SANITIZER)
	list(APPEND SV_VERBS_CASES perftest_loads)
endif()
sv_add_tests(test_sv_verbs test_sv_verbs.c "${SV_VERBS_CASES}")

set(SV_ERR_CASES loc_prot read_local_write rem_bad_rkey rem_bounds rem_mr_access
	rem_read_access rem_qp_access flush rnr_exceeded rnr_infinite retry_vanished
	retry_wrong_gid short_recv post_rules bad_peer)
sv_add_tests(test_sv_errors test_sv_errors.c "${SV_ERR_CASES}")
sv_add_tests(test_sv_errors test_sv_errors.c "rem_bad_rkey;rnr_infinite;short_recv" SUFFIX .stream
	ENV "SOFTVERBS_VM=off")

sv_add_tests(test_sv_faults test_sv_faults.c
	"fail_nth;qp_err_after;port_down;cut_link;link_mtu_send;link_mtu_recv;link_mtu_fits;cqe_delay;\
latency;rate;rate_serial;bad_rules;rate_off;reap;reap_pidns")
# SOFTVERBS_NIC_DEFER_US: the NIC thread steps aside while the test's thread polls; bad values
# are named; and the data, stress and timer cases again with the NIC thread stepping aside
sv_add_tests(test_sv_faults test_sv_faults.c "nic_defer" ENV "SOFTVERBS_NIC_DEFER_US=200")
sv_add_tests(test_sv_faults test_sv_faults.c "nic_defer" SUFFIX .off)
sv_add_tests(test_sv_faults test_sv_faults.c "defer_idle" ENV "SOFTVERBS_NIC_DEFER_US=100000")
foreach(v abc -1 100001 2ms)
	string(MAKE_C_IDENTIFIER "${v}" sv_v)
	sv_add_tests(test_sv_faults test_sv_faults.c "bad_defer" SUFFIX .${sv_v}
		ENV "SOFTVERBS_NIC_DEFER_US=${v}")
endforeach()
sv_add_tests(test_sv_faults test_sv_faults.c "port_down;cut_link;latency;rate;cqe_delay"
	SUFFIX .defer ENV "SOFTVERBS_NIC_DEFER_US=200")
# a reply never completes before the SEND it answers, even when the NIC thread holds the
# events it took (SOFTVERBS_EVENT_DELAY_US)
sv_add_tests(test_sv_faults test_sv_faults.c "ack_order" ENV "SOFTVERBS_EVENT_DELAY_US=300")
sv_add_tests(test_sv_faults test_sv_faults.c "ack_order" SUFFIX .defer
	ENV "SOFTVERBS_EVENT_DELAY_US=300;SOFTVERBS_NIC_DEFER_US=200")
# the one-copy path and the stream path check the link MTU in different places
sv_add_tests(test_sv_faults test_sv_faults.c "link_mtu_send;link_mtu_recv" SUFFIX .stream
	ENV "SOFTVERBS_VM=off")
# The latency and rate models are checked with lower bounds only (a loaded machine cannot
# break them); the two-port aggregate is a speed, measured by bench/datapath.sh.

# Third-party: Debian's perftest, unchanged, over softverbs.
function(sv_perftest name)
	cmake_parse_arguments(P "" "FABRIC" "" ${ARGN})
	set(t softverbs.perftest.${name})
	add_test(NAME ${t} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sv_perftest.sh
		${CMAKE_BINARY_DIR} ${P_UNPARSED_ARGUMENTS})
	set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS softverbs)
	if(P_FABRIC)
		set_tests_properties(${t} PROPERTIES ENVIRONMENT "SV_FABRIC=${P_FABRIC}")
	endif()
endfunction()
# A sanitizer-built libibverbs cannot be preloaded under uninstrumented perftest binaries.
if(NOT SANITIZER)
	sv_perftest(ib_write_bw ib_write_bw -n 2000)
	sv_perftest(ib_write_bw_1m ib_write_bw -s 1048576 -n 500)
	sv_perftest(ib_read_lat ib_read_lat -n 1000)
	sv_perftest(ib_read_bw ib_read_bw -n 1000)
	sv_perftest(ib_send_bw ib_send_bw -n 1000)
	sv_perftest(ib_send_lat_events ib_send_lat -e -n 500)
	# two pods of the small fixture fabric (softverbs-fabric's views), RoCE v2 GID index 5
	if(TARGET softverbs-fabric AND EXISTS ${CMAKE_SOURCE_DIR}/test/fixtures/small.spec)
		sv_perftest(fabric_small_write_bw ib_write_bw -s 1048576 -n 300 FABRIC
			"${CMAKE_SOURCE_DIR}/test/fixtures/small.spec node0/pod0/view mlx5_0 node0/pod1/view mlx5_2 5")
		sv_perftest(fabric_small_read_lat ib_read_lat -n 500 FABRIC
			"${CMAKE_SOURCE_DIR}/test/fixtures/small.spec node0/pod0/view mlx5_1 node0/pod1/view mlx5_3 5")
		# the same pods as real network namespaces: the cross-namespace (TCP) path
		add_test(NAME softverbs.perftest.netns_write_bw COMMAND sh
			${CMAKE_CURRENT_SOURCE_DIR}/sv_netns_perftest.sh ${CMAKE_BINARY_DIR}
			${CMAKE_SOURCE_DIR})
		set_tests_properties(softverbs.perftest.netns_write_bw PROPERTIES
			SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS softverbs)
	endif()
endif()

sv_add_tests(test_sv_stress test_sv_stress.c "bidir;bidir_rnr")
sv_add_tests(test_sv_stress test_sv_stress.c "bidir;bidir_rnr" SUFFIX .defer
	ENV "SOFTVERBS_NIC_DEFER_US=200")
sv_add_tests(test_sv_stress test_sv_stress.c "bidir;bidir_rnr" SUFFIX .stream
	ENV "SOFTVERBS_VM=off")

# GDR mode on a stand-in CUDA driver (fake_cuda.c): device memory that the CPU cannot touch,
# copies that land only when the stream is synchronised
add_library(sv_fake_cuda SHARED fake_cuda.c)
set_target_properties(sv_fake_cuda PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
set(SV_FAKE_CUDA "SOFTVERBS_CUDA_LIB=$<TARGET_FILE:sv_fake_cuda>")
sv_add_tests(test_sv_gdr test_sv_gdr.c "data;data_dmabuf"
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=both")
sv_add_tests(test_sv_gdr test_sv_gdr.c "data;data_dmabuf" SUFFIX .stream
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=both;SOFTVERBS_VM=off")
sv_add_tests(test_sv_gdr test_sv_gdr.c "relaxed;two_nics"
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed")
sv_add_tests(test_sv_gdr test_sv_gdr.c "relaxed;two_nics" SUFFIX .stream
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed;SOFTVERBS_VM=off")
sv_add_tests(test_sv_gdr test_sv_gdr.c "two_nics" SUFFIX .strict
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem")
sv_add_tests(test_sv_gdr test_sv_gdr.c "no_stream"
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;FAKE_CUDA_NO_STREAM=1")
# the NIC's pinned bounce buffer under a relaxed burst, and the requester's staging ring for
# payload out of GPU memory; .pageable: the driver gives no pinned memory (FAKE_CUDA_PINNED=0)
# and the same data moves through malloc'd memory; .small_stage: a 1.5 MiB ring that wraps and
# overflows into the stream; .no_stage: SOFTVERBS_GDR_STAGE=0, GPU payload in the stream
sv_add_tests(test_sv_gdr test_sv_gdr.c "burst"
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed")
sv_add_tests(test_sv_gdr test_sv_gdr.c "burst" SUFFIX .pageable
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed;FAKE_CUDA_PINNED=0")
sv_add_tests(test_sv_gdr test_sv_gdr.c "burst" SUFFIX .small_stage
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed;SOFTVERBS_GDR_STAGE=1572864")
sv_add_tests(test_sv_gdr test_sv_gdr.c "burst" SUFFIX .no_stage
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_STAGE=0")
foreach(v abc -1 1073741825 4M)
	string(MAKE_C_IDENTIFIER "${v}" sv_v)
	sv_add_tests(test_sv_gdr test_sv_gdr.c "bad_stage" SUFFIX .${sv_v}
		ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed;SOFTVERBS_GDR_STAGE=${v}")
endforeach()
sv_add_tests(test_sv_gdr test_sv_gdr.c "burst" SUFFIX .stream
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=peermem;SOFTVERBS_GDR_ORDER=relaxed;SOFTVERBS_VM=off")
sv_add_tests(test_sv_gdr test_sv_gdr.c "data;data_dmabuf" SUFFIX .pageable
	ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=both;FAKE_CUDA_PINNED=0")
foreach(m off peermem dmabuf both)
	sv_add_tests(test_sv_gdr test_sv_gdr.c "register" SUFFIX .${m}
		ENV "${SV_FAKE_CUDA};SOFTVERBS_GDR=${m}")
endforeach()
add_dependencies(test_sv_gdr sv_fake_cuda)
sv_add_tests(test_sv_gdr test_sv_gdr.c "no_driver"
	ENV "SOFTVERBS_CUDA_LIB=/nonexistent/libcuda.so.1;SOFTVERBS_GDR=both")
