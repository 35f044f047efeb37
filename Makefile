# SinkAttn: the two commands are `make run` and `make test` (see README.md).
# Both install what is missing (Debian packages), configure and build first.

BUILD_DIR  ?= build
# The sanitizer build (clang, ASan + UBSan, libFuzzer targets).
ASAN_BUILD_DIR ?= build-asan
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc)
PREFIX     ?= $(CURDIR)/install

export SINKATTN_BUILD_DIR := $(BUILD_DIR)
export SINKATTN_BUILD_TYPE := $(BUILD_TYPE)

.PHONY: all deps configure build build-asan run test test-asan docs install clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@scripts/configure.sh

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target all mlir-doc gpu-bundles

run: build
	@scripts/run-main.sh

# Every test: the regular build's suites, then the same suites under
# AddressSanitizer + UndefinedBehaviorSanitizer plus bounded fuzzing runs.
test: build build-asan
	@scripts/run-tests.sh $(BUILD_DIR) $(ASAN_BUILD_DIR)

build-asan: deps
	@SINKATTN_BUILD_DIR=$(ASAN_BUILD_DIR) scripts/configure.sh \
	  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
	  "-DSINKATTN_SANITIZE=address;undefined" -DSINKATTN_BUILD_FUZZERS=ON
	ASAN_OPTIONS=allow_user_poisoning=0 \
	  cmake --build $(ASAN_BUILD_DIR) -j $(JOBS) --target all mlir-doc gpu-bundles

test-asan: build-asan
	@scripts/run-tests.sh $(ASAN_BUILD_DIR)

# Regenerate docs/reference/ (dialect, op and pass reference) from TableGen.
docs: configure
	cmake --build $(BUILD_DIR) --target docs

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)
