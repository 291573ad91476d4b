#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every allocation the library makes is behind the fault point, or says why.

Lists each call in src/ that takes memory from the system (malloc, calloc,
realloc, reallocarray, aligned_alloc, posix_memalign, memalign, valloc,
strdup, strndup, asprintf, vasprintf, open_memstream, mmap, mremap). A call
is behind the fault point when a fault point (devres__should_fail*(),
devres__fail_now(), devres_should_fail()) comes before it in the same
function, so that a sweep fails it as it fails the rest of the call. Any
other call needs an entry in tests/alloc-allowlist.txt:

    path:function:call: reason

one line each, the reason not empty (why a failure there cannot be
injected, or need not be). An entry that matches no call is an error too,
so the list never outlives the code. Exits 1 listing what is wrong.
"""
import os
import re
import sys

ALLOC = re.compile(
    r'(?<![\w.>])(malloc|calloc|realloc|reallocarray|aligned_alloc|'
    r'posix_memalign|memalign|valloc|strdup|strndup|asprintf|vasprintf|'
    r'open_memstream|mmap|mremap)\s*\(')
FAULT = re.compile(r'\b(devres__should_fail\w*|devres__fail_now|'
                   r'devres_should_fail)\s*\(')
FUNC = re.compile(r'(\w+)\s*\(')


def strip(text):
    """Comments and literals blanked, line breaks kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def calls(path):
    """(function, call, behind) for each allocation call in @path."""
    with open(path, encoding='utf-8') as f:
        text = strip(f.read())
    depth, func, seen_fault, header = 0, None, False, ''
    found = []
    for line in text.split('\n'):
        if depth == 0:
            # A function's header: the name before its first '('.
            if line and not line[0].isspace() and not line.startswith('#'):
                header = line if '(' in line else header + line
            if '{' in line and '(' in header:
                m = [x for x in FUNC.findall(header)
                     if x not in ('__attribute__', 'aligned')]
                func, seen_fault = (m[0] if m else None), False
        for pos in range(len(line)):
            ch = line[pos]
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth -= 1
        if depth > 0 or '{' in line:
            if FAULT.search(line):
                # A fault point on the line counts for calls after it.
                first_fault = FAULT.search(line).start()
            else:
                first_fault = None
            for m in ALLOC.finditer(line):
                before = seen_fault or (first_fault is not None
                                        and first_fault < m.start())
                found.append((func or '(file)', m.group(1), before))
            if first_fault is not None:
                seen_fault = True
        if depth == 0:
            func, seen_fault = None, False
            if '}' in line or ';' in line:
                header = ''
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    allow_path = os.path.join(root, 'tests', 'alloc-allowlist.txt')
    allow, errors = {}, []
    with open(allow_path, encoding='utf-8') as f:
        for no, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            parts = line.split(':', 3)
            if len(parts) < 4 or not parts[3].strip():
                errors.append('%s:%d: no reason: %s' % (allow_path, no,
                                                        line))
                continue
            allow[tuple(p.strip() for p in parts[:3])] = no
    used = set()
    total = behind = 0
    for top, _, files in os.walk(os.path.join(root, 'src')):
        for name in sorted(files):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            for func, call, ok in calls(path):
                total += 1
                key = (rel, func, call)
                if ok:
                    behind += 1
                elif key in allow:
                    used.add(key)
                else:
                    errors.append('%s: %s(): %s() is not behind the fault '
                                  'point and not in %s' %
                                  (rel, func, call,
                                   'tests/alloc-allowlist.txt'))
    for key, no in sorted(allow.items(), key=lambda kv: kv[1]):
        if key not in used:
            errors.append('tests/alloc-allowlist.txt:%d: %s:%s:%s matches '
                          'no unguarded call' % ((no,) + key))
    for e in errors:
        print(e)
    print('check-allocs: %d allocation calls, %d behind the fault point, '
          '%d allowed with a reason, %d errors' %
          (total, behind, total - behind - len(
              [e for e in errors if 'not behind' in e]), len(errors)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
