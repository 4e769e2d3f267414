ugrad_bench(bench_train SOURCES bench_train.cpp DEPS ugrad_llm_train openblas)
