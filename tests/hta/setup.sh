#!/bin/sh
# HolisticTraceAnalysis (PyPI HolisticTraceAnalysis, with pandas and numpy)
# in a virtual environment, for the HTA test (tests/hta/test_hta.sh).
#   usage: setup.sh VENV_DIR      then reconfigure: cmake picks VENV_DIR/bin/python
#                                 up when VENV_DIR is BUILD_DIR/hta-venv, or
#                                 -DGPUPROF_HTA_PYTHON=VENV_DIR/bin/python
set -e
venv=${1:?usage: setup.sh VENV_DIR}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'HolisticTraceAnalysis==0.5.0'
"$venv/bin/python" -c 'import hta.trace_analysis; print("setup.sh: HTA ready:", __import__("sys").executable)'
