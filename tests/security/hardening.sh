#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the library as a release build, installs it into a fresh prefix,
# and reads the installed shared library with readelf to prove that it is
# hardened (docs/security.md): full RELRO (a GNU_RELRO segment and
# BIND_NOW), stack protector calls, fortified libc calls; and that every
# library source was compiled with -fstack-clash-protection, which leaves
# no mark readelf can see.
# Usage: hardening.sh SOURCE_DIR WORK_DIR C_COMPILER [BUILD_TYPE]
set -eu
src=$1
work=$2
cc=$3
type=${4:-Release}

command -v readelf >/dev/null || { echo "no readelf (binutils)"; exit 77; }
rm -rf "$work"
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE="$type" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
	-DDEVRES_BUILD_TESTS=OFF -DDEVRES_BUILD_EXAMPLES=OFF \
	-DDEVRES_BUILD_BENCH=OFF >/dev/null
cmake --build "$work/build" -j2 >/dev/null
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null

lib=$(find "$work/prefix" -name 'libdevres.so.*.*.*' -type f)
[ -n "$lib" ] || { echo "no libdevres.so installed under $work/prefix"; exit 1; }
echo "== $lib ($type)"
fail=0
check() { # what, command...
	what=$1
	shift
	if "$@" >/dev/null; then
		echo "ok: $what"
	else
		echo "MISSING: $what"
		fail=1
	fi
}
readelf -lW "$lib" >"$work/phdrs"
readelf -dW "$lib" >"$work/dynamic"
readelf --dyn-syms -W "$lib" >"$work/dynsyms"
check "GNU_RELRO segment (-z relro)" grep -q 'GNU_RELRO' "$work/phdrs"
check "FLAGS BIND_NOW (-z now)" grep -Eq '\(FLAGS\).*BIND_NOW' "$work/dynamic"
check "FLAGS_1 NOW (-z now)" grep -Eq '\(FLAGS_1\).*NOW' "$work/dynamic"
check "__stack_chk_fail (-fstack-protector-strong)" \
	grep -q ' __stack_chk_fail' "$work/dynsyms"
check "__*_chk libc calls (-D_FORTIFY_SOURCE=2)" \
	grep -Eq ' __[a-z]+_chk(@| )' "$work/dynsyms"

# -fstack-clash-protection: on the command line of every library source.
nsrc=$(find "$src/src" -name '*.c' | wc -l)
nclash=$(grep -c '"command".*-fstack-clash-protection' \
	"$work/build/compile_commands.json" || true)
check "-fstack-clash-protection on all $nsrc sources ($nclash)" \
	test "$nclash" -eq "$nsrc"
exit $fail
