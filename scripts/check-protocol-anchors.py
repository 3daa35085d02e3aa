#!/usr/bin/env python3
"""Checks that every reference to a section of docs/PROTOCOL.md still finds it.

Three kinds of reference are checked:
- links to `PROTOCOL.md` with an anchor anywhere in the repository (Markdown, Swift, scripts);
- links `](#anchor)` inside docs/PROTOCOL.md itself;
- section names quoted after the file, as comments and docs write them:
  `(docs/PROTOCOL.md, "Refusals")`, which must be the start of a heading's text.

Anchors follow GitHub's rule: the heading's text, lowercased, punctuation other than
hyphens and spaces dropped, spaces turned into hyphens; a repeated anchor gets `-1`, `-2`.
Prints each reference that does not resolve and exits 1 if there is any; `--list` also
prints every heading with its anchor. Run from the repository's root:
`python3 scripts/check-protocol-anchors.py`.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTOCOL = os.path.join(ROOT, 'docs', 'PROTOCOL.md')
SKIP_DIRS = {'.git', '.build', 'node_modules'}
EXTENSIONS = ('.md', '.swift', '.py', '.sh', '.txt')


def anchor(text):
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)  # a link's text only
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)  # keeps letters, digits, _, -, space
    return text.replace(' ', '-')


def headings(path):
    result, seen, fenced = [], {}, False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'):
            fenced = not fenced
        if fenced:
            continue
        match = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
        if not match:
            continue
        text = match.group(2)
        base = anchor(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.append((text.replace('`', ''), base if count == 0 else f'{base}-{count}'))
    return result


def files():
    for directory, subdirs, names in os.walk(ROOT):
        subdirs[:] = [d for d in subdirs if d not in SKIP_DIRS]
        for name in names:
            if name.endswith(EXTENSIONS):
                yield os.path.join(directory, name)


def main():
    heads = headings(PROTOCOL)
    anchors = {a for _, a in heads}
    names = [t for t, _ in heads]
    if '--list' in sys.argv:
        for text, a in heads:
            print(f'#{a}\t{text}')
    problems, count = [], 0
    for path in files():
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding='utf-8', errors='replace').read()
        for match in re.finditer(r'PROTOCOL\.md#([\w\-]+)', text):
            count += 1
            if match.group(1) not in anchors:
                line = text.count('\n', 0, match.start()) + 1
                problems.append(f'{rel}:{line}: no heading for #{match.group(1)}')
        if path == PROTOCOL:
            for match in re.finditer(r'\]\(#([\w\-]+)\)', text):
                count += 1
                if match.group(1) not in anchors:
                    line = text.count('\n', 0, match.start()) + 1
                    problems.append(f'{rel}:{line}: no heading for #{match.group(1)}')
        # A quoted name may run over a line break and a comment's `///` or `//`.
        for match in re.finditer(r'PROTOCOL(?:\.md)?,\s+"([^"]+)"', text):
            name = re.sub(r'\s*\n\s*(?:///?|#)?\s*', ' ', match.group(1)).strip()
            count += 1
            if not any(h.startswith(name) for h in names):
                line = text.count('\n', 0, match.start()) + 1
                problems.append(f'{rel}:{line}: no heading named "{name}"')
    for problem in sorted(problems):
        print(problem)
    print(f'{count} references, {len(heads)} headings, {len(problems)} unresolved', file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
