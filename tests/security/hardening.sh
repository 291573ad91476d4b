#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the library, the examples and the benchmarks as a release build,
# installs the library into a fresh prefix, and reads every binary with
# readelf to prove that it is hardened (docs/security.md):
#  - the installed library: full RELRO (a GNU_RELRO segment and BIND_NOW),
#    stack protector calls, fortified libc calls, no STATIC_TLS (a late
#    dlopen() must not need static TLS room), no text relocations;
#  - every program: PIE, full RELRO, a non-executable stack;
#  - every object file and the installed library: the CET property (IBT
#    and SHSTK, -fcf-protection); every program too when the C library's
#    start files carry it (Debian 12's do not, and the linker keeps only
#    what all inputs have);
#  - every source compiled with -fstack-clash-protection and
#    _FORTIFY_SOURCE=3 (=2 before gcc 12), which leave no mark to read.
# Usage: hardening.sh SOURCE_DIR WORK_DIR C_COMPILER [BUILD_TYPE]
set -eu
src=$1
work=$2
cc=$3
type=${4:-Release}

command -v readelf >/dev/null || { echo "no readelf (binutils)"; exit 77; }
rm -rf "$work"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE="$type" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
	-DDEVRES_BUILD_TESTS=OFF -DDEVRES_BUILD_EXAMPLES=ON \
	-DDEVRES_BUILD_BENCH=ON -DDEVRES_BUILD_MAN=OFF >/dev/null
cmake --build "$work/build" -j2 >/dev/null
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null

lib=$(find "$work/prefix" -name 'libdevres.so.*.*.*' -type f)
[ -n "$lib" ] || { echo "no libdevres.so installed under $work/prefix"; exit 1; }
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
cet_feature() { # file: the x86 feature property, if any
	readelf -nW "$1" 2>/dev/null | sed -n 's/.*x86 feature: //p'
}

echo "== $lib ($type)"
readelf -lW "$lib" >"$work/phdrs"
readelf -dW "$lib" >"$work/dynamic"
readelf --dyn-syms -W "$lib" >"$work/dynsyms"
check "GNU_RELRO segment (-z relro)" grep -q 'GNU_RELRO' "$work/phdrs"
check "FLAGS BIND_NOW (-z now)" grep -Eq '\(FLAGS\).*BIND_NOW' "$work/dynamic"
check "FLAGS_1 NOW (-z now)" grep -Eq '\(FLAGS_1\).*NOW' "$work/dynamic"
check "FLAGS_1 NODELETE (-z nodelete: dlclose() leaves it loaded)" \
	grep -Eq '\(FLAGS_1\).*NODELETE' "$work/dynamic"
check "no STATIC_TLS (no initial-exec TLS)" \
	sh -c "! grep -q STATIC_TLS '$work/dynamic'"
check "no TEXTREL" sh -c "! grep -q TEXTREL '$work/dynamic'"
check "__stack_chk_fail (-fstack-protector-strong)" \
	grep -q ' __stack_chk_fail' "$work/dynsyms"
check "__*_chk libc calls (_FORTIFY_SOURCE)" \
	grep -Eq ' __[a-z]+_chk(@| )' "$work/dynsyms"

echo "== programs"
progs=$(find "$work/build" -path '*/CMakeFiles' -prune -o -type f -perm -u+x \
	-print | while read -r f; do
	readelf -hW "$f" 2>/dev/null | grep -q 'Type:.*DYN' || continue
	readelf -dW "$f" | grep -q '(FLAGS_1).*PIE' || \
		readelf -lW "$f" | grep -q 'INTERP' || continue
	echo "$f"
done)
nprog=$(echo "$progs" | grep -c . || true)
[ "$nprog" -ge 2 ] || { echo "MISSING: programs to read ($nprog)"; fail=1; }
bad=""
for f in $progs; do
	readelf -dW "$f" >"$work/d"
	readelf -lW "$f" >"$work/l"
	grep -Eq '\(FLAGS_1\).*PIE' "$work/d" || bad="$bad ${f##*/}:no-PIE"
	grep -q GNU_RELRO "$work/l" || bad="$bad ${f##*/}:no-RELRO"
	grep -Eq '\(FLAGS\).*BIND_NOW' "$work/d" || bad="$bad ${f##*/}:no-BIND_NOW"
	grep -A1 GNU_STACK "$work/l" | grep -q 'RWE' && bad="$bad ${f##*/}:exec-stack"
done
check "$nprog programs: PIE, RELRO, BIND_NOW, no executable stack${bad:+ (not:$bad)}" \
	test -z "$bad"

echo "== CET (-fcf-protection=full)"
if echo 'int main(void){return 0;}' |
	"$cc" -fcf-protection=full -x c -c -o "$work/cet.o" - 2>/dev/null &&
	cet_feature "$work/cet.o" | grep -q IBT; then
	nobj=0
	noncet=""
	for o in $(find "$work/build" -name '*.o'); do
		nobj=$((nobj + 1))
		case $(cet_feature "$o") in
		*IBT*SHSTK*) ;;
		*) noncet="$noncet ${o##*/}" ;;
		esac
	done
	check "IBT and SHSTK in all $nobj object files${noncet:+ (not:$noncet)}" \
		test -z "$noncet"
	# The library is linked without the C library's start files, so it
	# has the property whenever the compiler's crtbeginS.o has it.
	crtbegin=$("$cc" -print-file-name=crtbeginS.o)
	if cet_feature "$crtbegin" | grep -q IBT; then
		check "IBT and SHSTK in ${lib##*/}" sh -c \
			"readelf -nW '$lib' | grep -q 'x86 feature: IBT, SHSTK'"
	else
		echo "note: $crtbegin carries no CET property, so the library cannot"
	fi
	crti=$("$cc" -print-file-name=crti.o)
	if cet_feature "$crti" | grep -q IBT; then
		for f in $progs; do
			check "IBT and SHSTK in ${f##*/}" sh -c \
				"readelf -nW '$f' | grep -q 'x86 feature: IBT, SHSTK'"
		done
	else
		echo "note: $crti carries no CET property, so no program linked" \
			"with it can; their objects above do"
	fi
else
	echo "note: $cc has no -fcf-protection=full on this target"
fi

echo "== compile commands"
# gcc 12 and later (not clang, which defines __GNUC__ too): level 3.
fortify=2
macros=$("$cc" -dM -E -x c /dev/null)
gnuc=$(echo "$macros" | sed -n 's/^#define __GNUC__ //p')
if ! echo "$macros" | grep -q __clang__ && [ "${gnuc:-0}" -ge 12 ]; then
	fortify=3
fi
ncmd=$(grep -c '"command"' "$work/build/compile_commands.json")
nclash=$(grep -c '"command".*-fstack-clash-protection' \
	"$work/build/compile_commands.json" || true)
nfort=$(grep -c "\"command\".*-D_FORTIFY_SOURCE=$fortify" \
	"$work/build/compile_commands.json" || true)
check "-fstack-clash-protection on all $ncmd sources ($nclash)" \
	test "$nclash" -eq "$ncmd"
check "-D_FORTIFY_SOURCE=$fortify on all $ncmd sources ($nfort)" \
	test "$nfort" -eq "$ncmd"
exit $fail
