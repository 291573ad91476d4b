#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every exported function has kernel-doc in its header: a /** block naming
it, with prose that says what it does, Context:, and Return: unless it
returns void. Usage: SRCDIR"""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(sys.argv[1], "tools")))
from kdoc2man import functions, headers, parse_doc  # noqa: E402

bad = 0
count = 0
for header in headers(sys.argv[1]):
    for name, proto, doc in functions(header.read_text()):
        count += 1
        rettype = proto[: proto.index(name)].strip()
        problems = []
        if doc is None:
            problems.append("no kernel-doc block")
        else:
            if not re.search(r"\*\s+" + re.escape(name) + r"\(\)\s+-\s+\S", doc):
                problems.append("first line is not '%s() - summary'" % name)
            if not any(line.strip() for line in parse_doc(doc)[2]):
                problems.append("no description (prose after the arguments)")
            if "Context:" not in doc:
                problems.append("no Context:")
            if rettype != "void" and "Return:" not in doc:
                problems.append("no Return:")
        if problems:
            bad += 1
            print("%s: %s: %s" % (header.name, name, "; ".join(problems)))
print("%d exported functions, %d without complete kernel-doc" % (count, bad))
sys.exit(1 if bad else 0)
