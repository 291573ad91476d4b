# SPDX-License-Identifier: MIT
# The README's two commands: `make demo` and `make check`.

PKGS := cmake ninja-build gcc g++ clang clang-format clang-tidy pkg-config \
	valgrind libcmocka-dev libclang-rt-14-dev python3 man-db groff-base dpkg liburcu-dev \
	abigail-tools
# What `make bench` needs beyond PKGS: the peers and the plotter.
BENCH_PKGS := libtalloc-dev libapr1-dev gnuplot-nox
# PCI: lspci -n to compare lspci-lite with; umockdev for the default /sys path.
PKGS += pciutils umockdev libumockdev-dev
# The VM of `make test-vm`: QEMU, a kernel with VFIO modules, busybox.
VM_PKGS := qemu-system-x86 linux-image-amd64 busybox-static cpio xz-utils
SOURCES = $(shell find include src tests examples bench fuzz -name '*.[ch]' 2>/dev/null)

.PHONY: all demo check test deps format format-check tidy build-% test-% clean \
	fuzz fuzz-check soak memcheck package symbols bench abi-baseline test-vm \
	test-vm-asan demo-vm test-vm-nvme

all: build-dev

# Installs missing Debian packages when run as root, saying which, and
# waits up to five minutes for another apt to let go of its lock;
# otherwise says what to install. None of them changes what the library
# links (liburcu is used only with -DDEVRES_WITH_URCU=ON).
APT = DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300
deps:
	@missing=""; for p in $(PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing with apt-get:$$missing"; \
			$(APT) update -qq && $(APT) install -y -qq $$missing >/dev/null || exit 1; \
		else \
			echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
		fi; \
	fi

# A new build directory uses Ninja when it is there, else make; one that
# exists keeps the generator it was made with.
ifneq ($(shell command -v ninja 2>/dev/null),)
export CMAKE_GENERATOR ?= Ninja
endif
# Builds use every core unless told otherwise (with Ninja or with make).
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)

# The sanitizer builds leave out the benchmarks, which no test runs: the
# dev build compiles them (make bench's release build measures them); and
# the man pages, which no test reads (the manpages test makes its own)
# and no one installs from a sanitizer build.
BUILD_FLAGS_asan = -DDEVRES_BUILD_BENCH=OFF -DDEVRES_BUILD_MAN=OFF
BUILD_FLAGS_tsan = -DDEVRES_BUILD_BENCH=OFF -DDEVRES_BUILD_MAN=OFF
build-%: deps
	cmake --preset $* -DDEVRES_TESTS_REQUIRED=ON $(BUILD_FLAGS_$*) >/dev/null
	cmake --build --preset $*

# ctest starts the tests that took longest first, from the times it keeps
# in Testing/Temporary; a build with none yet borrows the dev build's, so a
# long test does not start last and run alone on one CPU.
test-%: build-%
	@c=build/dev/Testing/Temporary/CTestCostData.txt; \
	t=build/$*/Testing/Temporary; \
	if [ -f $$c ] && [ ! -f $$t/CTestCostData.txt ]; then \
		mkdir -p $$t && cp $$c $$t/; fi
	ctest --preset $* -j2

# The quick loop: the dev build's tests, less those labelled "install"
# (they build and install the tree again: make check runs them).
test: build-dev
	ctest --preset dev -j2 -LE install

# The demo needs CMake, a build tool and a C compiler, and builds only
# itself and the library. ARGS are passed to it (make demo ARGS=--help).
DEMO_GEN = $(if $(shell command -v ninja 2>/dev/null),Ninja,Unix Makefiles)
DEMO_DIR = build/demo-$(if $(findstring Ninja,$(DEMO_GEN)),ninja,make)
demo:
	@sh tools/need.sh "cmake:cmake cc:gcc make:make"
	@mkdir -p build/logs
	@cmake -S . -B $(DEMO_DIR) -G "$(DEMO_GEN)" -DCMAKE_BUILD_TYPE=Release \
		-DDEVRES_BUILD_EXAMPLES=ON >build/logs/demo-build.log 2>&1 && \
	cmake --build $(DEMO_DIR) --target demo >>build/logs/demo-build.log 2>&1 || \
		{ cat build/logs/demo-build.log; exit 1; }
	./$(DEMO_DIR)/examples/demo $(ARGS)

# Real devices: QEMU's edu devices through VFIO, inside a VM
# (tests/vm/run.sh); the only place where anything opens /dev/vfio.
test-vm: build-dev
	@$(MAKE) --no-print-directory deps PKGS="$(VM_PKGS)"
	sh tests/vm/run.sh build/dev

