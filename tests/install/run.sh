#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the build into a fresh prefix, then builds and runs a small
# consumer twice: through find_package(devres) and through pkg-config.
# Usage: run.sh BUILD_DIR PREFIX SOURCE_DIR
set -eu
build=$1
prefix=$2
here=$3
cc=${CC:-cc}

rm -rf "$prefix" "$prefix-cmake"
cmake --install "$build" --prefix "$prefix" >/dev/null

echo "== find_package(devres)"
cmake -S "$here" -B "$prefix-cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix-cmake" >/dev/null
"$prefix-cmake/consumer"
"$prefix-cmake/kconsumer"

echo "== pkg-config devres"
pc=$(find "$prefix" -name devres.pc)
pcdir=$(dirname "$pc")
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs devres)
libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir devres)
case "$libdir" in "$prefix"/*) ;; *) echo "devres.pc is not relocatable: libdir=$libdir" >&2; exit 1 ;; esac
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Werror -o "$prefix-cmake/consumer-pc" "$here/consumer.c" $flags
LD_LIBRARY_PATH=$libdir "$prefix-cmake/consumer-pc"

echo "== pkg-config devres-kcompat"
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs devres-kcompat)
# shellcheck disable=SC2086
$cc -std=gnu11 -Wall -Werror -o "$prefix-cmake/kconsumer-pc" "$here/kconsumer.c" $flags
LD_LIBRARY_PATH=$libdir "$prefix-cmake/kconsumer-pc"
