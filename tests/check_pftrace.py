#!/usr/bin/env python3
"""Reads a gpuprof Perfetto trace (.pftrace) with an independent decoder --
perfetto_trace_pb2 from the `perfetto` PyPI package, never gpuprof's code --
and compares it with the JSON trace of the same run.

usage: check_pftrace.py TRACE.pftrace [TRACE.json] [--cut] [--names]
       check_pftrace.py MERGED.pftrace --ranks RANK.pftrace...
       check_pftrace.py TRACE.pftrace --samples SUMMARY.json

Decodes frame by frame (a cut-off last frame ends the file: a killed run,
allowed with --cut, as are slices begun and not ended there), resolving what Perfetto's reader resolves: each
sequence's interned names, defaults (track, clock) and incremental clock,
timestamps on the absolute clock, begin/end pairs per track in time order
(the file's order among equal times). With TRACE.json, the two must hold the
same: every slice (name, thread, begin and length in ns), every instant,
every counter value (name, time, value), the flow arrows (from which thread
to which), and the thread and process names. Threads are matched by name
(two runs have other tids). --names: the two files come from two runs on a
real GPU, whose times differ: only the slices' names and counts per thread,
the instants' names and the number of flows must agree. --ranks: MERGED is gpuprof-ranks' merge of
the ranks' traces: it must hold each rank's slices, instants, counter
values and flows, in a process of its own named "rank R · host · pid P",
moved by the rank's anchor (t0_realtime_ns) less the earliest. --samples:
the trace's CPU samples (perf_sample packets, their call stacks resolved
through the sequence's interned callstacks, frames and function names) must
be the summary's: as many, each thread's, with the same count per leaf
function. Prints the counts; exit 1 on a difference, 2 when the decoder is
missing.
"""
import collections, json, re, sys

try:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket, TrackEvent
except ImportError as e:
    print('check_pftrace: %s (pip install perfetto protobuf; tests/viewer/setup.sh does)' % e)
    sys.exit(2)


def frames(raw):
    """(packets, cut): the whole packets, and whether a cut-off one followed."""
    i, n, out = 0, len(raw), []
    while i < n:
        if raw[i] != 0x0A:
            raise ValueError('byte %d: 0x%02x where a packet frame (0x0a) was expected' % (i, raw[i]))
        j, ln, shift = i + 1, 0, 0
        while j < n and raw[j] & 0x80:
            ln |= (raw[j] & 0x7F) << shift
            shift += 7
            j += 1
        if j >= n:
            return out, True
        ln |= raw[j] << shift
        j += 1
        if j + ln > n:
            return out, True
        pk = TracePacket()
        pk.ParseFromString(raw[j:j + ln])
        out.append(pk)
        i = j + ln
    return out, False


class Seq:
    def __init__(self):
        self.names, self.cats, self.args = {}, {}, {}
        self.fnames, self.frames, self.stacks = {}, {}, {}
        self.track = None
        self.clock = None
        self.inc = {}          # incremental clock id -> (its value now, BOOTTIME at its snapshot - its value there)
        self.cleared = False


