#!/bin/sh
# SPDX-License-Identifier: MIT
# make package's .deb files installed with dpkg into a clean root (an
# empty dpkg database, no installation on the machine), then a consumer
# built against that root through pkg-config and find_package, and run.
# Usage: debian.sh DEB_DIR SCRATCH SOURCE_DIR
set -eu
debs=$1
root=$2
here=$3/tests/install
cc=${CC:-cc}

case $root in /*) ;; *) root=$PWD/$root ;; esac
rt=$(ls "$debs"/libdevres1_*.deb)
dev=$(ls "$debs"/libdevres-dev_*.deb)
rm -rf "$root" "$root-build"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root-build"
: >"$root/var/lib/dpkg/status"

echo "== dpkg --root $root -i"
# libc6 and the ldconfig trigger's owner are outside this root.
dpkg --root="$root" --force-not-root --force-depends --no-triggers \
	--force-script-chrootless -i "$rt" "$dev" >/dev/null
dpkg --root="$root" -l 'libdevres*' | grep -E '^ii +libdevres(0|-dev)' ||
	{ echo "packages not installed in $root" >&2; exit 1; }
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$multi
for f in "$libdir/libdevres.so.1" usr/share/man/man3/devm_kmalloc.3.gz \
	usr/share/man/man7/devres.7.gz usr/share/doc/libdevres1/copyright \
	usr/include/devres/version.h; do
	case $f in /*) ;; *) f=$root/$f ;; esac
	[ -e "$f" ] || { echo "not installed: $f" >&2; exit 1; }
done

echo "== the .pc file names /usr, without ../"
pc=$libdir/pkgconfig/devres.pc
grep -q '^prefix=/usr$' "$pc" || { echo "$pc: prefix is not /usr" >&2; exit 1; }
! grep -q '\.\./' "$pc" || { echo "$pc has a ../ path" >&2; exit 1; }

echo "== pkg-config, with the root as sysroot"
flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$libdir/pkgconfig \
	pkg-config --cflags --libs devres)
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Werror -I"$root/usr/include" -o "$root-build/consumer-pc" \
	"$here/consumer.c" $flags -L"$libdir"
LD_LIBRARY_PATH=$libdir "$root-build/consumer-pc"

echo "== find_package, with the root as prefix"
cmake -S "$here" -B "$root-build/cmake" -DCMAKE_PREFIX_PATH="$root/usr" \
	-DCMAKE_FIND_ROOT_PATH="$root" >/dev/null
cmake --build "$root-build/cmake" >/dev/null
LD_LIBRARY_PATH=$libdir "$root-build/cmake/consumer"

echo "== the runtime package's dependencies"
dpkg-deb -f "$rt" Depends | tee "$root-build/depends"
! grep -q urcu "$root-build/depends" ||
	{ echo "libdevres1 depends on liburcu" >&2; exit 1; }
