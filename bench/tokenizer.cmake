# Qwen3 tokenizer encode throughput against the npm package's JavaScript tokenizer, same text,
# same run. Needs the reference data: scripts/tokenizer_reference.sh BUILD_DIR (CTest's
# tokenizer_reference fixture runs it).
ugrad_bench(bench_tokenizer
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_tokenizer.cpp
          ${PROJECT_SOURCE_DIR}/test/llm/tokenizer/reference_data.cpp
  DEPS ugrad_tokenizer)
target_compile_definitions(bench_tokenizer PRIVATE UGRAD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  UGRAD_TOKENIZER_REF_DIR="${CMAKE_BINARY_DIR}/tokenizer_ref")