# The same under AddressSanitizer (not part of make check: twice as long).
test-vm-asan: build-asan
	@$(MAKE) --no-print-directory deps PKGS="$(VM_PKGS)"
	sh tests/vm/run.sh build/asan

# The edu driver on two edu devices in the VM, alone; DEMO_VM=nvme: the
# NVMe driver (verified I/O at depth 1 and 32, unbind in the middle of
# I/O, then the kernel's own driver on the same controller).
DEMO_VM ?= edu
DEMO_VM_TESTS_edu = edu
DEMO_VM_TESTS_nvme = nvme nvme-qd32 nvme-unbind nvme-final nvme-kernel
demo-vm: build-dev
	@$(MAKE) --no-print-directory deps PKGS="$(VM_PKGS)"
	@VM_ONLY="$(DEMO_VM_TESTS_$(DEMO_VM))" VM_NVME_IOS=20000 \
		sh tests/vm/run.sh build/dev

# The NVMe driver's tests alone, with 100 000 verified I/Os per load
# (make check's VM stage runs them with 5000).
NVME_VM_TESTS = nvme nvme-poll1 nvme-qd32 nvme-queues nvme-poll nvme-seq nvme-sweep \
	nvme-unbind nvme-timeout nvme-prp nvme-final nvme-kernel
test-vm-nvme: build-dev
	@$(MAKE) --no-print-directory deps PKGS="$(VM_PKGS)"
	VM_ONLY="$(NVME_VM_TESTS)" VM_NVME_IOS=100000 VM_TIMEOUT=600 \
		sh tests/vm/run.sh build/dev

# Debian packages (libdevres1, libdevres-dev) from debian/, built with
# dpkg-buildpackage in a copy of the tree under build/deb/, checked with
# lintian, and installed into a clean root where a consumer is built.
# `make symbols` regenerates debian/libdevres1.symbols from the map.
DEB_VERSION = $(shell sed -n '1s/.*(\(.*\)).*/\1/p' debian/changelog)
package:
	@sh tools/need.sh "cmake:cmake cc:build-essential make:build-essential \
		dpkg-buildpackage:dpkg-dev dh:debhelper python3:python3 \
		lintian:lintian pkg-config:pkg-config"
	rm -rf build/deb && mkdir -p build/deb/libdevres-$(DEB_VERSION)
	tar --exclude=./build --exclude=./.git -cf - . | \
		tar -xf - -C build/deb/libdevres-$(DEB_VERSION)
	cd build/deb/libdevres-$(DEB_VERSION) && \
		dpkg-buildpackage -us -uc >../dpkg-buildpackage.log 2>&1 || \
		{ tail -n 40 ../dpkg-buildpackage.log; exit 1; }
	lintian --fail-on error,warning --info build/deb/*.changes
	sh tests/install/debian.sh build/deb build/deb/root .
	@ls build/deb/*.deb build/deb/*.tar.*

symbols:
	sh tools/gen-symbols.sh >debian/libdevres1.symbols

format:
	clang-format -i $(SOURCES)

format-check: deps
	clang-format --dry-run --Werror $(SOURCES)

# The library's sources under .clang-tidy, with the dev build's flags.
# clang does not know gcc's -mtls-dialect=gnu2: its compile commands drop it.
# Two files at a time per process, as many processes as cores: each file
# is its own analysis, and the stage's time was one core's.
tidy: build-dev
	@mkdir -p build/tidy
	sed 's/ -mtls-dialect=gnu2//g' build/dev/compile_commands.json \
		>build/tidy/compile_commands.json
	printf '%s\n' src/*/*.c | xargs -n2 -P$(CMAKE_BUILD_PARALLEL_LEVEL) \
		clang-tidy -p build/tidy --quiet --warnings-as-errors='*'

