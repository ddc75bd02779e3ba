# SPDX-License-Identifier: Apache-2.0
# Front door over CMake/CTest. Targets: all (default), run, test, lint, docs, bench, fuzz, arm64,
# clean, softverbs (the userspace RDMA fabric alone: softverbs/README.md).
#   make SANITIZER=address|undefined|thread|address,undefined   sanitizer build (own build dir)
#   make CC=clang                                                 clang build (own build dir)
#   make V=1                                                      show compiler command lines
#   make WERROR=1                                                 -Werror (CI sets it)
#   make fuzz FUZZ_TIME=600 FUZZ_TARGETS="fuzz_wire ..."          libFuzzer sessions in a clang
#       build (FUZZ_BUILD, default build-clang): each target FUZZ_TIME seconds (default 600; all
#       targets by default), new inputs merged into test/fuzz/corpus/<dir>/ with -merge=1, a
#       failing input kept in test/fuzz/regress/<dir>/ (test/fuzz/fuzz.sh grow)

CC        ?= cc
SANITIZER ?=
WERROR    ?= $(if $(filter true,$(CI)),1,0)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_TIME ?= 600
FUZZ_TARGETS ?=

comma := ,
ccname := $(notdir $(firstword $(CC)))
ifeq ($(SANITIZER)$(ccname),cc)
BUILD ?= build
else ifeq ($(SANITIZER)$(ccname),gcc)
BUILD ?= build
else
BUILD ?= build-$(ccname)$(if $(SANITIZER),-$(subst $(comma),-,$(SANITIZER)))
endif
FUZZ_BUILD ?= build-clang$(if $(SANITIZER),-$(subst $(comma),-,$(SANITIZER)))

ifeq ($(V),1)
VERBOSE_FLAG := --verbose
endif

CMAKE_ARGS := -DCMAKE_C_COMPILER=$(CC) -DSANITIZER=$(SANITIZER) \
	-DRAILNET_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF)
FUZZ_CMAKE_ARGS := -DCMAKE_C_COMPILER=clang -DSANITIZER=$(SANITIZER) \
	-DRAILNET_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF)

.PHONY: all configure deps softverbs test run lint docs bench plot fuzz arm64 clean

all: configure
	cmake --build $(BUILD) -j $(JOBS) $(VERBOSE_FLAG)

configure:
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null

softverbs: configure
	cmake --build $(BUILD) --target softverbs -j $(JOBS) $(VERBOSE_FLAG)

deps:
	@./tools/install-deps.sh

# tools/ctest.sh: scratch folders on a RAM file system and python3 resolved once (faster only)
test: deps
	$(MAKE) all
	./tools/ctest.sh $(BUILD) --output-on-failure -j $(JOBS) --output-junit ctest-junit.xml \
		$(CTEST_ARGS)

run: deps
	$(MAKE) all
	BUILD=$(BUILD) ./tools/run.sh

lint:
	./tools/lint.sh

docs: all
	$(BUILD)/bin/railnet-envdoc > docs/env.md

bench: all
	BUILD=$(BUILD) ./bench/run.sh

fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) $(FUZZ_CMAKE_ARGS) >/dev/null
	cmake --build $(FUZZ_BUILD) --target fuzzers -j $(JOBS) $(VERBOSE_FLAG)
	FUZZ_TIME=$(FUZZ_TIME) ./test/fuzz/fuzz.sh grow $(FUZZ_BUILD) $(FUZZ_TARGETS)

# the plugin for aarch64 with Debian's cross gcc, and its checks (tools/cross-arm64.sh)
arm64: deps all
	WERROR=$(WERROR) RN_SV_MKVIEW=$(BUILD)/bin/sv-mkview ./tools/cross-arm64.sh --check build-aarch64

plot:
	./bench/railnet-bench/plot.sh $(or $(PNG),busbw.png) $(FILES)

clean:
	rm -rf build build-*
