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

foreach(t cli nogpu mpi plot)
	add_test(NAME bench_${t}
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${t}.sh $<TARGET_FILE:railnet-bench>)
	set_tests_properties(bench_${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
		LABELS bench ENVIRONMENT "${RN_TEST_ENV}")
endforeach()
