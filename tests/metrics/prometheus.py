#!/usr/bin/env python3
"""Live metrics (SPEC 19) with the real components: node_exporter's textfile
collector reads the files two ranks write at every checkpoint (0.5 s), a
Prometheus scrapes it every second, and its HTTP API is queried during the
run (live series, gpuprof_run_complete 0) and after it (every value equal to
that rank's summary, written at the same moment). Each file passes
`promtool check metrics`; the guide's Grafana dashboard is checked against
the dashboard schema, and each of its queries returns data from this run.
Both servers run on free local ports and are stopped whatever happens.

usage: prometheus.py RANKS_SIM LIBSIMNVML DASHBOARD_JSON DASHBOARD_SCHEMA
Exit 77 (skipped, with one line saying why) where prometheus,
prometheus-node-exporter or promtool is missing, unless
GPUPROF_REQUIRE_PROMETHEUS=1 (CI) makes that a failure."""
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

JOB = "gpuprof-metrics-test"
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1
    return cond


def close(a, b, rel=1e-8):
    return a == b or (a is not None and b is not None and abs(a - b) <= rel * abs(b))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(prom, expr):
    """The instant vector of expr: [(labels, value)], or None on an error."""
    body = json.loads(get(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if body.get("status") != "success":
        print("query failed:", expr, body)
        return None
    data = body["data"]
    if data["resultType"] == "scalar":
        return [({}, float(data["result"][1]))]
    return [(r["metric"], float(r["value"][1])) for r in data["result"]]


def by_rank(rows):
    return {r.get("rank"): v for r, v in rows or []}


def wait_for(what, cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        try:
            v = cond()
            if v:
                return v
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    check(False, "timed out waiting for " + what)
    return None


def validate(value, schema, where="$"):
    """The JSON Schema keywords the dashboard's schema uses, where the
    jsonschema module is not installed."""
    errs = []
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    t = schema.get("type")
    if t is not None:
        ok = False
        for one in (t if isinstance(t, list) else [t]):
            if one == "integer":
                ok |= isinstance(value, int) and not isinstance(value, bool)
            elif one == "number":
                ok |= isinstance(value, (int, float)) and not isinstance(value, bool)
            else:
                ok |= isinstance(value, types[one])
        if not ok:
            return [f"{where}: not of type {t}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{where}: {value!r} not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errs.append(f"{where}: {value!r} is not {schema['const']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{where}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{where}: {value} > {schema['maximum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errs.append(f"{where}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errs.append(f"{where}: '{k}' is required")
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                errs += validate(value[k], sub, f"{where}.{k}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errs.append(f"{where}: fewer than {schema['minItems']} items")
        for i, item in enumerate(value):
            if "items" in schema:
                errs += validate(item, schema["items"], f"{where}[{i}]")
    return errs


def range_paths(summary):
    """Each tree path's counted calls, seconds and GPU seconds, threads added up."""
    tree = {e["id"]: e for e in summary["tree"]}
    out = {}
    for e in summary["tree"]:
        names, cur = [], e
        while cur is not None:
            names.append(cur["name"])
            cur = tree.get(cur["parent"])
        path = "/".join(reversed(names))
        calls, ns = out.get(path, (0, 0.0))
        out[path] = (calls + e["count"], ns + e["sum_ns"])
    return out


def check_final(prom, run, summaries, device):
    """After the run: every value in Prometheus equals the rank's summary."""
    for rank, s in summaries.items():
        r = str(rank)
        sel = f'{{job="{JOB}",rank="{r}"}}'
        v = lambda expr: by_rank(query(prom, expr)).get(r)
        check(v(f"gpuprof_run_complete{sel}") == 1, f"rank {r}: gpuprof_run_complete 1 after the run")
        check(v(f"gpuprof_steps_total{sel}") == s["steps"]["counted"], f"rank {r}: gpuprof_steps_total = steps.counted ({s['steps']['counted']})")
        ty = s["steps"]["typical_time"]
        for q, k in (("0.5", "p50_ns"), ("0.9", "p90_ns"), ("0.99", "p99_ns")):
            got = v(f'gpuprof_step_seconds{{job="{JOB}",rank="{r}",quantile="{q}"}}')
            check(close(got * 1e9 if got is not None else None, ty[k]), f"rank {r}: step quantile {q} = typical_time.{k} ({ty[k]} ns)")
        check(v(f"gpuprof_step_seconds_count{sel}") == ty["count"], f"rank {r}: gpuprof_step_seconds_count = typical_time.count")
        check(close(v(f"gpuprof_step_seconds_sum{sel}") * 1e9, ty["sum_ns"]), f"rank {r}: gpuprof_step_seconds_sum = typical_time.sum_ns")
        paths = range_paths(s)
        calls = {m["range"]: x for m, x in query(prom, f"gpuprof_range_calls_total{sel}")}
        secs = {m["range"]: x for m, x in query(prom, f"gpuprof_range_seconds_total{sel}")}
        want = {p: c for p, c in paths.items() if c[0] > 0}
        check(set(calls) == set(want), f"rank {r}: one series per range path: {sorted(calls)}")
        check(all(calls.get(p) == c[0] and close(secs.get(p), c[1] / 1e9) for p, c in want.items()),
              f"rank {r}: every range's calls and seconds = the tree's (by path)")
        shares = {m["range"]: x for m, x in query(prom, f"gpuprof_phase_share{sel}")}
        phases = {p["name"]: p["share"] for p in s["verdict"]["phases"]}
        check(set(shares) == set(phases) and all(close(shares[n], phases[n]) for n in phases),
              f"rank {r}: gpuprof_phase_share = verdict.phases[].share for {sorted(phases)}")
        check(v(f"gpuprof_trace_dropped_events_total{sel}") == s["trace"]["dropped"], f"rank {r}: dropped trace events = trace.dropped")
        info = query(prom, f"gpuprof_info{sel}")
        check(info and info[0][0].get("world_size") == "2" and info[0][0].get("process") == "ranks_sim" and info[0][1] == 1,
              f"rank {r}: gpuprof_info world_size 2, process ranks_sim")
        if device:
            dev = s["device_over_time"]
            sm = next(c for c in dev["counters"] if c["name"] == "SM clock")
            last = sm["points"][-1]
            got = v(f"gpuprof_device_sm_clock_hertz{sel}")
            check(close(got, last[2] * 1e6), f"rank {r}: gpuprof_device_sm_clock_hertz = the last point's mean SM clock ({last[2]} MHz)")


def subst(expr, dashboard):
    """A panel's query as Grafana sends it: the variables' values in place."""
    for v in dashboard["templating"]["list"]:
        if v["type"] == "custom":
            expr = expr.replace("$" + v["name"], v["current"]["value"])
    return expr.replace("$job", JOB).replace("$__rate_interval", "5s")


def check_live(prom, dashboard):
    """During the run: the dashboard's queries, and the rank the others wait for."""
    for p in dashboard["panels"]:
        if p["id"] == 4:
            rows = query(prom, subst(p["targets"][0]["expr"], dashboard))
            check(rows and rows[0][0].get("rank") == "1" and rows[0][1] > 0.1,
                  f"the rank the others wait for is rank 1 (slow data loading), its work per step over the median: {rows}")
            print("PromQL:", subst(p["targets"][0]["expr"], dashboard))
            for m, x in rows or []:
                print("   ", "{" + ",".join(f'{k}="{v}"' for k, v in sorted(m.items())) + "}", f"{x:.6g}")
    for expr in ('gpuprof_phase_share{job="%s",range="data"}' % JOB, 'gpuprof_device_sm_clock_hertz{job="%s"}' % JOB):
        print("PromQL:", expr)
        for m, x in sorted(query(prom, expr) or [], key=lambda r: r[0].get("rank", "")):
            print("   ", "{" + ",".join(f'{k}="{v}"' for k, v in sorted(m.items()) if k not in ("job", "instance", "__name__")) + "}", f"{x:.6g}")


def check_dashboard(prom, dashboard, schema_path):
    schema = json.load(open(schema_path))
    try:
        import jsonschema
        errs = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(dashboard)]
        how = "jsonschema"
    except ImportError:
        errs, how = validate(dashboard, schema), "the built-in validator"
    check(not errs, f"the dashboard JSON meets Grafana's dashboard schema ({how}){': ' + '; '.join(errs[:5]) if errs else ''}")
    for p in dashboard["panels"]:
        for t in p["targets"]:
            expr = subst(t["expr"], dashboard)
            rows = query(prom, expr)
            check(rows is not None and len(rows) > 0, f"dashboard panel '{p['title']}' {t['refId']}: its query returns data ({len(rows or [])} series)")


def main():
    ranks_sim, simnvml, dash_path, schema_path = sys.argv[1:5]
    need = {"prometheus": "prometheus", "prometheus-node-exporter": "node_exporter", "promtool": "promtool"}
    missing = [n for n in need if not shutil.which(n)]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed (Debian 12: apt-get install prometheus prometheus-node-exporter)")
        return 1 if os.environ.get("GPUPROF_REQUIRE_PROMETHEUS") == "1" else 77
    work = tempfile.mkdtemp(prefix="gpuprof-prom-")
    text = os.path.join(work, "textfile")
    os.mkdir(text)
    pn, pp = free_port(), free_port()
    procs = []
    try:
        procs.append(subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{pn}", "--collector.disable-defaults",
                                       "--collector.textfile", f"--collector.textfile.directory={text}"],
                                      stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "node_exporter.log"), "w")))
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: node\n    honor_labels: true\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{pn}']\n")
        procs.append(subprocess.Popen(["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/data",
                                       f"--web.listen-address=127.0.0.1:{pp}"],
                                      stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w")))
        prom = f"http://127.0.0.1:{pp}"
        if not wait_for("Prometheus to be ready", lambda: "Ready" in get(prom + "/-/ready"), 60):
            return 1
        env = dict(os.environ, GPUPROF_METRICS=os.path.join(text, "gpuprof.prom"), GPUPROF_SUMMARY=os.path.join(work, "run.json"),
                   GPUPROF_SUMMARY_EVERY="0.5", GPUPROF_JOB=JOB, GPUPROF_REPORT="off", GPUPROF_TRACE_RING_MB="0",
                   GPUPROF_NVML_PATH=simnvml, SIMNVML_DEVICES="2", SIMNVML_THROTTLE_DEVICE="1")
        for k in ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"):
            env.pop(k, None)
        t0 = time.time()
        run = subprocess.Popen([ranks_sim, "--ranks", "2", "--slow", "1", "--steps", "700"], env=env)
        dashboard = json.load(open(dash_path))
        live = wait_for("both ranks' live series in Prometheus",
                        lambda: len(query(prom, f'gpuprof_run_complete{{job="{JOB}"}} == 0') or []) == 2 or None, 60)
        if live and run.poll() is None:
            a = by_rank(query(prom, f'gpuprof_steps_total{{job="{JOB}"}}'))
            time.sleep(2.5)
            b = by_rank(query(prom, f'gpuprof_steps_total{{job="{JOB}"}}'))
            check(set(a) == {"0", "1"} and all(b[r] > a[r] for r in a),
                  f"during the run: both ranks' gpuprof_steps_total rises as checkpoints come ({a} -> {b} over 2.5 s)")
            check(len(query(prom, f'gpuprof_run_complete{{job="{JOB}"}} == 0')) == 2, "during the run: gpuprof_run_complete 0 on both ranks")
            check_dashboard(prom, dashboard, schema_path)
            check_live(prom, dashboard)
            check(run.poll() is None, "... all checked while the run went on")
        else:
            check(False, "the run was over before its live series were checked (a slow machine?)")
        rc = run.wait(timeout=300)
        check(rc == 0, f"ranks_sim ran to the end in {time.time() - t0:.1f} s")
        files = sorted(os.listdir(text))
        check(files == ["gpuprof.0.prom", "gpuprof.1.prom"], f"one file per rank, no temporary file left: {files}")
        for fn in files:
            p = subprocess.run(["promtool", "check", "metrics"], stdin=open(os.path.join(text, fn)), capture_output=True, text=True)
            check(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), f"promtool check metrics {fn}: no finding {p.stdout}{p.stderr}")
        if not wait_for("both ranks' final files in Prometheus",
                        lambda: len(query(prom, f'gpuprof_run_complete{{job="{JOB}"}} == 1') or []) == 2, 30):
            return 1
        time.sleep(1.5)                       # one more scrape: every series of the final files is in
        summaries = {r: json.load(open(os.path.join(work, f"run.{r}.json"))) for r in (0, 1)}
        check(all(s["complete"] for s in summaries.values()), "both summaries are final")
        check_final(prom, run, summaries, device=True)
        clk = by_rank(query(prom, 'gpuprof_device_sm_clock_hertz{job="%s"}' % JOB))
        check(clk.get("0") == 1.98e9 and clk.get("1") == 1.755e9, f"device gauges: rank 1's GPU is power-capped at 1755 MHz, rank 0's at 1980 ({clk})")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if failures == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("the run's files are kept in", work)
    print(f"prometheus: {'FAILED, ' + str(failures) + ' checks' if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
