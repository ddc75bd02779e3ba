# SPDX-License-Identifier: Apache-2.0
# Fuzz targets. Each target fuzz_<dir> is one file defining LLVMFuzzerTestOneInput plus its
# committed corpus, test/fuzz/corpus/<dir>/, added with one rn_add_fuzz() call below; inputs
# that once made it fail are kept in test/fuzz/regress/<dir>/ (regress/README.md). Every
# target gets:
#  - <name>_driver, any compiler: test/fuzz/driver.c runs the corpus, the regression inputs
#    and a fixed number of pseudo-random and mutated inputs; registered in CTest as <name>
#    (label fuzz), so gcc CI exercises it too;
#  - <name>_libfuzzer, clang only: the same file with -fsanitize=fuzzer (plus address and
#    undefined unless SANITIZER is set), with the parser sources compiled in so that
#    libFuzzer sees their coverage; CTest runs it briefly as <name>_libfuzzer over the corpus
#    and the regression inputs, with a fixed seed so that a failure is reproducible. The
#    target `fuzzers` builds them all. Long runs that grow the corpus: `make fuzz`
#    (test/fuzz/fuzz.sh grow); CI's short run under a new seed each time: fuzz.sh ci.
set(RN_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
# a new regress/<dir>/ is picked up by the next build (the directory's time changes)
if(IS_DIRECTORY ${RN_FUZZ_DIR}/regress)
	set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${RN_FUZZ_DIR}/regress)
endif()

# rn_add_fuzz(NAME fuzz_<dir> SOURCE file.c CORPUS .../corpus/<dir> CORE_SOURCES src/a.c ...
#             [LIBS lib ...] [DEPENDS target ...] [ITERATIONS n] [RUNS n])
#   The name and the corpus directory go together (test/fuzz/fuzz.sh finds one from the other).
#   CORE_SOURCES: the railnet sources the target exercises (compiled into the libFuzzer binary
#   with coverage; the driver links railnet_core instead). LIBS: libraries both binaries link
#   besides (their include directories come along; a library whose sources are also in
#   CORE_SOURCES gives the libFuzzer binary only what those do not define). DEPENDS: targets
#   built first, such as a library the target loads at run time. ITERATIONS: generated inputs
#   of the plain driver (default 5000). RUNS: executions of the CTest libFuzzer smoke run
#   (20000).
function(rn_add_fuzz)
	cmake_parse_arguments(F "" "NAME;SOURCE;CORPUS;ITERATIONS;RUNS" "CORE_SOURCES;LIBS;DEPENDS"
		${ARGN})
	if(NOT F_ITERATIONS)
		set(F_ITERATIONS 5000)
	endif()
	if(NOT F_RUNS)
		set(F_RUNS 20000)
	endif()
	get_filename_component(dir ${F_CORPUS} NAME)
	if(NOT F_NAME STREQUAL "fuzz_${dir}")
		message(FATAL_ERROR "rn_add_fuzz: ${F_NAME}: the corpus of fuzz_<dir> is "
			"corpus/<dir>, not ${F_CORPUS}")
	endif()
	set(inputs ${F_CORPUS})
	if(IS_DIRECTORY ${RN_FUZZ_DIR}/regress/${dir})
		list(APPEND inputs ${RN_FUZZ_DIR}/regress/${dir})
	endif()

	add_executable(${F_NAME}_driver ${F_SOURCE} ${RN_FUZZ_DIR}/driver.c)
	target_link_libraries(${F_NAME}_driver PRIVATE railnet_core ${F_LIBS})
	if(F_DEPENDS)
		add_dependencies(${F_NAME}_driver ${F_DEPENDS})
	endif()
	set_target_properties(${F_NAME}_driver PROPERTIES
		RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
	add_test(NAME ${F_NAME} COMMAND ${F_NAME}_driver --iterations ${F_ITERATIONS} ${inputs})
	set_tests_properties(${F_NAME} PROPERTIES LABELS fuzz TIMEOUT 300
		ENVIRONMENT "${RN_TEST_ENV}")

	if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND NOT SANITIZER MATCHES "thread")
		set(san fuzzer)
		if(NOT SANITIZER)
			set(san fuzzer,address,undefined)
		endif()
		add_executable(${F_NAME}_libfuzzer ${F_SOURCE} ${F_CORE_SOURCES})
		target_compile_options(${F_NAME}_libfuzzer PRIVATE -fsanitize=${san}
			-fno-sanitize-recover=all -fno-omit-frame-pointer)
		target_link_options(${F_NAME}_libfuzzer PRIVATE -fsanitize=${san})
		target_link_libraries(${F_NAME}_libfuzzer PRIVATE ${F_LIBS} ${CMAKE_DL_LIBS}
			Threads::Threads)
		if(F_DEPENDS)
			add_dependencies(${F_NAME}_libfuzzer ${F_DEPENDS})
		endif()
		set_target_properties(${F_NAME}_libfuzzer PROPERTIES
			RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test)
		set_property(GLOBAL APPEND PROPERTY RN_FUZZERS ${F_NAME}_libfuzzer)
		# New inputs go to a scratch directory in the build tree, never into the sources.
		# The seed is fixed: only fuzz.sh ci varies it.
		set(work ${CMAKE_CURRENT_BINARY_DIR}/fuzz/${F_NAME}.corpus)
		file(MAKE_DIRECTORY ${work})
		add_test(NAME ${F_NAME}_libfuzzer COMMAND ${F_NAME}_libfuzzer -runs=${F_RUNS}
			-seed=1 -max_len=4096 ${work} ${inputs})
		set_tests_properties(${F_NAME}_libfuzzer PROPERTIES LABELS fuzz TIMEOUT 300
			ENVIRONMENT "${RN_TEST_ENV}")
	endif()