def decode(path):
    """What the file holds: (track descriptors, events, problems, cut short, CPU samples)."""
    packets, cut = frames(open(path, 'rb').read())
    seqs = collections.defaultdict(Seq)
    tracks = {}                 # uuid -> descriptor
    samples = []                # CPU samples: (tid, function names of the stack, the outermost first)
    events = []                 # (track uuid, ts, order, type, name, category, args, flow ids, terminating flow ids,
                                #  counter value, (bound flow id, direction) or None)
    problems = []
    for k, pk in enumerate(packets):
        s = seqs[pk.trusted_packet_sequence_id]
        if pk.sequence_flags & 1:
            seqs[pk.trusted_packet_sequence_id] = s = Seq()
            s.cleared = True
        if pk.HasField('interned_data'):
            d = pk.interned_data
            for e in d.event_names:
                s.names[e.iid] = e.name
            for e in d.event_categories:
                s.cats[e.iid] = e.name
            for e in d.debug_annotation_names:
                s.args[e.iid] = e.name
            for e in d.function_names:
                s.fnames[e.iid] = e.str.decode('utf-8', 'replace')
            for e in d.frames:
                s.frames[e.iid] = e.function_name_id
            for e in d.callstacks:
                s.stacks[e.iid] = list(e.frame_ids)
        if pk.HasField('trace_packet_defaults'):
            df = pk.trace_packet_defaults
            s.clock = df.timestamp_clock_id if df.HasField('timestamp_clock_id') else None
            s.track = df.track_event_defaults.track_uuid if df.track_event_defaults.HasField('track_uuid') else None
        if pk.HasField('clock_snapshot'):
            cl = {c.clock_id: c for c in pk.clock_snapshot.clocks}
            boot = cl.get(6)
            for cid, c in cl.items():
                if c.is_incremental:
                    if boot is None or c.unit_multiplier_ns not in (0, 1):
                        problems.append('packet %d: an incremental clock without BOOTTIME or in other units' % k)
                    s.inc[cid] = [c.timestamp, (boot.timestamp if boot else 0) - c.timestamp]
        if pk.HasField('track_descriptor'):
            td = pk.track_descriptor
            old = tracks.get(td.uuid)
            tracks[td.uuid] = td if old is None or not old.HasField('thread') or td.thread.thread_name else old
        if pk.HasField('perf_sample'):
            ps = pk.perf_sample
            stack = s.stacks.get(ps.callstack_iid)
            if stack is None:
                problems.append('packet %d: a sample whose call stack %d was never interned' % (k, ps.callstack_iid))
            else:
                samples.append((ps.tid, tuple(s.fnames.get(s.frames.get(f), '?') for f in stack)))
        if not pk.HasField('track_event'):
            continue
        if not s.cleared:
            problems.append('packet %d: an event on sequence %d before its state was cleared' % (k, pk.trusted_packet_sequence_id))
            continue
        clock = pk.timestamp_clock_id if pk.HasField('timestamp_clock_id') else s.clock
        if clock in s.inc:
            s.inc[clock][0] += pk.timestamp
            ts = s.inc[clock][0] + s.inc[clock][1]
        elif clock in (6, None):
            ts = pk.timestamp
        else:
            problems.append('packet %d: timestamp on clock %s, which has no snapshot' % (k, clock))
            continue
        te = pk.track_event
        track = te.track_uuid if te.HasField('track_uuid') else s.track
        name = te.name if te.HasField('name') else s.names.get(te.name_iid) if te.HasField('name_iid') else None
        if te.HasField('name_iid') and te.name_iid not in s.names:
            problems.append('packet %d: name iid %d never interned on its sequence' % (k, te.name_iid))
        cat = ','.join(s.cats.get(c, '?') for c in te.category_iids) or None
        args = {}
        for a in te.debug_annotations:
            an = a.name if a.HasField('name') else s.args.get(a.name_iid, '?')
            v = a.WhichOneof('value')
            args[an] = getattr(a, v) if v else None
        value = te.double_counter_value if te.HasField('double_counter_value') else te.counter_value
        bound = None
        if te.HasField('legacy_event') and te.legacy_event.HasField('bind_id'):
            bound = (te.legacy_event.bind_id, te.legacy_event.flow_direction)
        events.append((track, ts, k, te.type, name, cat, args, list(te.flow_ids), list(te.terminating_flow_ids), value, bound))
    return tracks, events, problems, cut, samples


def check_samples(path, summary, problems):
    """The trace's CPU samples against the summary's samples."""
    import json as _json
    got = decode(path)[4]
    smp = _json.load(open(summary))['samples']
    want = collections.Counter()
    for r in smp['by_range']:
        for f in r['functions']:
            name = re.sub(r'\.(constprop|isra|part)\.\d+$|\.cold$', '', f['name'])
            if f['self']:
                want[name] += f['self']
    have = collections.Counter(re.sub(r' \[.*\]$', '', st[-1]) for _, st in got if st)
    # kept samples left out of the trace (trace_lost: a full ring, or a thread that records no range) are the only difference
    out = smp.get('trace_lost', 0)
    kept = smp['taken'] - smp['lost'] - out
    print('%s: %d CPU samples from %d thread(s), %d distinct stacks; the summary: %d kept in the trace (%d more not)' % (
        path, len(got), len(set(t for t, _ in got)), len(set(got)), kept, out))
    if len(got) != kept:
        problems.append('%d samples in the trace, %d kept in the summary for it' % (len(got), kept))
    if have - want or sum((want - have).values()) != out:
        problems.append('samples per leaf function differ: trace %s, summary %s (%d not in the trace)' % (sorted(have.items())[:6], sorted(want.items())[:6], out))


