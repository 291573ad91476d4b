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

# valgrind over the unit tests, in a dev build without sanitizers; the
# shell-script tests among them (headers ... managed-kinds, own-fds) would
# check the shell, not the library.
# test-hostile-stream-fd runs, with glibc's conversion steps of a ",ccs="
# stream, which glibc keeps past fclose(), suppressed (tests/memcheck.supp).
# test-hostile-args, test-hostile-scalars, test-kc-hostile-args and
# test-pages are left to ASan (and TSan: test-kc-hostile-args and
# test-pages; the two others check their leaked threads themselves in the
# dev and ASan builds): their children of fork() exit
# holding objects by design (each of the calls runs in a child holding its
# fixture, and a generated call drops what it was granted: a
# devres_alloc_named() or platform_device_alloc() of a hostile scalar; a
# child forked while another thread is between making a node and
# recording it inherits that node unreachable), which valgrind's leak
# check counts against the child (its exit status 99, a failed cell).
# test-hostile-scalars with one value per argument, 184 cells, has 3 such
# cells and some 50 s of CPU under valgrind, past the stage's budget.
# test-posix-fd-states, test-posix-mmap-hand and test-posix-fd-hand check
# what the kernel does with the calls the library interposes, which
# valgrind emulates otherwise: its close_range() leaves its own
# descriptors in the range open and it takes MAP_FIXED_NOREPLACE for a
# hint; and test-posix-fd-hand forks while a worker makes managed
# descriptors, so a child may inherit a node made but not yet listed,
# unreachable, as test-pages' children do. test-revocable-fork's
# children end by pthread_exit() from the main thread, whose stack held
# the parent's devices: their names, inherited, are unreachable there.
# test-posix-own-fds-race, test-pci-uio-fork, test-pci-scan-fork and
# test-hostile-fork-held are races against fork() and against a closing,
# rescanning or registering thread, hundreds of rounds, which valgrind
# runs one thread at a time (20 to 35 s each): ASan, LeakSanitizer and
# TSan run them.
# test-hostile-limits-all and test-hostile-counters drive an interrupt
# line's disable depth and a revocable's references to their limits, 2^20
# and 2^24 calls, 15 s of CPU each under valgrind: the calls at and past
# their limits (the cheaper ones too: held locks, work slots, revocable
# depth) are ASan's (and, in test-hostile-limits-all, TSan's, but for the
# 2^24 references: one thread's loop), the same calls below the limits
# valgrind's in test-irq-* and test-revocable*.
# test-hostile-signals-nodes's handlers run where valgrind lets a signal
# in, between its blocks: 0 to 4 in a cell's 300 ms, and a cell without
# one fails; ASan runs hundreds in each. test-hostile-signals-states
# raises its signal from inside the program's malloc() (its own
# definition, going on to libc's) and counts a handler's allocations
# there: valgrind replaces malloc() with its own, so neither happens;
# ASan and TSan count through their allocator hooks.
# test-pci-hostile-tree-ro forks a child while another thread is parked
# inside a managed enable's write: the child inherits what that thread
# holds, unreachable from the child's own thread, and valgrind's leak
# check fails the child (exit 99). test-hostile-wait-loops forks a child
# for each of its 324 cells, whose two to four threads wait for one
# another under a 10 s alarm, and valgrind runs them one at a time.
# test-hostile-wait-revoke is its sibling (106 cells, the same chains).
# test-hostile-states-calls forks a child for each of its 1005 cells:
# under valgrind, past its 120 s; test-hostile-states-cross for each of
# its 108, 28 s there. test-kc-states, test-kc-object-states,
# test-kc-registry-pairs and test-pci-ro-ops fork a child for each cell
# of theirs too (hundreds, each with valgrind's start and leak check:
# 7 to 14 s of CPU each), and so do test-hostile-wait-irq (the wait
# chains of test-hostile-wait-loops, 106 cells), test-pci-ro-fork,
# test-kc-pci-regions (10 to 22 s each there), test-hostile-wait-driver,
# test-kc-wait-added and test-pci-wait-vectors (a child for each of
# their 3, 15 and 6 cells of waits under a 10 s alarm).
# test-kc-registries-fork's
# children, forked while other threads are inside a registry, inherit what
# those threads hold, unreachable from the child's own thread: valgrind's
# leak check fails them, as test-pci-hostile-tree-ro's.
# test-hostile-model-life races each start of a life from two threads
# for thousands of rounds (minutes under valgrind); test-pci-tree-toctou
# forks a child for each of its 80 cells. The checks that are
# scripts (fork-locks, wait-sites, allocs, states-calls-whole, stdio,
# limits-whole, plain-release) read the tree; valgrind would check the
# shell. ASan runs every one of the
# tests left out here, TSan those of them labelled tsan.
# It runs in the dev build, which the dev stage has built: ctest's memcheck
# mode reads its valgrind command from DartConfiguration.tcl, written here
# (tests/memcheck.conf) rather than by include(CTest), which would add
# dashboard targets to every build.
memcheck: build-dev
	sed -e 's|@SRC@|$(CURDIR)|' -e 's|@BUILD@|$(CURDIR)/build/dev|' \
		tests/memcheck.conf >build/dev/DartConfiguration.tcl
	rm -f build/dev/Testing/Temporary/MemoryChecker.*
	cd build/dev && ctest -T memcheck -L unit \
		-E '^(headers|exports|kerneldoc|doc-links|manpages|layers|managed-kinds|own-fds|test-hostile-args|test-hostile-scalars|test-kc-hostile-args|test-pages|test-posix-fd-states|test-posix-mmap-hand|test-posix-fd-hand|test-revocable-fork|test-posix-own-fds-race|test-pci-uio-fork|test-pci-scan-fork|test-hostile-fork-held|test-hostile-limits-all|test-hostile-counters|test-hostile-signals-nodes|test-hostile-signals-states|test-pci-hostile-tree-ro|test-hostile-wait-loops|test-hostile-wait-revoke|test-hostile-states-calls|test-hostile-states-cross|test-kc-states|test-kc-object-states|test-kc-registry-pairs|test-pci-ro-ops|test-hostile-wait-irq|test-pci-ro-fork|test-kc-pci-regions|test-kc-registries-fork|test-hostile-wait-driver|test-kc-wait-added|test-pci-wait-vectors|test-hostile-model-life|test-pci-tree-toctou|fork-locks|wait-sites|allocs|states-calls-whole|stdio|limits-whole|plain-release)$$' \
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
