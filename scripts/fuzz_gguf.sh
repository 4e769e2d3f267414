#!/usr/bin/env bash
# Fuzzes the GGUF reader with libFuzzer for a bounded time; exits non-zero on any finding.
#   scripts/fuzz_gguf.sh [seconds]        (default 60)
# Builds test/llm/gguf/fuzz_gguf.cpp with Debian's clang++-14 (-fsanitize=fuzzer,address,undefined)
# straight from the sources (no CMake), seeds the corpus with files from the GGUF writer, then runs.
# Environment: FUZZ_GGUF_DIR (work directory, default build-fuzz-gguf), CLANGXX (default clang++-14).
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${FUZZ_GGUF_DIR:-$root/build-fuzz-gguf}
cxx=${CLANGXX:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz_gguf: $cxx not found (apt install clang-14 libclang-rt-14-dev)" >&2; exit 2; }

lib_sources=("$root"/llm/gguf/*.cpp "$root/llm/quant/formats.cpp" "$root/base/env.cpp" "$root/base/quote.cpp"
             "$root/base/huge_pages.cpp")
common=(-std=c++20 -g -O1 -fno-omit-frame-pointer -I"$root")
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)

mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
echo "fuzz_gguf: building in $work"
"$cxx" "${common[@]}" "${san[@]}" -o "$work/fuzz_gguf_seeds" \
  "$root/test/llm/gguf/fuzz_gguf_seeds.cpp" "${lib_sources[@]}" -lfmt
"$cxx" "${common[@]}" "${san[@]}" -fsanitize=fuzzer -o "$work/fuzz_gguf" \
  "$root/test/llm/gguf/fuzz_gguf.cpp" "${lib_sources[@]}" -lfmt

"$work/fuzz_gguf_seeds" "$work/seeds"

# Tokens worth splicing into inputs.
cat > "$work/gguf.dict" <<'DICT'
"GGUF"
"general.alignment"
"general.architecture"
"split.count"
"split.no"
"\x02\x00\x00\x00"
"\x03\x00\x00\x00"
"\x09\x00\x00\x00"
"\xff\xff\xff\xff\xff\xff\xff\xff"
DICT

echo "fuzz_gguf: fuzzing for ${seconds}s"
# The first directory receives new inputs; crashes land in artifacts/ and make libFuzzer exit
# non-zero, which `set -e` passes on.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$work/fuzz_gguf" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
  -dict="$work/gguf.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "$work/corpus" "$work/seeds"
echo "fuzz_gguf: no crash in ${seconds}s"
