#!/usr/bin/env python3
"""Every relative link and image in README.md and docs/*.md resolves: the
file exists (relative to the page), and an anchor, where one is given, is a
heading of that page as GitHub names it (lower case, punctuation dropped,
spaces as hyphens, -1, -2... for repeats). Links in code blocks and code
spans are not links; http(s) and mailto links are not checked (no network).
A page with a "## Contents" section lists every one of its "## " chapters
there.
usage: check_links.py SOURCE_DIR    (exit 1 with a line per broken link)
       check_links.py --self-test  (the checker against a small tree of known links)"""
import glob
import os
import re
import sys

LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^\s*(```|~~~)')


def prose(text):
    """The page's lines outside code blocks, code spans blanked out."""
    out, fence = [], None
    for n, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        out.append((n, re.sub(r'(`+).*?\1', lambda c: ' ' * len(c.group(0)), line)))
    return out


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)      # \w: letters, digits, underscore (Unicode)
    return s.replace(' ', '-')


def anchors(path, cache={}):
    """The page's heading anchors (and <a name/id> ones)."""
    if path not in cache:
        text = open(path, encoding='utf-8').read()
        seen, names, fence = {}, set(), None
        for line in text.split('\n'):
            m = FENCE.match(line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            m = None if fence else re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            base = slug(m.group(1).replace('`', ''))
            k = seen.get(base, 0)
            names.add(base if k == 0 else '%s-%d' % (base, k))
            seen[base] = k + 1
        names.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', text))
        cache[path] = names
    return cache[path]


def contents(page, src):
    """A page with a "## Contents" section (docs/guide.md) lists each of its
    "## " chapters there, as a link: the contents stay those of the page."""
    text = open(page, encoding='utf-8').read()
    if '\n## Contents\n' not in text:
        return []
    toc = text.split('\n## Contents\n', 1)[1].split('\n## ', 1)[0]
    listed = set(re.findall(r'\]\(#([^)]+)\)', toc))
    raw = text.split('\n')
    out = []
    for n, line in prose(text):                # headings outside code blocks
        if not line.startswith('## '):
            continue
        title = raw[n - 1][3:].strip()
        if title != 'Contents' and slug(title.replace('`', '')) not in listed:
            out.append('%s:%d: the chapter "%s" is not in the page\'s Contents' % (os.path.relpath(page, src), n, title))
    return out


def self_test():
    """A tree with three broken links among good ones: exactly those three found."""
    import subprocess
    import tempfile
    d = tempfile.mkdtemp(prefix='gpuprof-links-')
    os.mkdir(os.path.join(d, 'docs'))
    open(os.path.join(d, 'img.png'), 'w').close()
    open(os.path.join(d, 'README.md'), 'w').write(
        '# Top\n\n![a picture](img.png) [guide](docs/guide.md#a-ranges-time-gpuprof_gpukernels) [web](https://example.com/x)\n'
        '[gone](docs/nothere.md) [bad anchor](docs/guide.md#no-such-heading)\n'
        '```\n[in code](nowhere.md)\n```\n`[in a span](nowhere.md)` [here](#top) [dup](docs/guide.md#setting-up-1)\n')
    open(os.path.join(d, 'docs', 'guide.md'), 'w').write(
        "# Guide\n\n## A range's time: `GPUPROF_GPU=kernels`\n\n## Setting up\n\n## Setting up\n\n"
        "[back](../README.md#top) [missing image](img/shot.png)\n")
    r = subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
    want = ['README.md:4: docs/nothere.md: no such file', 'README.md:4: docs/guide.md#no-such-heading: no heading',
            'docs/guide.md:9: img/shot.png: no such file']
    ok = r.returncode == 1 and all(w in r.stdout for w in want) and '3 broken' in r.stdout and '8 relative links' in r.stdout
    print(r.stdout, end='')
    print('check_links --self-test: %s' % ('passed' if ok else 'FAILED'))
    import shutil
    shutil.rmtree(d, ignore_errors=True)
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    pages = [os.path.join(src, 'README.md')] + sorted(glob.glob(os.path.join(src, 'docs', '*.md')))
    bad, links = [], 0
    for page in pages:
        for n, line in prose(open(page, encoding='utf-8').read()):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):   # http:, https:, mailto:
                    continue
                links += 1
                path, _, frag = target.partition('#')
                where = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                rel = os.path.relpath(page, src)
                if not os.path.exists(where):
                    bad.append('%s:%d: %s: no such file' % (rel, n, target))
                elif frag and where.endswith('.md') and frag not in anchors(where):
                    bad.append('%s:%d: %s: no heading "#%s" in %s' % (rel, n, target, frag, os.path.relpath(where, src)))
        bad.extend(contents(page, src))
    for b in bad:
        print(b)
    print('check_links: %d pages, %d relative links and images, %d broken' % (len(pages), links, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
