ugrad_bench(bench_qwen35 SOURCES bench_qwen35.cpp DEPS ugrad_llm)
