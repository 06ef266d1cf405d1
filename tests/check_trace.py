#!/usr/bin/env python3
"""Validates a gpuprof Chrome trace the way Perfetto and chrome://tracing read it.

usage: check_trace.py TRACE [--truncated] [--expect-name NAME ...] [--expect-x N] [--threads N] [--expect-flows N]

--truncated  the process was killed mid-run: the file must lack its closing "]"
             (the viewers open a JSON array cut short); it is added before parsing.
Exits non-zero with one line per problem."""
import bisect
import json
import sys
from collections import defaultdict


def main(argv):
    path = argv[1]
    truncated = "--truncated" in argv
    expect_names = [argv[i + 1] for i, a in enumerate(argv) if a == "--expect-name"]
    expect_x = [int(argv[i + 1]) for i, a in enumerate(argv) if a == "--expect-x"]
    expect_threads = [int(argv[i + 1]) for i, a in enumerate(argv) if a == "--threads"]
    expect_flows = [int(argv[i + 1]) for i, a in enumerate(argv) if a == "--expect-flows"]
    raw = open(path, "rb").read()
    problems = []
    text = raw.decode("utf-8")  # must be valid UTF-8 whatever bytes the names had
    if not text.lstrip().startswith("["):
        problems.append("not the JSON array form, which the viewers open when a killed run cut it short")
    if truncated:
        if text.rstrip().endswith("]"):
            problems.append("the trace of a killed run is complete: the kill did not happen mid-run")
        if text.rstrip().endswith(","):
            problems.append("the trace of a killed run ends in a comma")
        text = text.rstrip() + "\n]"
    events = json.loads(text)
    flows = defaultdict(dict)
    tracks = defaultdict(list)
    names = set()
    thread_names = {}
    process_named = False
    for e in events:
        for key in ("ph", "pid"):
            if key not in e:
                problems.append(f"event without {key}: {e}")
        ph = e.get("ph")
        if ph in ("X", "i", "C"):
            if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
                problems.append(f"bad ts: {e}")
            if "tid" not in e:
                problems.append(f"event without tid: {e}")
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                problems.append(f"bad dur: {e}")
            tracks[(e["pid"], e["tid"])].append(e)
            names.add(e["name"])
        elif ph == "C":
            if not all(isinstance(v, (int, float)) for v in e.get("args", {}).values()):
                problems.append(f"counter with a non-numeric value: {e}")
            names.add(e["name"])
        elif ph == "i":
            if e.get("s") not in ("g", "p", "t"):
                problems.append(f"instant event without a valid scope: {e}")
            names.add(e["name"])
        elif ph in ("s", "f"):
            flows[e.get("id")][ph] = e
            if ph == "f" and e.get("bp") != "e":
                problems.append(f"flow end without bp=e: {e}")
        elif ph == "M":
            if e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
            if e["name"] == "process_name":
                process_named = True
        else:
            problems.append(f"unexpected phase {ph}")
    if not process_named:
        problems.append("no process_name metadata")
    # Complete events on one track must nest: sort as the viewers do (by start,
    # longer first) and check each event ends inside the one it starts in.
    # Integer nanoseconds avoid float noise.
    for track, evs in tracks.items():
        if track not in thread_names:
            problems.append(f"track {track} has no thread_name metadata")
        spans = sorted(((round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]) for e in evs),
                       key=lambda s: (s[0], -s[1]))
        stack = []
        for start, dur, name in spans:
            end = start + dur
            while stack and stack[-1][0] <= start:
                stack.pop()
            if stack and end > stack[-1][0]:
                problems.append(f"track {track}: '{name}' [{start},{end}] overlaps '{stack[-1][1]}' ending at {stack[-1][0]}")
                break
            for s in stack:
                # a step's slice (ProfilerStep#N) may coincide with a range that spans the step
                if s[2] == start and s[3] == dur and not (name.startswith("ProfilerStep#") or s[1].startswith("ProfilerStep#")):
                    problems.append(f"track {track}: '{name}' has the same start and duration as its parent '{s[1]}'")
            stack.append((end, name, start, dur))
    # Each flow arrow starts inside a complete event on its CPU thread and ends
    # inside one on its GPU track (how both viewers bind "s" and "f" with bp=e).
    # Slices on a track nest, so the candidates are the slices that start at or
    # before ts: walk back from the last of them while any could still cover it.
    starts = {}
    for track, evs in tracks.items():
        spans = sorted((round(x["ts"] * 1000), round((x["ts"] + x["dur"]) * 1000)) for x in evs)
        ends, longest = [], 0
        for _, end in spans:
            longest = max(longest, end)
            ends.append(longest)         # the furthest end among slices so far
        starts[track] = ([a for a, _ in spans], [b for _, b in spans], ends)
    def inside(e):
        ts = round(e["ts"] * 1000)
        a, b, furthest = starts.get((e["pid"], e["tid"]), ([], [], []))
        i = bisect.bisect_right(a, ts) - 1
        while i >= 0 and furthest[i] >= ts:
            if b[i] >= ts:
                return True
            i -= 1
        return False
    for fid, pair in flows.items():
        if set(pair) != {"s", "f"}:
            problems.append(f"flow {fid} has only {sorted(pair)}")
            continue
        for e in pair.values():
            if not inside(e):
                problems.append(f"flow {fid}: its {e['ph']} event at {e['ts']} is in no slice of track {e['tid']}")
    for n in expect_names:
        if n not in names:
            problems.append(f"expected an event named {n!r}")
    # the steps' slices (ProfilerStep#N, derived from the step marks) are counted apart from the ranges;
    # ProfilerStep#N is gpuprof's step N (the report's and the summary's): it ends at the mark "step N"
    marks = {(e["tid"], e["name"]): round(e["ts"] * 1000) for e in events if e.get("ph") == "i" and e.get("cat") == "step"}
    nsteps = 0
    for (pid, tid), v in tracks.items():
        for e in v:
            if e["name"].startswith("ProfilerStep#"):
                nsteps += 1
                end = marks.get((tid, "step " + e["name"][len("ProfilerStep#"):]))
                if end is None or abs(end - round((e["ts"] + e["dur"]) * 1000)) > 1:
                    problems.append(f"{e['name']} does not end at the mark 'step {e['name'][len('ProfilerStep#'):]}' of its thread")
    nx = sum(len(v) for v in tracks.values()) - nsteps
    for want in expect_x:
        if nx != want:
            problems.append(f"expected {want} complete events, found {nx}")
    for want in expect_threads:
        if len(tracks) != want:
            problems.append(f"expected {want} thread tracks, found {len(tracks)}")
    for want in expect_flows:
        if len(flows) != want:
            problems.append(f"expected {want} flow arrows, found {len(flows)}")
    for p in problems[:20]:
        print("check_trace:", p)
    print(f"check_trace: {path}: {len(events)} events, {nx} complete events (+ {nsteps} steps) on {len(tracks)} tracks, {len(flows)} flows, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
