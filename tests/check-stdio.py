#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's own output takes no lock of stdio's, or says why.

Lists each use in src/ of a stdio output call (printf, fprintf, vprintf,
vfprintf, dprintf, vdprintf, puts, fputs, fputc, putc, putchar, fwrite,
fflush, perror, psignal) and each mention of stdout or stderr. Such a
call takes the stream's lock: in a child of fork() whose parent's other
thread held it, in a signal handler that interrupted its holder, or while
another thread keeps it, the call waits for ever. The library's own lines
go through the log (src/base/log.c), whose default output is one writev()
to stderr's descriptor (devres__log_raw()). Any other use needs an entry
in tests/stdio-allowlist.txt:

    path:function:call: reason

one line each, the reason not empty (a stream the caller passed and
asked to be written, say). An entry that matches no use is an error too,
so the list never outlives the code. Exits 1 listing what is wrong.
"""
import importlib.util
import os
import re
import sys

STDIO = re.compile(
    r'(?<![\w.>])(printf|fprintf|vprintf|vfprintf|dprintf|vdprintf|puts|'
    r'fputs|fputc|putc|putchar|fwrite|fflush|perror|psignal)\s*\(|'
    r'(?<![\w.>])(stdout|stderr)\b')
FUNC = re.compile(r'(\w+)\s*\(')
ALLOW = os.path.join('tests', 'stdio-allowlist.txt')


def load_strip():
    """check-allocs.py's strip(): comments and literals blanked."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        'check_allocs', os.path.join(here, 'check-allocs.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.strip


def uses(path, strip):
    """(function, call) for each stdio use in @path."""
    with open(path, encoding='utf-8') as f:
        text = strip(f.read())
    depth, func, header, found = 0, None, '', []
    for line in text.split('\n'):
        if depth == 0:
            if line and not line[0].isspace() and not line.startswith('#'):
                header = line if '(' in line else header + line
            if '{' in line and '(' in header:
                m = [x for x in FUNC.findall(header)
                     if x not in ('__attribute__', 'aligned')]
                func = m[0] if m else None
        for m in STDIO.finditer(line):
            found.append((func if depth > 0 or '{' in line else None,
                          m.group(1) or m.group(2)))
        depth += line.count('{') - line.count('}')
        if depth == 0:
            func = None
            if '}' in line or ';' in line:
                header = ''
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    strip = load_strip()
    allow, errors, used, total = {}, [], set(), 0
    with open(os.path.join(root, ALLOW), encoding='utf-8') as f:
        for no, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            parts = line.split(':', 3)
            if len(parts) < 4 or not parts[3].strip():
                errors.append('%s:%d: no reason: %s' % (ALLOW, no, line))
                continue
            allow[tuple(p.strip() for p in parts[:3])] = no
    for top, _, files in os.walk(os.path.join(root, 'src')):
        for name in sorted(files):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            for func, call in uses(path, strip):
                total += 1
                key = (rel, func or '(file)', call)
                if key in allow:
                    used.add(key)
                else:
                    errors.append('%s: %s(): %s takes stdio\'s lock: go '
                                  'through the log, or list it in %s' %
                                  (rel, key[1], call, ALLOW))
    for key, no in sorted(allow.items(), key=lambda kv: kv[1]):
        if key not in used:
            errors.append('%s:%d: %s:%s:%s matches no use' %
                          ((ALLOW, no) + key))
    for e in errors:
        print(e)
    print('check-stdio: %d uses of stdio output, %d allowed' %
          (total, len(used)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
