#!/bin/sh
# What the tests need, installed where it is missing: the first part of the
# README's test command, so that command alone passes on a new Debian or
# Ubuntu machine. Nothing is installed when everything is there.
#   cmake, a C and C++ compiler  build the demo, the tests, the benchmark
#   libcjson-dev, python3        the tests read gpuprof's JSON with them
#   libstb-dev                   stb_sprintf, the formatting gpuprof prefers
#   clang, libclang-rt-14-dev    the fuzz targets' corpus replay
# Optional extras stay optional (docs/guide.md "Building and testing this
# repository": MPI, the viewers, HTA, Prometheus).
# usage: sh tests/setup.sh        (as root, or with sudo; apt-get only)
set -e

need=
have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }
if command -v dpkg >/dev/null 2>&1; then
  for pkg in cmake make gcc g++ libcjson-dev python3 libstb-dev clang libclang-rt-14-dev; do
    have_pkg "$pkg" || need="$need $pkg"
  done
else
  # not Debian: check for the tools and the header themselves
  for cmd in cmake cc c++ python3; do command -v $cmd >/dev/null 2>&1 || need="$need $cmd"; done
  [ -f /usr/include/cjson/cJSON.h ] || [ -f /usr/local/include/cjson/cJSON.h ] || need="$need cJSON"
  if [ -n "$need" ]; then
    echo "tests/setup.sh: the tests need:$need -- install them with your package manager, then run the command again" >&2
    exit 1
  fi
  exit 0
fi
[ -z "$need" ] && exit 0

if [ "$(id -u)" = 0 ]; then sudo=
elif command -v sudo >/dev/null 2>&1; then sudo=sudo
else
  echo "tests/setup.sh: the tests need:$need -- as root: apt-get update && apt-get install -y$need" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "tests/setup.sh: the tests need:$need, and there is no apt-get here to install them" >&2
  exit 1
fi
echo "tests/setup.sh: installing$need"
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 $need
