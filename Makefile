# SinkAttn: the two commands are `make run` and `make test` (see README.md).
# Both install what is missing (Debian packages), configure and build first.

BUILD_DIR  ?= build
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc)
PREFIX     ?= $(CURDIR)/install

export SINKATTN_BUILD_DIR := $(BUILD_DIR)
export SINKATTN_BUILD_TYPE := $(BUILD_TYPE)

.PHONY: all deps configure build run test docs install clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@scripts/configure.sh

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target all mlir-doc gpu-bundles

run: build
	@scripts/run-main.sh

test: build
	@scripts/run-tests.sh

# Regenerate docs/reference/ (dialect, op and pass reference) from TableGen.
docs: configure
	cmake --build $(BUILD_DIR) --target docs

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR)
