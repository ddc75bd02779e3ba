# SPDX-License-Identifier: Apache-2.0
# Tests of docker/ (the drop-in image, its copy script, the Kubernetes manifests), label
# "docker". Included from test/CMakeLists.txt. Scripts exit 77 (skipped) with the reason
# when the machine cannot run them. The plugin's NEEDED list is checked once, by check_needed
# in test/integration/tests.cmake; docker_glibc_floor adds the symbol-version floor.
set(RN_DOCKER_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RN_DOCKER_DIR ${CMAKE_SOURCE_DIR}/docker)

find_program(RN_DOCKER_BASH bash)
find_program(RN_DOCKER_SH sh)
find_program(RN_DOCKER_PYTHON3 python3)
find_program(RN_DOCKER_SHELLCHECK shellcheck)
find_program(RN_DOCKER_YAMLLINT yamllint)

# The glibc floor the image promises: ARG GLIBC_FLOOR in docker/Dockerfile, the one source.
file(STRINGS ${RN_DOCKER_DIR}/Dockerfile rn_floor_line REGEX "^ARG GLIBC_FLOOR=")
string(REGEX REPLACE "^ARG GLIBC_FLOOR=" "" RN_GLIBC_FLOOR "${rn_floor_line}")

set(RN_DOCKER_TESTS)
macro(rn_docker_test name)
	add_test(NAME ${name} COMMAND ${ARGN})
	list(APPEND RN_DOCKER_TESTS ${name})
endmacro()

# A tool that is missing still registers the test, as a skip that says what to install.
macro(rn_docker_missing name what)
	rn_docker_test(${name} ${CMAKE_COMMAND} -E echo "SKIP: ${what} not installed")
	set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
endmacro()

if(RN_DOCKER_BASH)
	rn_docker_test(docker_install ${RN_DOCKER_BASH} ${RN_DOCKER_TEST_DIR}/test_install.sh
		${RN_DOCKER_DIR}/install.sh)
	rn_docker_test(docker_install_full ${RN_DOCKER_BASH}
		${RN_DOCKER_TEST_DIR}/test_install_full.sh ${RN_DOCKER_DIR}/install.sh)
	rn_docker_test(docker_glibc_chroot ${RN_DOCKER_BASH}
		${RN_DOCKER_TEST_DIR}/test_glibc_chroot.sh $<TARGET_FILE:nccl-net-railnet>)
	# The image is built from the sources with its own compiler, whatever this build's: only
	# the plain gcc build runs it (once per CI run, not once per suite).
	if(NOT SANITIZER AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
		rn_docker_test(docker_image_build ${RN_DOCKER_BASH}
			${RN_DOCKER_TEST_DIR}/test_image_build.sh ${CMAKE_SOURCE_DIR})
	endif()
else()
	rn_docker_missing(docker_install bash)
endif()

if(RN_DOCKER_SH)
	rn_docker_test(docker_glibc_floor ${RN_DOCKER_SH} ${RN_DOCKER_DIR}/glibc-floor.sh
		$<TARGET_FILE:nccl-net-railnet> ${RN_GLIBC_FLOOR})
endif()

if(RN_DOCKER_SHELLCHECK)
	file(GLOB rn_docker_scripts CONFIGURE_DEPENDS ${RN_DOCKER_DIR}/*.sh
		${RN_DOCKER_TEST_DIR}/*.sh)
	rn_docker_test(docker_shellcheck ${RN_DOCKER_SHELLCHECK} ${rn_docker_scripts})
else()
	rn_docker_missing(docker_shellcheck shellcheck)
endif()

if(RN_DOCKER_YAMLLINT)
	rn_docker_test(docker_yamllint ${RN_DOCKER_YAMLLINT} --strict
		-c ${RN_DOCKER_DIR}/k8s/.yamllint ${RN_DOCKER_DIR}/k8s)
else()
	rn_docker_missing(docker_yamllint yamllint)
endif()

if(RN_DOCKER_PYTHON3)
	rn_docker_test(docker_manifests ${RN_DOCKER_PYTHON3}
		${RN_DOCKER_TEST_DIR}/check_manifests.py ${CMAKE_SOURCE_DIR})
	rn_docker_test(docker_manifests_selftest ${RN_DOCKER_PYTHON3}
		${RN_DOCKER_TEST_DIR}/check_manifests.py --selftest ${CMAKE_SOURCE_DIR})
	# the custom resources against our schemas of their CRDs (test/docker/schemas/)
	rn_docker_test(docker_manifest_schemas ${RN_DOCKER_PYTHON3}
		${RN_DOCKER_TEST_DIR}/check_schemas.py ${CMAKE_SOURCE_DIR})
	rn_docker_test(docker_manifest_schemas_selftest ${RN_DOCKER_PYTHON3}
		${RN_DOCKER_TEST_DIR}/check_schemas.py --selftest ${CMAKE_SOURCE_DIR})
	# docker/k8s/doctor-job.py: a doctor Job from each MPIJob, and its bad input
	rn_docker_test(docker_doctor_job ${RN_DOCKER_BASH}
		${RN_DOCKER_TEST_DIR}/test_doctor_job.sh ${CMAKE_SOURCE_DIR})
	rn_docker_test(docker_dockerfile_lint ${RN_DOCKER_PYTHON3}
		${RN_DOCKER_TEST_DIR}/lint_dockerfile.py ${CMAKE_SOURCE_DIR})
	rn_docker_test(docker_dockerfile_lint_selftest ${RN_DOCKER_PYTHON3}
		${RN_DOCKER_TEST_DIR}/lint_dockerfile.py --selftest ${CMAKE_SOURCE_DIR})
else()
	rn_docker_missing(docker_manifests python3)
endif()

set_tests_properties(${RN_DOCKER_TESTS} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
	LABELS docker)
if(TEST docker_glibc_chroot)
	# First run with RN_DOCKER_CHROOT=1 downloads the root file systems.
	set_tests_properties(docker_glibc_chroot PROPERTIES TIMEOUT 900)
endif()
if(TEST docker_image_build)
	# buildah/docker use both cores for about 1-2 min: alone, so no timing test runs beside it
	set_tests_properties(docker_image_build PROPERTIES TIMEOUT 3600 RUN_SERIAL TRUE)
endif()
