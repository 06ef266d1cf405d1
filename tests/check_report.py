#!/usr/bin/env python3
"""Checks a gpuprof text report as a terminal shows it.

usage: check_report.py REPORT [--expect TEXT ...]

- the file is valid UTF-8;
- in every table, each row ends its Calls column at the same terminal column
  as the header (wide East Asian characters count two columns), so the table
  lines up whatever the names contain;
- each --expect TEXT appears in the report."""
import sys
import unicodedata


def columns(text):
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def main(argv):
    path = argv[1]
    expect = [argv[i + 1] for i, a in enumerate(argv) if a == "--expect"]
    text = open(path, "rb").read().decode("utf-8")
    problems = []
    header_end = None
    for line in text.splitlines():
        if line.startswith("Name ") and "Calls" in line or line.startswith("Name ") and "Samples" in line:
            word = "Calls" if "Calls" in line else "Samples"
            header_end = columns(line[: line.index(word) + len(word)])
            continue
        if not line.strip() or line.startswith(("==", "   ", "Ranges", "Call tree", "Counters", "Marks", "Warnings", "...")):
            if not line.strip():
                header_end = None
            continue
        if header_end is None:
            continue
        # walk the row to the header's Calls column end, counting terminal
        # columns: a row lines up if a digit ends exactly there
        col, pos = 0, 0
        while pos < len(line) and col < header_end:
            col += columns(line[pos])
            pos += 1
        if col != header_end or not line[pos - 1].isdigit() or (pos < len(line) and line[pos] != " "):
            problems.append(f"misaligned row: {line!r}")
    for e in expect:
        if e not in text:
            problems.append(f"expected {e!r} in the report")
    for p in problems[:10]:
        print("check_report:", p)
    print(f"check_report: {path}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
