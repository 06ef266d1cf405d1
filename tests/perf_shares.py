"""Each function's share of the samples, as `perf report --stdio -q` counts
them and as gpuprof's summary does, for the same run: they must agree within
5 points (tests/samples_vs_perf.sh, tests/samples_omp.sh).

    perf_shares.py PERF_TXT SUMMARY_JSON FUNCTION... [--dso PREFIX=NAME]

PERF_TXT is `perf report --sort sym` or `--sort dso,sym`; a function is named
without gcc's clone suffix (matmul_forward for matmul_forward._omp_fn.0);
--dso counts every sample in an object whose file name starts with PREFIX as
the function NAME (libgomp=(OpenMP runtime)), as gpuprof names them."""
import json
import re
import sys


def base(name):
    return name if name.startswith('(') else name.split('.')[0]


def main(argv):
    dso = {}
    if '--dso' in argv:
        k = argv.index('--dso')
        prefix, name = argv[k + 1].split('=', 1)
        dso[prefix] = name
        argv = argv[:k] + argv[k + 2:]
    perf_txt, summary, fns = argv[0], argv[1], argv[2:]
    perf = dict.fromkeys(fns, 0.0)
    for line in open(perf_txt):
        m = re.match(r'\s*([\d.]+)%\s+(?:(\S+)\s+)?\[\.\]\s+(\S+)', line)
        if not m:
            continue
        share, obj, sym = float(m.group(1)), m.group(2) or '', base(m.group(3))
        for prefix, name in dso.items():
            if obj.startswith(prefix):
                sym = name
        if sym in perf:
            perf[sym] += share
    gp = dict.fromkeys(fns, 0.0)
    for r in json.load(open(summary))['samples']['by_range']:
        for f in r['functions']:
            if base(f['name']) in gp:
                gp[base(f['name'])] += f['self']
    ps, gs = sum(perf.values()), sum(gp.values())
    if not ps or not gs:
        print('no samples of the functions (perf %.1f%%, gpuprof %d)' % (ps, gs))
        return 1
    bad = 0
    print('%-18s %8s %8s   (share of these functions\' samples)' % ('function', 'perf', 'gpuprof'))
    for f in fns:
        a, b = 100 * perf[f] / ps, 100 * gp[f] / gs
        print('%-18s %7.1f%% %7.1f%%' % (f, a, b))
        bad += abs(a - b) > 5
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
