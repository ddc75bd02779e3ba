# SPDX-License-Identifier: Apache-2.0
# Topology and GPUDirect (issue 6): test_topo (cmocka: roots, paths, ptrSupport per pod,
# GDR probe, RAILNET_GDR_POLICY at the CUDA seam, bad input) with fake CUDA drivers built
# here, and the doctor's alignment answers on the seeds' fixtures (doctor_align.sh).
# Included from test/CMakeLists.txt.
set(RN_TOPO_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RN_FAKE_CUDA_DIR ${CMAKE_BINARY_DIR}/test/fake-cuda)

set(RN_FAKE_CUDA_TARGETS)
foreach(v good old nobusid)
	set(t fake_cuda_${v})
	add_library(${t} SHARED ${RN_TOPO_DIR}/fake_cuda.c)
	set_target_properties(${t} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${RN_FAKE_CUDA_DIR})
	target_compile_options(${t} PRIVATE -Wno-unused-parameter)
	list(APPEND RN_FAKE_CUDA_TARGETS ${t})
endforeach()
target_compile_definitions(fake_cuda_good PRIVATE FAKE_CUDA_VERSION=12040)
target_compile_definitions(fake_cuda_old PRIVATE FAKE_CUDA_VERSION=10020)
target_compile_definitions(fake_cuda_nobusid PRIVATE FAKE_CUDA_VERSION=12040
	FAKE_CUDA_NO_BUSID)

# The core archive (and its static hwloc) in a shared object linked like the plugin.
add_library(rn_topo_so_probe SHARED ${RN_TOPO_DIR}/so_probe.c)
set_target_properties(rn_topo_so_probe PROPERTIES LIBRARY_OUTPUT_DIRECTORY
	${CMAKE_BINARY_DIR}/test LINK_DEPENDS ${RN_TOPO_DIR}/so_probe.map)
target_compile_options(rn_topo_so_probe PRIVATE -fvisibility=hidden ${RN_GLIBC_COMPAT})
target_link_libraries(rn_topo_so_probe PRIVATE railnet_core
	-Wl,--push-state,--no-as-needed -l:libdl.so.2 -Wl,--pop-state)
target_link_options(rn_topo_so_probe PRIVATE
	-Wl,--version-script=${RN_TOPO_DIR}/so_probe.map -Wl,--as-needed)
if(NOT SANITIZER) # as the plugin: sanitizer runtimes come from the loading executable
	target_link_options(rn_topo_so_probe PRIVATE -Wl,-z,defs -Wl,--no-undefined)
endif()

rn_add_test(NAME test_topo SOURCES ${RN_TOPO_DIR}/test_topo.c LIBS ${CMAKE_DL_LIBS}
	ENV "RN_FAKE_CUDA_DIR=${RN_FAKE_CUDA_DIR}" "RN_FAKE_VERBS_DIR=${CMAKE_BINARY_DIR}/test/fake"
	"RN_TOPO_SO_PROBE=$<TARGET_FILE:rn_topo_so_probe>"
	LABELS unit topo TIMEOUT 120)
# The plugin on a machine without a GPU never opens the CUDA driver: its own process, as
# softverbs reads SOFTVERBS_VIEW once per process (test_topo.c, test_no_gpu_no_cuda).
add_test(NAME test_topo_no_gpu COMMAND test_topo no-gpu)
set_tests_properties(test_topo_no_gpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
	LABELS "unit;topo;softverbs" ENVIRONMENT
	"${RN_TEST_ENV};RN_FAKE_CUDA_DIR=${RN_FAKE_CUDA_DIR}")
# fake_verbs_* come from test/unit/verbs.cmake, softverbs and sv-mkview from softverbs/
add_dependencies(test_topo softverbs-fabric softverbs sv-mkview fake_verbs_full fake_verbs_opt
	rn_topo_so_probe ${RN_FAKE_CUDA_TARGETS})

find_program(RN_TOPO_BASH bash)
find_program(RN_TOPO_SH sh)
file(STRINGS ${CMAKE_SOURCE_DIR}/docker/Dockerfile rn_topo_floor REGEX "^ARG GLIBC_FLOOR=")
string(REGEX REPLACE "^ARG GLIBC_FLOOR=" "" rn_topo_floor "${rn_topo_floor}")
if(RN_TOPO_BASH AND RN_TOPO_SH)
	add_test(NAME topo_so_needed COMMAND ${RN_TOPO_BASH}
		${CMAKE_SOURCE_DIR}/test/integration/check_needed.sh
		$<TARGET_FILE:rn_topo_so_probe>)
	add_test(NAME topo_so_glibc_floor COMMAND ${RN_TOPO_SH}
		${CMAKE_SOURCE_DIR}/docker/glibc-floor.sh $<TARGET_FILE:rn_topo_so_probe>
		${rn_topo_floor})
	set_tests_properties(topo_so_needed topo_so_glibc_floor PROPERTIES SKIP_RETURN_CODE 77
		TIMEOUT 60 LABELS "integration;topo" ENVIRONMENT "RN_SANITIZER=${SANITIZER}")
endif()
if(RN_TOPO_BASH)
	add_test(NAME topo_doctor_align COMMAND ${RN_TOPO_BASH} ${RN_TOPO_DIR}/doctor_align.sh
		${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	# the busbw prediction against the field's measurements (docs/doctor.md)
	add_test(NAME topo_doctor_calibration COMMAND ${RN_TOPO_BASH}
		${RN_TOPO_DIR}/doctor_calibration.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	set_tests_properties(topo_doctor_align topo_doctor_calibration PROPERTIES
		SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration;topo")
endif()
