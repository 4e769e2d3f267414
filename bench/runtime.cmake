ugrad_bench(bench_jit SOURCES bench_jit.cpp DEPS ugrad_runtime)
