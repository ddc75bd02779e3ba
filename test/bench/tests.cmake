# SPDX-License-Identifier: Apache-2.0
# railnet-bench tests (CPU only): cmocka unit tests of flag parsing, table text, #wrong data and
# the JSON/CSV writers, and script tests of the binary: bad input (exit 2), no GPU for --nccl
# (exit 77 with the reason), and the argument/rank checks under mpirun -np 2.
# Until bench/CMakeLists.txt adds railnet-bench, the harness is pulled in from here.
if(NOT TARGET railnet-bench AND EXISTS ${CMAKE_SOURCE_DIR}/bench/railnet-bench/CMakeLists.txt)
	add_subdirectory(${CMAKE_SOURCE_DIR}/bench/railnet-bench
		${CMAKE_BINARY_DIR}/bench/railnet-bench)
endif()
if(NOT TARGET railnet-bench)
	message(WARNING "railnet-bench is not built (no MPI?): its tests are not registered")
	return()
endif()

foreach(t rb_args rb_fmt rb_data rb_out)
	rn_add_test(NAME test_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c
		LIBS railnet_bench_core LABELS "unit;bench")
endforeach()

# libnccl-net-rbmock.so: a tiny TCP net plugin that tests railnet-bench --net's driver
# (loading, connect/accept, the ring pipeline, #wrong, error paths) apart from railnet.
add_library(rbmock MODULE ${CMAKE_CURRENT_LIST_DIR}/mock_net.c)
set_target_properties(rbmock PROPERTIES OUTPUT_NAME nccl-net-rbmock PREFIX lib
	LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-plugins C_VISIBILITY_PRESET hidden)
target_include_directories(rbmock PRIVATE ${CMAKE_SOURCE_DIR}/nccl_headers)
target_compile_options(rbmock PRIVATE -Wno-unused-parameter)
add_dependencies(railnet-bench rbmock)

foreach(t net_mock net_softverbs)
	add_test(NAME bench_${t}
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${t}.sh $<TARGET_FILE:railnet-bench>
			${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	set_tests_properties(bench_${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
		LABELS bench ENVIRONMENT "${RN_TEST_ENV}")
endforeach()

foreach(t cli nogpu mpi plot compare_table thread_cpu)
	add_test(NAME bench_${t}
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${t}.sh $<TARGET_FILE:railnet-bench>)
	set_tests_properties(bench_${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
		LABELS bench ENVIRONMENT "${RN_TEST_ENV}")
endforeach()
