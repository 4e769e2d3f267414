ugrad_bench(bench_qwen3 SOURCES bench_qwen3.cpp DEPS ugrad_llm openblas)
ugrad_bench(bench_attention SOURCES bench_attention.cpp DEPS ugrad_llm)
