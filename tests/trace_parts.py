#!/usr/bin/env python3
"""A trace in parts (GPUPROF_TRACE_MAX_MB) against the same run in one file:
each part must open on its own, and every event of the one file must be in
exactly one part (flow arrows between parts excepted: a part leaves out
the flows of ranges begun before it).

usage: trace_parts.py ONE_FILE PART1 PART2 ...
JSON traces are read with json; Perfetto traces (.pftrace) with
check_pftrace.py's decoder, which also checks each part alone (every slice
begun is ended, clocks and interning resolve). Exit 1 on a difference."""
import collections, json, os, sys


def json_events(path):
    with open(path) as f:
        doc = json.load(f)
    ev = doc if isinstance(doc, list) else doc['traceEvents']
    names = {e['tid']: e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    out = []
    for e in ev:
        if e.get('ph') in ('M', 's', 'f', 't'):
            continue
        out.append((e.get('ph'), e.get('name'), names.get(e.get('tid'), e.get('tid')), round(e.get('ts', 0), 3),
                    round(e.get('dur', 0), 3), json.dumps(e.get('args'), sort_keys=True) if e.get('ph') == 'C' else ''))
    return out


def pf_events(path, problems):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import check_pftrace
    r = check_pftrace.resolve(path)
    problems += ['%s: %s' % (path, p) for p in r['problems']]
    if r['unfinished']:
        problems.append('%s: %d slices begun and never ended' % (path, r['unfinished']))
    return [('X',) + tuple(s) for s in r['slices']] + [('i',) + tuple(s) for s in r['instants']] + [('C',) + tuple(s) for s in r['counters']]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    one, parts = sys.argv[1], sys.argv[2:]
    problems = []
    read = (lambda p: pf_events(p, problems)) if one.endswith('.pftrace') else json_events
    whole = collections.Counter(read(one))
    union = collections.Counter()
    for p in parts:
        ev = read(p)
        if not ev:
            problems.append('%s: no events' % p)
        union.update(ev)
    if one.endswith('.pftrace'):
        # A GPU slice whose end meets a begin written before it is 1 ns early
        # (gpuprof.h, "Trace encoder, Perfetto protobuf"); across a part
        # boundary that begin is in another file: the same slice, 1 ns longer.
        only_p, only_w = union - whole, whole - union
        for ev in list(only_p.elements()):
            short = ev[:-1] + (ev[-1] - 1,)
            if ev[0] == 'X' and only_w[short] > 0:
                only_w[short] -= 1
                union[ev] -= 1
                union[short] += 1
        union += collections.Counter()        # drop the zero counts
    if union != whole:
        only_p, only_w = list((union - whole).elements()), list((whole - union).elements())
        problems.append('%d events only in the parts (%s), %d only in the one file (%s)' % (len(only_p), only_p[:3], len(only_w), only_w[:3]))
    print('%s: %d events; %d parts: %s events' % (one, sum(whole.values()), len(parts), sum(union.values())))
    for p in problems[:12]:
        print('  FAIL ' + p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
