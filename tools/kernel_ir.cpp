// kernel_ir: writes the LLVM IR of every hand-written kernel (llm/kernels) at the model shapes, for
// gfx1100 and the host CPU, one file per kernel and target, to compare a rewrite of the kernels
// before and after (`diff -r`).
//
//   kernel_ir OUT_DIR
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/codegen.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/delta_scan.h"
#include "llm/kernels/flash_attention.h"
#include "llm/kernels/int8_quantize.h"
#include "llm/kernels/matmul_wmma.h"
#include "llm/kernels/matvec_int8.h"
#include "runtime/device_features.h"

namespace {

using namespace ugrad;
using namespace ugrad::llm;

struct Matrix {
  int64_t out, in;
};
// The linears of Qwen3-0.6B, Qwen3-8B and Qwen3.6-27B (projections and FFN).
const std::vector<Matrix> kMatrices = {{2048, 1024},  {1024, 3072},  {4096, 4096}, {12288, 4096},
                                       {4096, 12288}, {5120, 17408}, {34816, 5120}};
const std::vector<GgmlType> kFormats = {GgmlType::Q4_0, GgmlType::Q8_0,  GgmlType::Q2_K,
                                        GgmlType::Q3_K, GgmlType::Q4_K,  GgmlType::Q5_K,
                                        GgmlType::Q6_K, GgmlType::IQ4_XS};
struct Attention {
  int64_t heads, kv_heads, head_dim;
};
const std::vector<Attention> kAttention = {{16, 8, 128}, {32, 8, 128}, {24, 4, 256}};

std::vector<std::function<UOp()>> kernels() {
  const DeviceFeatures amd = device_features("NULL:gfx1100");
  std::vector<std::function<UOp()>> ks;
  for (GgmlType t : kFormats)
    for (const Matrix& m : kMatrices) {
      if (!matvec_int8_needs(t, m.out, m.in)) continue;
      for (int64_t rows : {1, 4, 8})
        ks.push_back([=] { return matvec_int8_kernel(t, rows, m.out, m.in); });
      ks.push_back([=] { return matvec_int8_kernel(t, 4, m.out, m.in, 8); });
      if (matmul_wmma_needs(t, m.out, m.in))
        ks.push_back([=] { return matmul_wmma_kernel(t, m.out, m.in); });
    }
  for (const Attention& a : kAttention)
    for (int64_t rows : {1, 5, 32}) {
      ks.push_back([=] {
        return flash_attention_split_kernel(rows, a.heads, a.kv_heads, a.head_dim, 4096, 4000, amd);
      });
      ks.push_back(
          [=] { return flash_attention_combine_kernel(rows, a.heads, a.head_dim, 4096, 4000); });
    }
  for (int64_t heads : {16, 48})
    for (int64_t rows : {1, 32})
      if (delta_scan_needs(rows, 128, 128))
        ks.push_back([=] { return delta_scan_kernel(rows, heads, 128, 128, 4000); });
  for (int64_t in : {1024, 4096, 5120, 17408})
    for (int64_t rows : {1, 32}) ks.push_back([=] { return int8_quantize_kernel(rows, in); });
  return ks;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: kernel_ir OUT_DIR\n", stderr);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const CodegenTarget targets[] = {amd_codegen_target("gfx1100"), cpu_codegen_target()};
    int n = 0;
    for (const auto& make : kernels()) {
      const UOp ast = make();
      for (const CodegenTarget& target : targets) {
        const KernelSource ks = codegen(ast, target, CodegenOptions{.noopt = 1});
        std::ofstream(dir / fmt::format("{}.{}.ll", hand_written_name(ast), target.name)) << ks.src;
        ++n;
      }
    }
    fmt::print("{} kernels written to {}\n", n, dir.string());
  } catch (const std::exception& e) {
    fmt::print(stderr, "kernel_ir: {}\n", e.what());
    return 1;
  }
  return 0;
}
