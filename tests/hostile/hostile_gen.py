# SPDX-License-Identifier: MIT
"""What gen-args.py and gen-scalars.py share: the declarations of the public
headers (and of the compat headers' inline functions), each parameter's
type and name, the valid argument the test's fixture gives each one
(arg_<kind>() in hostile-fixtures.c), the classification of a call's
result (RES_*), and the writing of the generated file."""
import re
from pathlib import Path

# Headers whose inline functions take objects and check them (io.h's
# accessors take register addresses, types.h's helpers take any value).
INLINE_HEADERS = {"device.h", "ioport.h", "pci.h", "platform.h"}

# Calls that answer with the bytes they left: all of them is the refusal.
BYTES_LEFT = {"copy_to_user", "copy_from_user"}

FUNC_PTR = {"dr_release_t", "dr_match_t", "irq_handler_t", "devres_log_sink_t",
            "work_func_t", "devres_atomic_hook_t"}


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



def valid_arg(name, t, n, fn_types=()):
    """The fixture's valid argument for parameter @n of type @t of @name."""
    if n == "fmt":
        return '"hostile"'
    if t in fn_types:
        return f"({t})arg_fn(\"{name}\", \"{n}\")"
    if is_pointer(t):
        return f"({t})arg_{kind(t)}(\"{name}\", \"{n}\")"
    return f"({t})arg_int(\"{name}\", \"{n}\")"


def calls(decls, attacked, value, fn_types=()):
    """(name, parameter, its type, call, return type) for each parameter
    attacked(type) keeps of each declaration: the call with @value in that
    parameter, cast to its type, and the fixture's in every other."""
    for ret, name, params in decls:
        parsed = [param(p) for p in params]
        if any(t == "va_list" for t, _ in parsed):
            continue  # reached through its variadic twin
        for i, (t, pname) in enumerate(parsed):
            if t == "..." or not attacked(t):
                continue
            args = [f"({tj}){value}" if j == i else
                    valid_arg(name, tj, nj, fn_types)
                    for j, (tj, nj) in enumerate(parsed) if tj != "..."]
            call = f"{name}({', '.join(args)})"
            yield name, pname, t, call, re.sub(r"\b(const|volatile)\b", "",
                                              ret).strip()


def body(name, call, r):
    """A thunk's body: make @call of @name, returning @r, classified."""
    if name in BYTES_LEFT:
        return (f"\tunsigned long r = {call};\n\n"
                f"\treturn r == (unsigned long)arg_int(\"{name}\", "
                "\"n\") ? RES_ERR : r ? RES_POS : RES_OK;")
    if r == "void":
        return f"\t{call};\n\treturn RES_VOID;"
    if "*" in r:
        return (f"\tconst void *r = (const void *){call};\n\n"
                "\treturn !r ? RES_NULL : IS_ERR(r) ? RES_ERR : "
                "RES_OK;")
    if r in ("int", "long", "ssize_t"):
        return (f"\tlong r = {call};\n\n"
                "\treturn r < 0 ? RES_ERR : r ? RES_POS : RES_ZERO;")
    if r == "bool":
        return f"\treturn {call} ? RES_OK : RES_ERR;"
    if r == "dma_addr_t":
        return (f"\treturn {call} == DMA_MAPPING_ERROR ? RES_ERR : "
                "RES_OK;")
    # a capability offset, a mask: 0 is its failure
    return f"\treturn {call} == 0 ? RES_ERR : RES_OK;"


def write(out, banner, thunks, struct, table, cases):
    with open(out, "w") as f:
        f.write(banner)
        f.write("\n".join(thunks))
        f.write(f"\nstatic const struct {struct} {table}[] = {{\n")
        f.write("\n".join(cases))
        f.write("\n};\n")
