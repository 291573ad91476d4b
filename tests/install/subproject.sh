#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds tests/install/subproject, which uses libdevres through
# add_subdirectory(), with no C++ compiler, and runs its consumer.
# Usage: subproject.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
rm -rf "$build"
cmake -S "$src/tests/install/subproject" -B "$build" -G Ninja \
	-DDEVRES_SOURCE_DIR="$src" -DCMAKE_CXX_COMPILER=/nonexistent/c++ >/dev/null
cmake --build "$build" >/dev/null
"$build/consumer"
echo "add_subdirectory: the library alone, C only"
