# SPDX-License-Identifier: MIT
# The README's two commands: `make demo` and `make check`.

PKGS := cmake ninja-build gcc g++ clang clang-format pkg-config valgrind \
	libcmocka-dev libclang-rt-14-dev
SOURCES = $(shell find include src tests examples bench -name '*.[ch]' 2>/dev/null)

.PHONY: all demo check deps format format-check build-% test-% clean

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

check: deps format-check test-dev test-asan test-tsan
	@echo "make check: all passed"

clean:
	rm -rf build
