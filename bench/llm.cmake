ugrad_bench(bench_qwen3 SOURCES bench_qwen3.cpp DEPS ugrad_llm openblas)
