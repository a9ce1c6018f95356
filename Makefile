# SPDX-License-Identifier: MIT
# Thin wrapper around CMake. The quick start is `make demo` and `make test`.
#
#   make [build]     install missing Debian packages (scripts/deps.sh), make the
#                    cached Python venv (scripts/pyvenv.sh), configure (once)
#                    and build into $(BUILD)
#   make demo        build quietly (output in $(BUILD)/build.log), record the
#                    example, print where the trace is (scripts/demo.sh;
#                    V=1 prints everything)
#   make test        build, then run every test through ctest
#   make bench       build and run the benchmarks
#   make asan        ASan+UBSan build in build-asan, run the unit tests
#   make tsan        TSan build in build-tsan, run the tests labelled tsan
#   make fuzz        clang + libFuzzer build in build-fuzz (fuzz/fuzz_*)
#   make validate    check the traces in $(BUILD)/traces with ../shared's validators
#   make install     cmake --install (PREFIX=/some/where to choose the prefix)
#   make clean       remove the build directories
#
# Variables: BUILD (build dir), JOBS (parallel jobs), CMAKE_FLAGS (extra
# configure flags, e.g. -DACT_WITH_ZLIB=OFF), CTEST_FLAGS (e.g. -R Types).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
# No "Entering/Leaving directory" lines from the makes that CMake runs.
MAKEFLAGS += --no-print-directory

.PHONY: all build demo test bench install clean asan tsan fuzz validate deps pyvenv

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

# deps first: on a fresh Debian machine the configure step then finds them.
build: deps pyvenv $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Debian packages the full demo and tests use (scripts/deps.sh; fast when
# installed; ACT_NO_DEPS=1 skips it).
deps:
	@sh ./scripts/deps.sh

# The cached Python venv (torch, pytest; scripts/pyvenv.sh; fast when it is
# there; ACT_NO_VENV=1 skips it and the Python tests skip). A failure never
# stops the C build: the Python test then names the command to run.
pyvenv:
	@sh ./scripts/pyvenv.sh >/dev/null || echo "warning: scripts/pyvenv.sh failed: the Python tests will fail until it succeeds"

# The demo needs no Python venv: only the Debian packages, then
# scripts/demo.sh configures and builds with its output in a log.
demo: deps
	@JOBS=$(JOBS) CMAKE_FLAGS='$(CMAKE_FLAGS)' ./scripts/demo.sh --build $(if $(V),-v) $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS) $(CTEST_FLAGS)

bench: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target run_bench

asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DACT_SANITIZE=address,undefined -DACT_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure --no-tests=error -j $(JOBS) -LE nosan $(CTEST_FLAGS)

tsan:
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACT_SANITIZE=thread -DACT_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure --no-tests=ignore -j $(JOBS) -L tsan $(CTEST_FLAGS)

fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DACT_FUZZ=ON -DACT_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS)
	@ls build-fuzz/fuzz/fuzz_* 2>/dev/null || echo "no fuzz targets yet (fuzz/fuzz_*.c)"

validate:
	@sh ./scripts/validate-traces.sh $(BUILD)

install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
