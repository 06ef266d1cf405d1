"""Every file of tests/ is named on tests/README.md (in backquotes: `name`,
a file of a folder by its own name or the folder's, `folder/`), and every
test this build registers is named in the page's tables, so that the page
stays the map of the suite. The sources that define GPUPROF_IMPLEMENTATION
themselves (instead of linking impl/impl.c's build) are at most
MAX_IMPLEMENTATIONS, each named in the page's section on the implementation. (A build registers a subset where tools are
missing -- ThreadSanitizer, nvcc, MPI, the viewers -- or in CI's sanitizer
build: the page may name more than one build registers.)

usage: check_index.py TESTS_DIR [CTEST_NAMES_FILE]
  CTEST_NAMES_FILE: the names `ctest -N` lists, one a line (optional)."""
import os
import re
import sys

MAX_IMPLEMENTATIONS = 8


def implementations(tests):
    """The sources under tests/ with a line #define GPUPROF_IMPLEMENTATION."""
    found = []
    for top, dirs, files in os.walk(tests):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.') and d != '__pycache__')
        for f in sorted(files):
            if f.endswith(('.c', '.cpp', '.cu', '.h')):
                path = os.path.join(top, f)
                text = open(path, encoding='utf-8', errors='replace').read()
                if re.search(r'^\s*#\s*define\s+GPUPROF_IMPLEMENTATION\b', text, re.M):
                    found.append(os.path.relpath(path, tests))
    return found


def main():
    tests = sys.argv[1]
    page = open(os.path.join(tests, 'README.md'), encoding='utf-8').read()
    named = set(re.findall(r'`([^`]+)`', page))
    missing = []
    for entry in sorted(os.listdir(tests)):
        path = os.path.join(tests, entry)
        if entry == 'README.md' or entry.startswith('.') or entry == '__pycache__':
            continue
        if os.path.isdir(path):
            if entry + '/' not in named:
                missing.append(entry + '/')
                continue
            for sub in sorted(os.listdir(path)):
                if sub.startswith('.') or sub == '__pycache__':
                    continue
                if sub not in named and sub + '/' not in named:
                    missing.append(entry + '/' + sub)
        elif entry not in named:
            missing.append(entry)
    for m in missing:
        print('check_index: tests/%s is not named on tests/README.md' % m)
    bad = 0
    impls = implementations(tests)
    section = page.split('## The implementation, once per configuration', 1)[-1].split('\n## ', 1)[0]
    for path in impls:
        if '`%s`' % path not in section:
            print('check_index: tests/%s defines GPUPROF_IMPLEMENTATION and the page\'s section on the implementation does not name it'
                  ' (link the build of impl/impl.c instead: gpuprof_test(... IMPL x))' % path)
            bad += 1
    if len(impls) > MAX_IMPLEMENTATIONS:
        print('check_index: %d sources define GPUPROF_IMPLEMENTATION, at most %d may' % (len(impls), MAX_IMPLEMENTATIONS))
        bad += 1
    if len(sys.argv) > 2:
        have = set(l.strip() for l in open(sys.argv[2]) if l.strip())
        # the "ctest name" column: the second cell of each table row
        listed = set()
        for row in re.findall(r'^\|[^|\n]*\|([^|\n]*)\|', page, re.M):
            listed.update(re.findall(r'`([a-z0-9_]+)`', row))
        for name in sorted(have - listed):
            print('check_index: ctest runs %s, which tests/README.md does not name' % name)
            bad += 1
    if missing or bad:
        return 1
    print('check_index: every file of tests/ is on tests/README.md%s; %d sources define the implementation: %s'
          % (', and every test this build runs' if len(sys.argv) > 2 else '', len(impls), ' '.join(impls)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
