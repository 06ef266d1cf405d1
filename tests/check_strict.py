#!/usr/bin/env python3
"""The outputs of a -Ofast / -ffast-math build (SPEC 16a): its report has no
NaN or infinity, its JSON files are strict JSON (NaN and Infinity are not),
and its report has the sections of the same program built -O2.

usage: check_strict.py REPORT_OFAST REPORT_O2 JSON...
"""
import json
import re
import sys


# The demo's sections that do not depend on how its run went (the others --
# outlier steps, time outside the steps -- come and go with a noisy machine).
CORE = ["Ranges by", "Call tree", "Roofline (GPUPROF_RANGE_WORK,", "Counters", "Memory by", "Verdict (per"]


def sections(text):
    """The report's core section titles, in order."""
    out = []
    for line in text.splitlines():
        title = " ".join(line.split()[:2])
        if line[:1].isupper() and title in CORE:
            out.append(title)
    return out


def strict(path):
    def refuse(token):
        raise ValueError(f"{path}: {token} is not JSON")
    with open(path) as f:
        json.load(f, parse_constant=refuse)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    fast = open(sys.argv[1]).read()
    o2 = open(sys.argv[2]).read()
    bad = re.findall(r"(?<![A-Za-z])(-?nan|NaN|-?inf|Inf)(?![A-Za-z])", fast)
    if bad:
        print(f"check_strict: {sys.argv[1]} prints {sorted(set(bad))}")
        return 1
    if sections(fast) != sections(o2) or sections(o2) != CORE:
        print(f"check_strict: the -Ofast report's sections {sections(fast)} differ from -O2's {sections(o2)}")
        return 1
    for path in sys.argv[3:]:
        try:
            strict(path)
        except ValueError as e:
            print(f"check_strict: {e}")
            return 1
    print(f"check_strict: no NaN or infinity in the report, {len(sections(fast))} sections as at -O2, {len(sys.argv) - 3} strict JSON files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
