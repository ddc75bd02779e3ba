# SPDX-License-Identifier: Apache-2.0
# Front door over CMake/CTest. Targets: all (default), run, test, lint, docs, bench, clean,
# softverbs (the userspace RDMA fabric alone: softverbs/README.md).
#   make SANITIZER=address|undefined|thread|address,undefined   sanitizer build (own build dir)
#   make CC=clang                                                 clang build (own build dir)
#   make V=1                                                      show compiler command lines
#   make WERROR=1                                                 -Werror (CI sets it)

CC        ?= cc
SANITIZER ?=
WERROR    ?= $(if $(filter true,$(CI)),1,0)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)

comma := ,
ccname := $(notdir $(firstword $(CC)))
ifeq ($(SANITIZER)$(ccname),cc)
BUILD ?= build
else ifeq ($(SANITIZER)$(ccname),gcc)
BUILD ?= build
else
BUILD ?= build-$(ccname)$(if $(SANITIZER),-$(subst $(comma),-,$(SANITIZER)))
endif

ifeq ($(V),1)
VERBOSE_FLAG := --verbose
endif

CMAKE_ARGS := -DCMAKE_C_COMPILER=$(CC) -DSANITIZER=$(SANITIZER) \
	-DRAILNET_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF)

.PHONY: all configure deps softverbs test run lint docs bench plot clean

all: configure
	cmake --build $(BUILD) -j $(JOBS) $(VERBOSE_FLAG)

configure:
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null

softverbs: configure
	cmake --build $(BUILD) --target softverbs -j $(JOBS) $(VERBOSE_FLAG)

deps:
	@./tools/install-deps.sh

test: deps
	$(MAKE) all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --output-junit ctest-junit.xml $(CTEST_ARGS)

run: deps
	$(MAKE) all
	BUILD=$(BUILD) ./tools/run.sh

lint:
	./tools/lint.sh

docs: all
	$(BUILD)/bin/railnet-envdoc > docs/env.md

bench: all
	BUILD=$(BUILD) ./bench/run.sh

plot:
	./bench/railnet-bench/plot.sh $(or $(PNG),busbw.png) $(FILES)

clean:
	rm -rf build build-*
