#!/usr/bin/env python3
"""The README's picture: the simulated-GPU demo with kernel capture
(sim_demo: CPU ranges, their GPU ranges, kernels, launch arrows, a counter)
opened in the Perfetto UI by the viewer harness (../shared/viewer), zoomed
to two steps, the timeline cut out of the page.
usage: build/viewer-venv/bin/python tests/viewer/screenshot.py BUILD_DIR OUT.png
Writes its trace in a temporary directory."""
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..', '..', '..', 'shared', 'viewer'))
import check_in_viewer as viewer  # noqa: E402


def main():
    build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    work = tempfile.mkdtemp(prefix='gpuprof-shot-')
    env = dict(os.environ, GPUPROF_KERNELS='1', GPUPROF_CUPTI_PATH=os.path.join(build, 'tests', 'libsimcupti.so'),
               GPUPROF_TRACE='train.trace.json', GPUPROF_REPORT='off')
    subprocess.run([os.path.join(build, 'tests', 'sim_demo')], cwd=work, env=env, check=True)
    opened = viewer.open_page

    def open_page(browser, errors):         # the timeline only: no sidebar, no empty page below
        page = opened(browser, errors)
        shot = page.screenshot
        page.screenshot = lambda path: shot(path=path, clip={'x': 232, 'y': 110, 'width': 1368, 'height': 290})
        return page
    viewer.open_page = open_page
    sys.argv = ['check_in_viewer.py', os.path.join(work, 'train.trace.json'), '--viewer', 'perfetto',
                '--window', '25140:42000', '--shots', work]
    rc = viewer.main()
    if rc == 0:
        shutil.copyfile(os.path.join(work, 'train.trace.json.perfetto.png'), out)
        print('screenshot.py: wrote', out)
    shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == '__main__':
    sys.exit(main())
