#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the cases of test-hostile-args: one call of every DEVRES_API
function of the public headers, and of the inline functions of the headers
in INLINE_HEADERS, for each of its pointer arguments, that
argument replaced by the bad value the case is given and every other
argument a valid one from the test's fixture (arg_<kind>() in
test-hostile-args.c). Usage: gen-args.py INCLUDE_DIR OUT_FILE

With --kcompat H... after them, the cases are those of the inline
functions of the compat headers include/kcompat/linux/H (for
test-kc-hostile-args): every function a driver calls, not the headers'
own kcompat_* helpers."""
import re
import sys
from pathlib import Path

# Headers whose inline functions take objects and check them (io.h's
# accessors take register addresses, types.h's helpers take any value).
INLINE_HEADERS = {"device.h", "ioport.h", "pci.h", "platform.h"}

# Calls that answer with the bytes they left: all of them is the refusal.
BYTES_LEFT = {"copy_to_user", "copy_from_user"}

FUNC_PTR = {"dr_release_t", "dr_match_t", "irq_handler_t", "devres_log_sink_t",
            "work_func_t"}


def declarations(incdir):
    for h in sorted(Path(incdir, "devres").glob("*.h")):
        text = h.read_text()
        # Comments out, lines joined: clang-format breaks long declarations.
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"\s+", " ", text)
        for m in re.finditer(r"DEVRES_API ([^;{#]*?)\b([a-z_0-9]+)\((.*?)\)\s*"
                             r"(?:DEVRES_\w+(?:\([^)]*\))?\s*)*;", text):
            ret, name, params = m.group(1).strip(), m.group(2), m.group(3)
            if name.startswith("__"):
                continue
            yield ret, name, split_params(params)
        if h.name not in INLINE_HEADERS:
            continue
        for m in re.finditer(r"static inline ([^;{}#]*?)\b([a-z_0-9]+)\("
                             r"([^()]*)\)\s*\{", text):
            yield m.group(1).strip(), m.group(2), split_params(m.group(3))


def kcompat_declarations(incdir, headers):
    for name in headers:
        text = Path(incdir, "kcompat", "linux", name).read_text()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"\s+", " ", text)
        for m in re.finditer(r"static inline ([^;{}#]*?)\b([a-zA-Z_0-9]+)\("
                             r"([^()]*)\)\s*\{", text):
            if m.group(2).startswith(("kcompat_", "__")):
                continue
            yield m.group(1).strip(), m.group(2), split_params(m.group(3))


def split_params(s):
    out, depth, cur = [], 0, ""
    for c in s:
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += c == "("
        depth -= c == ")"
        cur += c
    if cur.strip() and cur.strip() != "void":
        out.append(cur.strip())
    return out


def param(p):
    """(type, name) of a parameter; the type with the name taken out."""
    if p == "...":
        return "...", "..."
    m = re.match(r"(.*\(\s*\*\s*)(\w+)(\s*\).*)", p)
    if m:
        return m.group(1) + m.group(3), m.group(2)
    m = re.match(r"(.*?[\s*])(\w+)$", p)
    return m.group(1).strip(), m.group(2)


def is_pointer(t):
    return "*" in t or t in FUNC_PTR or t == "va_list"


def kind(t):
    """The fixture a valid argument of type @t comes from."""
    base = re.sub(r"\b(const|volatile|__iomem)\b", "", t)
    base = re.sub(r"\s+", " ", base).strip()
    if "(" in t or t in FUNC_PTR:
        return "fn"
    m = re.match(r"struct (\w+) \*$", base)
    if m:
        return m.group(1)
    if base == "char *":
        return "str" if "const" in t else "buf"
    return "buf"


def main():
    incdir, out = sys.argv[1], sys.argv[2]
    thunks, cases = [], []
    if len(sys.argv) > 3 and sys.argv[3] == "--kcompat":
        decls = kcompat_declarations(incdir, sys.argv[4:])
    else:
        decls = declarations(incdir)
    for ret, name, params in decls:
        parsed = [param(p) for p in params]
        if any(t == "va_list" for t, _ in parsed):
            continue  # reached through its variadic twin
        for i, (t, pname) in enumerate(parsed):
            if not is_pointer(t):
                continue
            args = []
            for j, (tj, nj) in enumerate(parsed):
                if tj == "...":
                    continue
                if j == i:
                    args.append(f"({tj})bad")
                elif nj == "fmt":
                    args.append('"hostile"')
                elif is_pointer(tj):
                    args.append(f"({tj})arg_{kind(tj)}(\"{name}\", \"{nj}\")")
                else:
                    args.append(f"({tj})arg_int(\"{name}\", \"{nj}\")")
            call = f"{name}({', '.join(args)})"
            fn = f"t_{name}_{pname}"
            r = re.sub(r"\b(const|volatile)\b", "", ret).strip()
            if name in BYTES_LEFT:
                body = (f"\tunsigned long r = {call};\n\n"
                        f"\treturn r == (unsigned long)arg_int(\"{name}\", "
                        "\"n\") ? RES_ERR : r ? RES_POS : RES_OK;")
            elif r == "void":
                body = f"\t{call};\n\treturn RES_VOID;"
            elif "*" in r:
                body = (f"\tconst void *r = (const void *){call};\n\n"
                        "\treturn !r ? RES_NULL : IS_ERR(r) ? RES_ERR : "
                        "RES_OK;")
            elif r in ("int", "long", "ssize_t"):
                body = (f"\tlong r = {call};\n\n"
                        "\treturn r < 0 ? RES_ERR : r ? RES_POS : RES_ZERO;")
            elif r == "bool":
                body = f"\treturn {call} ? RES_OK : RES_ERR;"
            elif r == "dma_addr_t":
                body = (f"\treturn {call} == DMA_MAPPING_ERROR ? RES_ERR : "
                        "RES_OK;")
            else:  # a capability offset, a mask: 0 is its failure
                body = f"\treturn {call} == 0 ? RES_ERR : RES_OK;"
            thunks.append(f"static int {fn}(void *bad)\n{{\n{body}\n}}\n")
            cases.append(f'\t{{ "{name}", "{pname}", {fn} }},')
    with open(out, "w") as f:
        f.write("/* Generated by tests/hostile/gen-args.py: do not edit. */\n")
        f.write("\n".join(thunks))
        f.write("\nstatic const struct arg_case arg_cases[] = {\n")
        f.write("\n".join(cases))
        f.write("\n};\n")


if __name__ == "__main__":
    main()
