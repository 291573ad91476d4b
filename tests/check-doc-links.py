#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every relative link in the Markdown documents resolves.

A link to a file (docs/*.md, README.md, bench/*.md, examples/**/*.md
linking to a source file, a test, another document) must name a file or
directory that exists; a link with an anchor (#...) must name a heading of
its target document, by the slug rules of GitHub's renderer: lower case,
punctuation other than '-' and '_' dropped, spaces made '-', a repeated
heading numbered -1, -2, ... Links with a scheme (https:, mailto:) are not
checked. bench/PERFORMANCE.head.md and bench/PERFORMANCE.others.md are
read where they end up: in docs/PERFORMANCE.md (bench/perf-doc.sh), their
links relative to docs/. Prints each broken link as file:line and exits 1 if there is any.

Usage: check-doc-links.py <source dir>
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"#{1,6} (.*)")


def slug(text):
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def headings(path):
    seen, out = {}, set()
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = None if fence else HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(1))
            if s in seen:
                seen[s] += 1
                s = f"{s}-{seen[s]}"
            else:
                seen[s] = 0
            out.add(s)
    return out


def main(root):
    os.chdir(root)
    docs = (glob.glob("docs/*.md") + ["README.md"] + glob.glob("bench/*.md")
            + glob.glob("examples/**/*.md", recursive=True))
    cache, bad, links = {}, 0, 0
    placed = {
        "bench/PERFORMANCE.head.md": "docs/PERFORMANCE.md",
        "bench/PERFORMANCE.others.md": "docs/PERFORMANCE.md",
    }
    for doc in docs:
        here = os.path.dirname(placed.get(doc, doc))
        fence = False
        with open(doc, encoding="utf-8") as f:
            lines = f.readlines()
        for no, line in enumerate(lines, 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                full = (os.path.normpath(os.path.join(here, path))
                        if path else placed.get(doc, doc))
                links += 1
                if not os.path.exists(full):
                    print(f"{doc}:{no}: {target}: no such file")
                    bad += 1
                    continue
                if not anchor or not full.endswith(".md"):
                    continue
                if full not in cache:
                    cache[full] = headings(full)
                if anchor not in cache[full]:
                    print(f"{doc}:{no}: {target}: no such heading")
                    bad += 1
    print(f"{links} relative links in {len(docs)} documents, {bad} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