# One line per stage; each stage's output is in build/logs/<stage>.log.
STAGE = sh tools/stage.sh
SUB = $(MAKE) --no-print-directory
# The VM, clang-tidy and the fuzzers run side by side: QEMU's time limit
# is its own CPU time, not the clock's; the fuzzers keep one core busy for
# their fixed time, clang-tidy's processes take what is left; every other
# stage uses both cores by itself. The total is printed at
# the end, with the CPU time of all stages (stage.sh's .times files).
check: deps
	@mkdir -p build/logs && date +%s >build/.check-start
	@rm -f build/logs/*.log.times
	@$(STAGE) format $(SUB) format-check
	@$(STAGE) dev $(SUB) test-dev
	@$(STAGE) vm $(SUB) test-vm & vm=$$!; \
		$(STAGE) tidy $(SUB) tidy & tidy=$$!; \
		$(STAGE) fuzz $(SUB) fuzz-check; fuzz=$$?; \
		wait $$tidy; tidy=$$?; wait $$vm; vm=$$?; \
		[ $$fuzz = 0 ] && [ $$tidy = 0 ] && [ $$vm = 0 ]
	@$(STAGE) asan $(SUB) test-asan
	@$(STAGE) tsan $(SUB) test-tsan
	@$(STAGE) memcheck $(SUB) memcheck
	@t=$$(( $$(date +%s) - $$(cat build/.check-start) )); \
		c=$$(awk 'FNR == 2 { gsub(/[ms]/, " "); s += $$1 * 60 + $$2 + $$3 * 60 + $$4 } \
			END { printf "%d", s + 0.5 }' build/logs/*.log.times); \
		echo "make check: all passed in $$t s ($$((t / 60)) min $$((t % 60)) s), $$c s of CPU"

# libFuzzer over the model interpreter (fuzz/), built with clang on its own.
SECONDS ?= 60
PCI_SECONDS ?= 20
fuzz: deps
	cmake -S fuzz -B build/fuzz -DCMAKE_C_COMPILER=clang >/dev/null
	cmake --build build/fuzz
	mkdir -p build/fuzz/corpus
	./build/fuzz/fuzz-devres -max_total_time=$(SECONDS) -max_len=2048 \
		-print_final_stats=1 -artifact_prefix=build/fuzz/ \
		build/fuzz/corpus fuzz/corpus >build/fuzz/fuzz.log 2>&1 || \
		{ tail -n 60 build/fuzz/fuzz.log; exit 1; }
	@grep -E '^(Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added))' \
		build/fuzz/fuzz.log
	mkdir -p build/fuzz/corpus-pci
	./build/fuzz/fuzz-pci -max_total_time=$(PCI_SECONDS) -max_len=4096 \
		-print_final_stats=1 -artifact_prefix=build/fuzz/pci- \
		build/fuzz/corpus-pci fuzz/corpus-pci >build/fuzz/fuzz-pci.log 2>&1 || \
		{ tail -n 60 build/fuzz/fuzz-pci.log; exit 1; }
	@grep -E '^(Done|stat::(number_of_executed_units|average_exec_per_sec))' \
		build/fuzz/fuzz-pci.log

# 40 seconds of fuzzing (30 s of the model, 10 s of PCI) when the
# libFuzzer runtime (libclang-rt-14-dev) exists. From fuzz/corpus*, the
# model's fuzzer has by then all but 1 to 4 of the ~1420 edges that 60 s
# reach, PCI's all of its 139 (in 6 s); the longer runs are make soak's.
fuzz-check:
	@if echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
		clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then \
		$(MAKE) --no-print-directory fuzz SECONDS=30 PCI_SECONDS=10; \
	else echo "fuzz: no libFuzzer runtime (libclang-rt-14-dev), skipped"; fi

# Longer runs: 10^8 model operations from a fresh seed, 8 x 10^7 chaos,
# 10^5 free_irq() cycles against a raiser, 2000 rounds of each unmanaged
# release racing the device's, 3 s of signals in each cell of
# test-hostile-signals-nodes, ten minutes of fuzzing.
SOAK_OPS ?= 100000000
soak: build-dev
	MODEL_OPS=$(SOAK_OPS) MODEL_SEED=$$(date +%s) ./build/dev/tests/test-model
	CHAOS_OPS=10000000 ./build/dev/tests/test-chaos
	IRQ_FREE_CYCLES=100000 ./build/dev/tests/test-irq-free
	UNMANAGED_RACE_ROUNDS=2000 ./build/dev/tests/test-unmanaged-release
	SIGNODES_CELL_MS=3000 ./build/dev/tests/test-hostile-signals-nodes
	STEPS_ALL=1 ./build/dev/tests/test-hostile-signals-steps
	$(MAKE) --no-print-directory fuzz SECONDS=600

# valgrind over the unit tests, in a dev build without sanitizers: the
# memory errors ASan does not see (reads of memory never written) in the
# binaries a user builds. Left to ASan (and TSan where labelled tsan):
# - the hostile tables (label hostile: tests/hostile and their kin) and
#   the tables of calls from two threads (label table: test-*-pairs,
#   test-*-race). valgrind runs one thread at a time, so the races they
#   exist for do not happen under it, and they were 170 s of its 400 s
#   of CPU;
# - the tests that fork a child for each of hundreds of cells, each with
#   valgrind's start and leak check (7 to 22 s of CPU each):
#   test-kc-states, test-kc-object-states, test-pci-ro-ops,
#   test-pci-ro-fork, test-kc-pci-regions, test-pci-tree-toctou,
#   test-unmanaged-release-ctx (33 s), test-kc-format-store (12 s),
#   test-kc-callback-acquire (114 forked cells);
# - the slowest under valgrind, 6 to 24 s each there (threads started by
#   the hundred, forked cells, races of many rounds), left to ASan and
#   TSan, which run them: test-ledger, test-pci-tree-in-use,
#   test-pci-ro-protect, test-revocable-unbind-loop,
#   test-group-release-pass, test-nodecache, test-dma-lazy-callback;
# - the tests whose children of fork() inherit, by design, what another
#   thread held at the fork (a node made but not yet listed, a parked
#   write's buffer), unreachable from the child's own thread, or end by
#   pthread_exit() from the main thread whose stack held the parent's
#   devices, which valgrind's leak check counts against the child (its
#   exit status 99, a failed cell): test-pages, test-posix-fd-hand,
#   test-revocable-fork, test-pci-hostile-tree-ro,
#   test-kc-registries-fork; and races against fork() of a closing or
#   rescanning thread, hundreds of rounds (20 to 35 s each there):
#   test-pci-uio-fork, test-pci-scan-fork;
# - test-posix-fd-states and test-posix-mmap-hand, which check what the
#   kernel does with the calls the library interposes, and valgrind
#   emulates otherwise (its close_range() leaves its own descriptors in
#   the range open; it takes MAP_FIXED_NOREPLACE for a hint), and
#   test-posix-vfork-streams, whose vfork() valgrind runs as a fork()
#   (the child's copy of a stream is then the child's own to free);
# - the checks that are scripts (headers ... plain-release): valgrind
#   would check the shell, not the library.
# glibc's conversion steps of a ",ccs=" stream, which glibc keeps past
# fclose(), are suppressed (tests/memcheck.supp).
# It runs in the dev build, which the dev stage has built: ctest's memcheck
# mode reads its valgrind command from DartConfiguration.tcl, written here
# (tests/memcheck.conf) rather than by include(CTest), which would add
# dashboard targets to every build.
memcheck: build-dev
	sed -e 's|@SRC@|$(CURDIR)|' -e 's|@BUILD@|$(CURDIR)/build/dev|' \
		tests/memcheck.conf >build/dev/DartConfiguration.tcl
	rm -f build/dev/Testing/Temporary/MemoryChecker.*
	cd build/dev && ctest -T memcheck -L unit -LE '^(hostile|table)$$' \
		-E '^(headers|exports|kerneldoc|doc-links|manpages|layers|managed-kinds|own-fds|fork-locks|wait-sites|allocs|states-calls-whole|stdio|limits-whole|plain-release|test-kc-states|test-kc-object-states|test-pci-ro-ops|test-pci-ro-fork|test-kc-pci-regions|test-pci-tree-toctou|test-unmanaged-release-ctx|test-kc-format-store|test-pages|test-posix-fd-hand|test-revocable-fork|test-pci-hostile-tree-ro|test-kc-registries-fork|test-pci-uio-fork|test-pci-scan-fork|test-posix-fd-states|test-posix-mmap-hand|test-kc-callback-acquire|test-posix-vfork-streams|test-ledger|test-pci-tree-in-use|test-pci-ro-protect|test-revocable-unbind-loop|test-group-release-pass|test-nodecache|test-dma-lazy-callback)$$' \
		-j2 --output-on-failure
	@! grep -lE '(definitely|indirectly) lost: [1-9]|ERROR SUMMARY: [1-9]' \
		build/dev/Testing/Temporary/MemoryChecker.*.log

# The benchmarks of a release build; writes docs/PERFORMANCE.md and plots.
bench: deps
	@$(MAKE) --no-print-directory deps PKGS="$(BENCH_PKGS)"
	cmake --preset release -DDEVRES_BUILD_BENCH=ON >/dev/null
	@c=$$(git rev-parse --short HEAD 2>/dev/null) || c='?'; \
	if [ "$$c" != '?' ] && ! git diff --quiet HEAD; then \
		c="$$c (and changes not committed)"; fi; \
	echo "$$c" >build/release/bench-commit
	cmake --build --preset release
	sh bench/perf-doc.sh

# A deliberate new ABI baseline, from the dev build: after a compatible
# addition, or with a SONAME bump (README, "ABI").
abi-baseline: build-dev
	mkdir -p abi
	so=$$(readelf -d build/dev/libdevres.so | \
		sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p'); \
	abidw --headers-dir include/devres --no-corpus-path --no-comp-dir-path \
		build/dev/$$so >abi/$$so.abi && echo "abi/$$so.abi written: commit it"

clean:
	rm -rf build
