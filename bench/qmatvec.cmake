# Quantized linears on the generic path (dequantization fused into the matmul kernel): matvec
# against the read bandwidth, 32-row matmul against OpenBLAS sgemm, both measured in the same run.
ugrad_bench(bench_qmatvec SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_qmatvec.cpp
  DEPS ugrad_llm openblas)