endfunction()

# config.c checks NCCL_IB_HCA and NCCL_IB_ADDR_RANGE with hca.c's and gid.c's parsers
rn_add_fuzz(NAME fuzz_env SOURCE ${RN_FUZZ_DIR}/fuzz_env.c CORPUS ${RN_FUZZ_DIR}/corpus/env
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/config.c ${CMAKE_SOURCE_DIR}/src/log.c
	${CMAKE_SOURCE_DIR}/src/hca.c ${CMAKE_SOURCE_DIR}/src/gid.c ${CMAKE_SOURCE_DIR}/src/sysfs.c)
rn_add_fuzz(NAME fuzz_hca SOURCE ${RN_FUZZ_DIR}/fuzz_hca.c CORPUS ${RN_FUZZ_DIR}/corpus/hca CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/hca.c ${CMAKE_SOURCE_DIR}/src/gid.c ${CMAKE_SOURCE_DIR}/src/sysfs.c)
rn_add_fuzz(NAME fuzz_wire SOURCE ${RN_FUZZ_DIR}/fuzz_wire.c CORPUS ${RN_FUZZ_DIR}/corpus/wire CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/wire.c)
# the bootstrap interface (NCCL_SOCKET_IFNAME) and the default-route readers
rn_add_fuzz(NAME fuzz_oobif SOURCE ${RN_FUZZ_DIR}/fuzz_oobif.c CORPUS ${RN_FUZZ_DIR}/corpus/oobif
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/oob.c ${CMAKE_SOURCE_DIR}/src/wire.c
	${CMAKE_SOURCE_DIR}/src/log.c)
# the address list of a pod view (softverbs-fabric's ifaddrs, railnet-doctor --ifaddrs)
rn_add_fuzz(NAME fuzz_ifaddrs SOURCE ${RN_FUZZ_DIR}/fuzz_ifaddrs.c
	CORPUS ${RN_FUZZ_DIR}/corpus/ifaddrs
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/gid.c ${CMAKE_SOURCE_DIR}/src/sysfs.c)
# the immediate data a peer writes with each part (proto.h)
rn_add_fuzz(NAME fuzz_imm SOURCE ${RN_FUZZ_DIR}/fuzz_imm.c CORPUS ${RN_FUZZ_DIR}/corpus/imm)
# a peer's bytes against a real listener: the lobby, the acceptor, its hook and QP checks
rn_add_fuzz(NAME fuzz_handshake SOURCE ${RN_FUZZ_DIR}/fuzz_handshake.c
	CORPUS ${RN_FUZZ_DIR}/corpus/handshake
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/conn.c ${CMAKE_SOURCE_DIR}/src/oob.c
	${CMAKE_SOURCE_DIR}/src/wire.c ${CMAKE_SOURCE_DIR}/src/qp.c ${CMAKE_SOURCE_DIR}/src/verbs.c
	${CMAKE_SOURCE_DIR}/src/log.c
	DEPENDS fake_verbs_full RUNS 5000)