def resolve(path):
    """Slices, instants, counters, flows and names, as comparable tuples."""
    tracks, events, problems, cut, samples = decode(path)
    procs = {}
    for u, td in tracks.items():
        if td.HasField('process'):
            procs[td.process.pid] = td.process.process_name

    def owner(u):
        """A track's (process name, thread name or track name)."""
        td = tracks.get(u)
        if td is None:
            problems.append('an event on track %d, which has no descriptor' % u)
            return ('?', '?')
        if td.HasField('thread'):
            return (procs.get(td.thread.pid, '?'), td.thread.thread_name or 'tid %d' % td.thread.tid)
        if td.HasField('process'):
            return (td.process.process_name, '(process)')
        if td.HasField('parent_uuid') and td.name in ('steps', 'CUDA calls'):
            return owner(td.parent_uuid)
        if td.HasField('parent_uuid'):
            return (owner(td.parent_uuid)[0], td.name)
        return ('?', td.name)

    by_track = collections.defaultdict(list)
    instants, counters = [], []
    for ev in events:
        if ev[3] in (TrackEvent.TYPE_SLICE_BEGIN, TrackEvent.TYPE_SLICE_END):
            by_track[ev[0]].append(ev)
        elif ev[3] == TrackEvent.TYPE_INSTANT:
            instants.append((owner(ev[0]), ev[4], ev[1]))
        elif ev[3] == TrackEvent.TYPE_COUNTER:
            counters.append((owner(ev[0])[1], ev[1], ev[9]))
    slices, open_, slice_of = [], [], {}               # slice_of: an event's order -> its slice's begin event
    for u, evs in by_track.items():
        evs.sort(key=lambda e: (e[1], e[2]))          # by time, the file's order among equal times
        stack = []
        for ev in evs:
            if ev[3] == TrackEvent.TYPE_SLICE_BEGIN:
                stack.append(ev)
                slice_of[ev[2]] = ev
                continue
            if not stack:
                problems.append('an end with no slice open on %s at %d ns' % (owner(u), ev[1]))
                continue
            b = stack.pop()
            slice_of[ev[2]] = b
            slices.append((owner(u), b[4], b[1], ev[1] - b[1]))
        open_ += [(owner(u), b[4], b[1]) for b in stack]
    flows = resolve_flows(sorted((e for evs in by_track.values() for e in evs if e[2] in slice_of), key=lambda e: (e[1], e[2])),
                          slice_of, owner, problems)
    threads = sorted(set(owner(u) for u, td in tracks.items() if td.HasField('thread')))
    return dict(slices=slices, instants=instants, counters=counters, flows=flows, threads=threads,
                processes=sorted(procs.values()), problems=problems, cut=cut, unfinished=len(open_), open=open_, samples=samples)


def resolve_flows(events, slice_of, owner, problems):
    """The arrows as Perfetto's reader (its FlowTracker) draws them, the events taken in time order (the file's
    among equal times), each flow attached to the slice its begin or end event is of. An id in flow_ids opens
    a flow from that slice, or, open already, draws an arrow to it and moves on from it; terminating_flow_ids
    draw the arrow and close the flow; a legacy event's bind_id with FLOW_OUT opens one (an id open already is
    an import error: flow_duplicate_id), FLOW_IN draws an arrow from where it was opened and leaves it open
    (a launch's arrow to each kernel of a graph), FLOW_INOUT is as flow_ids. Returns (from thread, to
    thread) pairs, sorted: from the slice that opened the flow, as the JSON trace's "s" to its "f"."""
    flows, active, used = [], {}, set()

    def arrow(a, b):
        flows.append((owner(a[0]), owner(b[0])))
    for ev in events:
        here = slice_of[ev[2]]
        bound = ev[10]
        if bound:
            fid, direction = bound
            if direction == TrackEvent.LegacyEvent.FLOW_OUT:
                if fid in active:
                    problems.append('flow %d opened twice (flow_duplicate_id, an import error)' % fid)
                else:
                    active[fid] = here
            elif direction in (TrackEvent.LegacyEvent.FLOW_IN, TrackEvent.LegacyEvent.FLOW_INOUT):
                if fid in active:
                    arrow(active[fid], here)
                    used.add(fid)
                else:
                    problems.append('flow %d ends where no call opened it (an arrow the viewer cannot draw)' % fid)
                if direction == TrackEvent.LegacyEvent.FLOW_INOUT:
                    active[fid] = here
            else:
                problems.append('flow %d without a direction (flow_without_direction, an import error)' % fid)
        for f in ev[7]:
            if f in active:
                arrow(active[f], here)
            active[f] = here
        for f in ev[8]:
            if f in active:
                arrow(active.pop(f), here)
    # a call's FLOW_OUT that no work ends: an arrow to nothing (a synchronization launches no work)
    dangling = [f for f in active if f not in used and f >= 1 << 63]
    if dangling:
        problems.append('%d flow(s) opened by a call that no work ends, e.g. %d' % (len(dangling), dangling[0]))
    return sorted(flows)


