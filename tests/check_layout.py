#!/usr/bin/env python3
"""check_layout.py SECTIONS_PY HEADER -- the header's layout rules that
sections.py measures but does not judge (issue 60), for .ci/run:
  1. CPU samples are one run of sections (their types, sampler, symbols,
     trace part and per-range part next to each other);
  2. at most 12 "#if ... GPUPROF_CUDA" conditionals outside the GPU backend
     (the backend's CPU side keeps its callers free of them);
  3. Lifecycle assigns no field of another section's state (it calls each
     section's reset instead).
Prints one line per rule; exit status 1 when one is broken."""
import re
import subprocess
import sys

MAX_CUDA = 12
OTHERS = r'gpuprof__(trace|steps|threads|registry|bg|clock|smp_global|run|mem|dev|gpu|kc|gm)\.'


def main(tool, header):
    out = subprocess.run([sys.executable, tool, header], capture_output=True, text=True, check=True).stdout
    secs = []
    for line in out.split('\n'):
        m = re.match(r'\s*(\d+)\s+(\d+)-(\d+)\s+(.*?)\s+uses', line)
        if m:
            secs.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4).strip()))
    lines = open(header, encoding='utf-8').read().split('\n')
    bad = 0

    idx = [s[0] for s in secs if s[3].startswith('CPU samples')]
    run = idx and idx == list(range(idx[0], idx[0] + len(idx)))
    print('check_layout: CPU samples in sections %s: %s' % (idx, 'one run' if run else 'NOT one run'))
    bad += not run

    where = []
    for i, l in enumerate(lines, 1):
        if re.match(r'\s*#\s*(if|ifdef|ifndef|elif)\b.*\bGPUPROF_CUDA\b', l):
            s = [x for x in secs if x[1] <= i <= x[2]][0]
            if s[3] != 'GPU backend':
                where.append('%d (%s)' % (i, s[3]))
    ok = len(where) <= MAX_CUDA
    print('check_layout: %d GPUPROF_CUDA conditionals outside the GPU backend (at most %d)%s'
          % (len(where), MAX_CUDA, '' if ok else ': ' + ', '.join(where)))
    bad += not ok

    life = [s for s in secs if s[3] == 'Lifecycle']
    writes = []
    if life:
        code = re.compile(r'(^|[^.>\w])' + OTHERS + r'[\w.\[\]]*\s*(=[^=]|\+=|-=|\|=|\+\+|--)|(ST|STR)\(&' + OTHERS)
        for i in range(life[0][1], life[0][2] + 1):
            text = re.sub(r'/\*.*?\*/|"(\\.|[^"])*"', '', lines[i - 1])
            if code.search(text):
                writes.append('%d: %s' % (i, lines[i - 1].strip()[:80]))
    print('check_layout: Lifecycle writes %d field%s of other sections%s'
          % (len(writes), '' if len(writes) == 1 else 's', ''.join('\n  ' + w for w in writes)))
    bad += bool(writes) or not life
    return 1 if bad else 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
