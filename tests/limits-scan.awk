# SPDX-License-Identifier: MIT
# For tests/check-limits.sh: prints "path:struct.member" for each array
# member of a constant size of a struct or union declared at file level,
# and "path:name" for each thread-local array (__thread, _Thread_local,
# TLS_FAST), and "path:pool" for each pool of per-thread slots
# (DEVRES_TSLOTS, tslots.h). Comments and preprocessor lines are left out; a struct is
# named by its tag, or "anon".
BEGIN {
	opener = "^(typedef[ \t]+)?(static[ \t]+)?(struct|union)" \
		"([ \t]+[A-Za-z_][A-Za-z0-9_]*)?[ \t]*\\{"
	member = "[A-Za-z_][A-Za-z0-9_]*[ \t]*\\[[ \t]*" \
		"[A-Za-z0-9_ +*()/-]+\\][ \t]*(\\[[^]]*\\][ \t]*)*(;|,|:)"
}
function strip(s) {
	gsub(/\/\*.*\*\//, "", s)
	gsub(/\/\/.*/, "", s)
	return s
}
FNR == 1 { depth = 0; sname = ""; incomment = 0 }
{
	line = $0
	if (incomment) {
		if (line !~ /\*\//) next
		sub(/.*\*\//, "", line)
		incomment = 0
	}
	line = strip(line)
	if (line ~ /\/\*/) { sub(/\/\*.*/, "", line); incomment = 1 }
	if (line ~ /^[ \t]*#/) next
	# A struct or union opened at file level (its name, or the typedef's).
	if (depth == 0 && line ~ opener) {
		s = line
		sub(/^(typedef[ \t]+)?(static[ \t]+)?(struct|union)[ \t]*/, "", s)
		sub(/[ \t]*\{.*/, "", s)
		sname = s == "" ? "anon" : s
		instruct = 1
	} else if (depth == 0 && line ~ /\{/) {
		instruct = 0
	}
	# A pool of per-thread slots (tslots.h).
	if (depth == 0 && match(line, /DEVRES_TSLOTS\([A-Za-z_][A-Za-z0-9_]*/)) {
		v = substr(line, RSTART + 14, RLENGTH - 14)
		print FILENAME ":" v
	}
	if ((depth == 0 || instruct) && line ~ /(__thread|_Thread_local|TLS_FAST)/ &&
	    match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\[[^];]/)) {
		v = substr(line, RSTART, RLENGTH); sub(/[ \t]*\[.*/, "", v)
		print FILENAME ":" v
	} else if (instruct && depth >= 1 &&
	    match(line, member) &&
	    line !~ /[=(]/) {
		v = substr(line, RSTART, RLENGTH); sub(/[ \t]*\[.*/, "", v)
		print FILENAME ":" sname "." v
	}
	o = gsub(/\{/, "{", line); c = gsub(/\}/, "}", line)
	depth += o - c
	if (depth == 0) instruct = 0
}
