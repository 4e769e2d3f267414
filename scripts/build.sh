#!/usr/bin/env bash
# Configures and builds ugrad into a build directory: scripts/build.sh [DIR] [extra cmake args...]
# TARGETS="a b" builds only those targets (and what they need); default: everything.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache (when installed) matches objects across checkouts by paths relative to the tree.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=1
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086  # TARGETS is a list
cmake --build "$dir" ${TARGETS:+--target $TARGETS}