# a pod view's sysfs text: GID table entries and attributes, netns_mode, PCI path, numa_node
rn_add_fuzz(NAME fuzz_sysfs SOURCE ${RN_FUZZ_DIR}/fuzz_sysfs.c CORPUS ${RN_FUZZ_DIR}/corpus/sysfs
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/sysfs.c ${CMAKE_SOURCE_DIR}/src/gid.c
	${CMAKE_SOURCE_DIR}/src/device.c ${CMAKE_SOURCE_DIR}/src/hca.c
	${CMAKE_SOURCE_DIR}/src/pci.c ${CMAKE_SOURCE_DIR}/src/verbs.c ${CMAKE_SOURCE_DIR}/src/log.c
	DEPENDS fake_verbs_full RUNS 10000)
# RAILNET_TOPO_XML: hwloc's XML import and topo.c's copy of the PCI tree
rn_add_fuzz(NAME fuzz_topo SOURCE ${RN_FUZZ_DIR}/fuzz_topo.c CORPUS ${RN_FUZZ_DIR}/corpus/topo
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/topo.c ${CMAKE_SOURCE_DIR}/src/hwloc_shim.c
	${CMAKE_SOURCE_DIR}/src/pci.c ${CMAKE_SOURCE_DIR}/src/log.c
	LIBS rn_hwloc DEPENDS rn_hwloc_archive)
# NCCL_TOPO_FILE: topo.c's reader of NCCL's topology XML, on a fixed hwloc topology
rn_add_fuzz(NAME fuzz_nccltopo SOURCE ${RN_FUZZ_DIR}/fuzz_nccltopo.c
	CORPUS ${RN_FUZZ_DIR}/corpus/nccltopo
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/topo.c ${CMAKE_SOURCE_DIR}/src/hwloc_shim.c
	${CMAKE_SOURCE_DIR}/src/pci.c ${CMAKE_SOURCE_DIR}/src/log.c
	LIBS rn_hwloc DEPENDS rn_hwloc_archive)
# railnet-bench's command line (built only where MPI is: bench/railnet-bench/CMakeLists.txt)
if(TARGET railnet_bench_core)
	rn_add_fuzz(NAME fuzz_bench_args SOURCE ${RN_FUZZ_DIR}/fuzz_bench_args.c
		CORPUS ${RN_FUZZ_DIR}/corpus/bench_args
		CORE_SOURCES ${CMAKE_SOURCE_DIR}/bench/railnet-bench/args.c
		LIBS railnet_bench_core)
endif()
# railnet-doctor's command line and its --gpus list
rn_add_fuzz(NAME fuzz_doctor_args SOURCE ${RN_FUZZ_DIR}/fuzz_doctor_args.c
	CORPUS ${RN_FUZZ_DIR}/corpus/doctor_args
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/tools/doctor/opts.c ${CMAKE_SOURCE_DIR}/src/pci.c
	LIBS railnet_doctor_opts)
# the memory a peer writes on the data path: CTS FIFO, delivery report, control words and size
# records, with a connected pair over softverbs per input (xfer.c instrumented; the rest of
# railnet from railnet_core through rn_testsupport)
rn_add_fuzz(NAME fuzz_peer SOURCE ${RN_FUZZ_DIR}/fuzz_peer.c CORPUS ${RN_FUZZ_DIR}/corpus/peer
	CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/xfer.c
	LIBS rn_testsupport DEPENDS softverbs-lib sv-mkview ITERATIONS 300 RUNS 500)

# every libFuzzer binary, for `make fuzz`
get_property(rn_fuzzers GLOBAL PROPERTY RN_FUZZERS)
if(rn_fuzzers)
	add_custom_target(fuzzers DEPENDS ${rn_fuzzers})
endif()
