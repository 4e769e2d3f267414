#!/usr/bin/env bash
# Sets up a fresh machine, builds ugrad, and runs the whole test suite: the Release build, the
# ASan+UBSan build, and an outside project consuming the installed CMake package.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$SECONDS
stamp() { echo "== $* ($((SECONDS - start)) s)"; }

bash scripts/setup.sh
jobs=$(nproc)

stamp "Release build"
bash scripts/build.sh build -DUGRAD_WERROR=ON
stamp "Release tests"
ctest --test-dir build --output-on-failure -j "$jobs"

stamp "ASan+UBSan build"
bash scripts/build.sh build-asan -DUGRAD_WERROR=ON -DUGRAD_SANITIZE=ON -DUGRAD_BUILD_BENCH=OFF
stamp "ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE slow

stamp "GGUF reader fuzzing (bounded)"
FUZZ_GGUF_DIR="$root/build/fuzz-gguf" bash scripts/fuzz_gguf.sh "${UGRAD_FUZZ_SECONDS:-60}"

stamp "install + consumer project"
rm -rf build/install build/consumer
cmake --install build --prefix build/install >/dev/null
cmake -S test/install_consumer -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$root/build/install" >/dev/null
cmake --build build/consumer >/dev/null
./build/consumer/consumer
stamp "all tests passed"
