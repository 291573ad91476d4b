#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every exported function has kernel-doc in its header: a /** block naming
it, with Context:, and Return: unless it returns void. Usage: SRCDIR"""
import re
import sys
from pathlib import Path

bad = 0
count = 0
for header in sorted(Path(sys.argv[1], "include", "devres").glob("*.h")):
    text = header.read_text()
    for m in re.finditer(r"DEVRES_API\s+([^;{]*?)\b([a-z_0-9]+)\s*\(", text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if m.group(2).startswith("__") or text[line_start] == "#":
            continue
        count += 1
        name, rettype = m.group(2), m.group(1).strip()
        before = text[: m.start()].rstrip()
        doc = None
        if before.endswith("*/"):
            start = before.rfind("/**")
            if start >= 0 and "*/" not in before[start:-2]:
                doc = before[start:]
        problems = []
        if doc is None:
            problems.append("no kernel-doc block")
        else:
            if not re.search(r"\*\s+" + re.escape(name) + r"\(\)\s+-\s+\S", doc):
                problems.append("first line is not '%s() - summary'" % name)
            if "Context:" not in doc:
                problems.append("no Context:")
            returns_void = rettype in ("void", "static inline void")
            if not returns_void and "Return:" not in doc:
                problems.append("no Return:")
        if problems:
            bad += 1
            print("%s: %s: %s" % (header.name, name, "; ".join(problems)))
print("%d exported functions, %d without complete kernel-doc" % (count, bad))
sys.exit(1 if bad else 0)
