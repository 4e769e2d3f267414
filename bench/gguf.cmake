# GGUF open time on a ~800 MB Qwen3-0.6B-shaped Q8_0 file, against read()/mmap baselines.
ugrad_bench(bench_gguf SOURCES bench_gguf.cpp DEPS ugrad_gguf)
