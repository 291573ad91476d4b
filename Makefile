# SPDX-License-Identifier: MIT
# The README's two commands: `make demo` and `make check`.

PKGS := cmake ninja-build gcc g++ clang clang-format clang-tidy pkg-config \
	valgrind libcmocka-dev libclang-rt-14-dev python3 liburcu-dev
SOURCES = $(shell find include src tests examples bench fuzz -name '*.[ch]' 2>/dev/null)

.PHONY: all demo check deps format format-check tidy build-% test-% clean \
	fuzz fuzz-check soak memcheck

all: build-dev

# Installs missing Debian packages when run as root; otherwise says how.
deps:
	@missing=""; for p in $(PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
		else \
			echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
		fi; \
	fi

build-%: deps
	cmake --preset $* >/dev/null
	cmake --build --preset $*

test-%: build-%
	ctest --preset $* -j2

demo: build-dev
	./build/dev/examples/demo

format:
	clang-format -i $(SOURCES)

format-check: deps
	clang-format --dry-run --Werror $(SOURCES)

# The library's sources under .clang-tidy, with the dev build's flags.
tidy: build-dev
	clang-tidy -p build/dev --quiet --warnings-as-errors='*' src/*/*.c

check: deps format-check test-dev tidy test-asan test-tsan fuzz-check memcheck
	@echo "make check: all passed"

# libFuzzer over the model interpreter (fuzz/), built with clang on its own.
SECONDS ?= 60
fuzz: deps
	cmake -S fuzz -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang >/dev/null
	cmake --build build/fuzz
	mkdir -p build/fuzz/corpus
	./build/fuzz/fuzz-devres -max_total_time=$(SECONDS) -max_len=2048 \
		-print_final_stats=1 -artifact_prefix=build/fuzz/ \
		build/fuzz/corpus fuzz/corpus >build/fuzz/fuzz.log 2>&1 || \
		{ tail -n 60 build/fuzz/fuzz.log; exit 1; }
	@grep -E '^(Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added))' \
		build/fuzz/fuzz.log

# 60 seconds of fuzzing when the libFuzzer runtime (libclang-rt-14-dev) exists.
fuzz-check:
	@if echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
		clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then \
		$(MAKE) --no-print-directory fuzz SECONDS=60; \
	else echo "fuzz: no libFuzzer runtime (libclang-rt-14-dev), skipped"; fi

# Longer runs: 10^8 model operations from a fresh seed, 8 x 10^7 chaos,
# ten minutes of fuzzing.
SOAK_OPS ?= 100000000
soak: build-dev
	MODEL_OPS=$(SOAK_OPS) MODEL_SEED=$$(date +%s) ./build/dev/tests/test-model
	CHAOS_OPS=10000000 ./build/dev/tests/test-chaos
	$(MAKE) --no-print-directory fuzz SECONDS=600

# valgrind over the unit tests, in a dev build without sanitizers.
memcheck: deps
	cmake --preset dev -B build/memcheck \
		-DCMAKE_PROJECT_INCLUDE=$(CURDIR)/tests/memcheck.cmake >/dev/null
	cmake --build build/memcheck
	rm -f build/memcheck/Testing/Temporary/MemoryChecker.*
	cd build/memcheck && ctest -T memcheck -L unit -E '^(headers|exports)$$' \
		-j2 --output-on-failure
	@! grep -lE '(definitely|indirectly) lost: [1-9]|ERROR SUMMARY: [1-9]' \
		build/memcheck/Testing/Temporary/MemoryChecker.*.log

clean:
	rm -rf build
