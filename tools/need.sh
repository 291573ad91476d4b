#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks for commands, not packages. What is missing is named, and
# installed with apt-get when this is root on a machine that has it.
# Usage: need.sh "command:debian-package ..."
missing_cmds=""
missing_pkgs=""
for pair in $1; do
	cmd=${pair%%:*}
	pkg=${pair#*:}
	case $cmd in
	*/*) [ -e "$cmd" ] && continue ;;
	*) command -v "$cmd" >/dev/null 2>&1 && continue ;;
	esac
	missing_cmds="$missing_cmds $cmd"
	missing_pkgs="$missing_pkgs $pkg"
done
[ -z "$missing_cmds" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	# Waits up to five minutes for another apt to let go of its lock.
	echo "missing:$missing_cmds; installing with apt-get:$missing_pkgs"
	apt="apt-get -o DPkg::Lock::Timeout=300"
	$apt update -qq && DEBIAN_FRONTEND=noninteractive \
		$apt install -y -qq $missing_pkgs >/dev/null && exit 0
	echo "apt-get could not install:$missing_pkgs" >&2
	exit 1
fi
echo "missing:$missing_cmds" >&2
if command -v apt-get >/dev/null 2>&1; then
	echo "install them with: sudo apt-get install -y$missing_pkgs" >&2
else
	echo "install them with your system's package manager" >&2
fi
exit 1