def json_resolve(path):
    text = open(path, 'rb').read().decode('utf-8').rstrip()
    if not text.endswith(']'):
        text = text.rstrip(',') + ']'
    evs = json.loads(text)
    procs, names = {}, {}
    for e in evs:
        if e.get('ph') == 'M' and e.get('name') == 'process_name':
            procs[e['pid']] = e['args']['name']
        if e.get('ph') == 'M' and e.get('name') == 'thread_name':
            names[(e['pid'], e['tid'])] = e['args']['name']

    def owner(e):
        return (procs.get(e['pid'], '?'), names.get((e['pid'], e['tid']), 'tid %d' % e['tid']))

    def ns(us):
        return int(round(float(us) * 1000))
    slices, instants, counters, starts, ends = [], [], [], {}, {}
    for e in evs:
        ph = e.get('ph')
        if ph == 'X':
            slices.append((owner(e), e['name'], ns(e['ts']), ns(e['dur'])))
        elif ph == 'i':
            where = (procs.get(e['pid'], '?'), '(process)') if e.get('s') == 'p' else owner(e)
            instants.append((where, e['name'], ns(e['ts'])))
        elif ph == 'C':
            for v in e['args'].values():
                counters.append((e['name'], ns(e['ts']), float(v)))
        elif ph == 's':
            starts[(e['pid'], e['id'])] = owner(e)
        elif ph == 'f':
            ends[(e['pid'], e['id'])] = owner(e)
    flows = sorted((starts[k], ends[k]) for k in ends if k in starts)
    threads = sorted(set(owner({'pid': p, 'tid': t}) for (p, t) in names))
    return dict(slices=slices, instants=instants, counters=counters, flows=flows, threads=threads,
                processes=sorted(procs.values()))


def diff(what, a, b, problems):
    ca, cb = collections.Counter(a), collections.Counter(b)
    if ca != cb:
        only_a, only_b = list((ca - cb).elements()), list((cb - ca).elements())
        problems.append('%s differ: %d only in the Perfetto trace (%s), %d only in the JSON trace (%s)' % (
            what, len(only_a), sorted(only_a)[:3], len(only_b), sorted(only_b)[:3]))


def same_threads(r):
    """Thread names with their tids left out (two runs have other tids)."""
    def norm(w):
        return (w[0], re.sub(r'thread \d+', 'thread N', w[1]))
    for k in ('slices', 'instants', 'flows'):
        r[k] = [tuple(norm(x) if isinstance(x, tuple) else x for x in item) for item in r[k]] if k != 'flows' else \
               [(norm(a), norm(b)) for a, b in r[k]]
    r['threads'] = sorted(norm(w) for w in r['threads'])


def anchor(path):
    """The rank, host, pid and anchor in a rank's Perfetto trace (its process track's description)."""
    tracks = decode(path)[0]
    for td in tracks.values():
        if td.HasField('process') and 'rank=' in td.description:
            kv = dict(x.split('=', 1) for x in td.description.split('; ')[1:])
            return int(kv['rank']), kv['host'], td.process.pid, int(kv['t0_realtime_ns'])
    raise ValueError('%s: no rank in its process track' % path)


