# Reference dequantizer and quantizer throughput per ggml format, against memcpy of the same
# output size measured in the same run.
ugrad_bench(bench_quant SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_quant.cpp DEPS ugrad_quant ugrad_quant_lazy)
