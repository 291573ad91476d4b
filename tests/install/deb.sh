#!/bin/sh
# SPDX-License-Identifier: MIT
# make package's .deb files, unpacked with dpkg -x into a scratch root (no
# installation on the machine), and a consumer built against that root
# through pkg-config and find_package. Usage: deb.sh BUILD_DIR SCRATCH SOURCE_DIR
set -eu
build=$1
root=$2
here=$3
cc=${CC:-cc}

rm -rf "$root" "$root-pkgs" "$root-cmake"
mkdir -p "$root" "$root-pkgs"
(cd "$build" && cpack -G DEB -B "$root-pkgs" >/dev/null)
rt=$(ls "$root-pkgs"/libdevres1_*.deb)
dev=$(ls "$root-pkgs"/libdevres-dev_*.deb)

echo "== contents"
# The runtime package holds the shared library and nothing else.
extra=$(dpkg-deb -c "$rt" | awk '{print $6}' | grep -v '/$' |
	grep -v '/libdevres\.so\.' || true)
[ -z "$extra" ] || { echo "libdevres1 holds more than the library: $extra" >&2; exit 1; }
for f in include/devres/devres.h libdevres.a libdevres.so pkgconfig/devres.pc \
	cmake/devres/devresConfig.cmake man3/devm_kmalloc.3 man7/devres.7; do
	dpkg-deb -c "$dev" | grep -q "$f" || { echo "libdevres-dev lacks $f" >&2; exit 1; }
done
dpkg-deb -f "$dev" Depends | grep -q '^libdevres1 (= ' ||
	{ echo "libdevres-dev does not depend on libdevres1" >&2; exit 1; }

dpkg -x "$rt" "$root"
dpkg -x "$dev" "$root"
libdir=$(dirname "$(find "$root" -name 'libdevres.so.1' | head -n 1)")

echo "== pkg-config from the unpacked packages, the root as sysroot"
pcdir=$(dirname "$(find "$root" -name devres.pc)")
# The .pc file names /usr; pkg-config drops -I/usr/include as a system one.
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror -I"$root/usr/include" -o "$root/consumer" \
	"$here/consumer.c" -L"$libdir" $(PKG_CONFIG_SYSROOT_DIR=$root \
	PKG_CONFIG_LIBDIR=$pcdir pkg-config --cflags --libs devres)
LD_LIBRARY_PATH=$libdir "$root/consumer"

echo "== find_package from the unpacked packages"
cmake -S "$here" -B "$root-cmake" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$root-cmake" >/dev/null
LD_LIBRARY_PATH=$libdir "$root-cmake/consumer"

echo "== man devm_kmalloc from the unpacked packages"
MANWIDTH=80 man -l "$root/usr/share/man/man3/devm_kmalloc.3" | grep -q 'devm_kmalloc'
