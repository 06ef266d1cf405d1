#!/usr/bin/env python3
"""The page (SPEC 22) opened in headless Chromium, offline, against the
summary written from the same snapshot: no request beyond the file, no
script error, the verdict's phases (names, classes, shares), the bottleneck's
remedy and the steps counted as the summary has them, every part the run has.
usage: check_page.py PAGE.html SUMMARY.json [--expect PART ...] [--shot OUT.png] [--loose]
(--loose: a killed run's page, its figures not compared: the summary may be
of the next checkpoint)
Needs playwright (tests/viewer/setup.sh's venv) and Debian's chromium."""
import json
import os
import sys

from playwright.sync_api import sync_playwright


def pct(x):
    return '%.1f%%' % (100.0 * x)


def main():
    args = sys.argv[1:]
    page_path, summary_path = os.path.abspath(args[0]), args[1]
    expect, shot, loose = [], None, False
    i = 2
    while i < len(args):
        if args[i] == '--expect':
            expect.append(args[i + 1]); i += 2
        elif args[i] == '--loose':      # a killed run: the page and the summary may be of two checkpoints
            loose = True; i += 1
        elif args[i] == '--shot':
            shot = args[i + 1]; i += 2
        else:
            print('check_page: unknown argument', args[i]); return 2
    s = json.load(open(summary_path))
    url = 'file://' + page_path
    bad, requests, errors = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path='/usr/bin/chromium', args=['--no-sandbox'])
        page = browser.new_page(viewport={'width': 1050, 'height': 900})
        page.on('request', lambda r: requests.append(r.url) if r.url != url else None)
        page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
        page.on('pageerror', lambda e: errors.append(str(e)))
        page.goto(url)
        page.wait_for_load_state('load')
        rows = page.eval_on_selector_all('#phases tr', 'rs => rs.slice(1).map(r => Array.from(r.cells).map(c => c.innerText.trim()))')
        remedy = page.inner_text('#remedy') if page.query_selector('#remedy') else None
        steps = page.inner_text('#steps')
        parts = page.eval_on_selector_all('h2', 'hs => hs.map(h => h.id || h.innerText)')
        if shot:
            page.screenshot(path=shot, full_page=True)
        browser.close()
    if requests:
        bad.append('the page asked for %s' % requests[:3])
    if errors:
        bad.append('errors in the page: %s' % errors[:3])
    v = s.get('verdict')
    if v and not loose:
        want = [(ph['name'], ph['class'], pct(ph['share'])) for ph in v['phases']]
        got = [(r[0], r[2], r[1]) for r in rows]
        if got != want:
            bad.append('the verdict table differs from the summary:\n  page    %s\n  summary %s' % (got, want))
        if remedy is None or remedy.replace('try: ', '', 1) != v['bottleneck']['remedy']:
            bad.append('the remedy differs: %r vs %r' % (remedy, v['bottleneck']['remedy']))
    if not loose and steps != str(s['steps']['counted']):
        bad.append('steps counted: the page says %s, the summary %s' % (steps, s['steps']['counted']))
    for e in expect:
        if e not in parts:
            bad.append('no part %r (the page has %s)' % (e, parts))
    for b in bad:
        print('check_page: FAIL', b)
    print('check_page: %s: %d bytes, %d phases, parts %s, %s' % (os.path.basename(page_path), os.path.getsize(page_path),
                                                                len(rows), ', '.join(parts), 'ok' if not bad else 'FAILED'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
