#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds tests/install/subproject, which uses libdevres through
# add_subdirectory(), with no C++ compiler, and runs its consumer; the
# parent's install installs nothing of libdevres.
# Usage: subproject.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
rm -rf "$build"
cmake -S "$src/tests/install/subproject" -B "$build" \
	-DDEVRES_SOURCE_DIR="$src" -DCMAKE_CXX_COMPILER=/nonexistent/c++ >/dev/null
cmake --build "$build" >/dev/null
"$build/consumer"
# The parent installs nothing of libdevres unless it sets DEVRES_INSTALL.
cmake --install "$build" --prefix "$build/prefix" >/dev/null
if [ -d "$build/prefix" ] && [ -n "$(find "$build/prefix" -type f)" ]; then
	echo "add_subdirectory installed files:" >&2
	find "$build/prefix" -type f >&2
	exit 1
fi
echo "add_subdirectory: the library alone, C only"
