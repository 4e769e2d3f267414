#!/usr/bin/env bash
# Sets up a fresh machine, builds ugrad and runs the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
./build/examples/ir_demo