def check_ranks(merged, ranks, problems):
    """The merged trace against its ranks' traces."""
    m = resolve(merged)
    problems += m['problems']
    heads = [anchor(r) for r in ranks]
    base = min(h[3] for h in heads)
    want = dict(slices=[], instants=[], counters=[], flows=[])
    for path, (rank, host, pid, t0) in zip(ranks, heads):
        r = resolve(path)
        shift = t0 - base
        proc = 'rank %d \u00b7 %s \u00b7 pid %d' % (rank, host, pid)
        want['slices'] += [((proc, w[1]), n, ts + shift, d) for (w, n, ts, d) in r['slices']]
        want['instants'] += [((proc, w[1]), n, ts + shift) for (w, n, ts) in r['instants']]
        want['counters'] += [(n, ts + shift, v) for (n, ts, v) in r['counters']]
        want['flows'] += [((proc, a[1]), (proc, b[1])) for (a, b) in r['flows']]
    print('%s: %d slices, %d instants, %d counter values, %d flows from %d ranks' % (
        merged, len(m['slices']), len(m['instants']), len(m['counters']), len(m['flows']), len(ranks)))
    for k in want:
        diff(k, m[k], want[k], problems)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if '--samples' in sys.argv:
        problems = []
        check_samples(args[0], args[1], problems)
        for p in problems[:12]:
            print('  FAIL ' + p)
        return 1 if problems else 0
    if '--ranks' in sys.argv:
        problems = []
        check_ranks(args[0], args[1:], problems)
        for p in problems[:12]:
            print('  FAIL ' + p)
        return 1 if problems else 0
    if not args:
        print(__doc__)
        return 2
    pf = resolve(args[0])
    problems = list(pf['problems'])
    if pf['cut'] and '--cut' not in sys.argv:
        problems.append('the file ends inside a packet')
    # a killed run (--cut) may end between a slice's begin and its end, inside a packet or not
    if pf['unfinished'] and '--cut' not in sys.argv:
        problems.append('%d slices begun and never ended' % pf['unfinished'])
    print('%s: %d slices, %d instants, %d counter values, %d flows, %d threads%s' % (
        args[0], len(pf['slices']), len(pf['instants']), len(pf['counters']), len(pf['flows']), len(pf['threads']),
        ' (cut off inside its last packet)' if pf['cut'] else ''))
    if len(args) > 1:
        js = json_resolve(args[1])
        same_threads(pf)
        same_threads(js)
        print('%s: %d slices, %d instants, %d counter values, %d flows, %d threads' % (
            args[1], len(js['slices']), len(js['instants']), len(js['counters']), len(js['flows']), len(js['threads'])))
        if '--names' in sys.argv:
            names = lambda r, k: [(w, n) for (w, n, *_) in r[k]]
            for k in ('slices', 'instants'):
                diff(k + ' (name, thread)', names(pf, k), names(js, k), problems)
            if len(pf['flows']) != len(js['flows']):
                problems.append('flows: %d in the Perfetto trace, %d in the JSON trace' % (len(pf['flows']), len(js['flows'])))
            for p in problems[:12]:
                print('  FAIL ' + p)
            return 1 if problems else 0
        # On a GPU track, an end meeting a begin written before it (work recorded late) is 1 ns earlier
        # in the Perfetto trace (gpuprof.h, "Trace encoder, Perfetto protobuf"): counted as the same slice.
        jset = set(js['slices'])
        begins = set((w, ts) for (w, _, ts, _) in js['slices'])
        moved = 0
        for i, (w, name, ts, dur) in enumerate(pf['slices']):
            if (w, name, ts, dur) not in jset and (w, name, ts, dur + 1) in jset and (w, ts + dur + 1) in begins \
                    and (w[1].startswith('GPU ') or name.startswith('cuda')):
                pf['slices'][i] = (w, name, ts, dur + 1)
                moved += 1
        if moved:
            print('  %d GPU slices end 1 ns early where the next begins (written before them)' % moved)
        # counter values: the JSON trace's have 9 significant digits
        jc = collections.defaultdict(list)
        for (name, ts, v) in js['counters']:
            jc[(name, ts)].append(v)
        for i, (name, ts, v) in enumerate(pf['counters']):
            near = [x for x in jc.get((name, ts), []) if abs(x - v) <= 1e-8 * max(abs(v), 1e-300)]
            if near:
                pf['counters'][i] = (name, ts, near[0])
        for k in ('slices', 'instants', 'counters', 'flows', 'threads', 'processes'):
            diff(k, pf[k], js[k], problems)
    for p in problems[:12]:
        print('  FAIL ' + p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
