// GPU optimizations as data, next to the CPU Opt list (opt.h): chosen by a small heuristic (or
// given in CodegenOptions::gpu_opts) and applied to the kernel AST before expansion.
//   GROUP_REDUCE(axis, n)  the reduce axis is split across n threads of a workgroup: each thread
//                          reduces its share, partials meet in LDS after a barrier (gpu_reduce.h)
//   TENSOR_CORE(axis, 0)   the REDUCE ADD over reduce `axis` of a f16/bf16 product becomes WMMA
//                          16x16x16 tiles, one wave per tile (tensor_cores.h)
//   UPCAST(axis, n)        each thread computes n consecutive outputs of a contiguous output axis
//                          (the CPU UPCAST: copies; LLVM merges their loads/stores into b64/b128)
//   DOT4(axis, 4)          int8 multiply-accumulate over reduce `axis` becomes DOT4 ops over 4
//                          contiguous elements (dot4.h)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

enum class GpuOptType : uint8_t { GroupReduce, TensorCore, Dot4, Upcast };

struct GpuOpt {
  GpuOptType type;
  int64_t axis;
  int64_t amount;
  friend bool operator==(const GpuOpt&, const GpuOpt&) = default;
};

/// "GROUP_REDUCE(1,256) TENSOR_CORE(2,0)".
std::string to_string(const std::vector<GpuOpt>& opts);

/// The heuristic's choice for a GPU target: tensor cores for an eligible f16/bf16 matmul, dot4 for
/// an int8 multiply-accumulate, a group reduce when the outputs are too few to fill the GPU and
/// the reduce is long, an upcast of the innermost axis of a large elementwise kernel.
std::vector<GpuOpt> gpu_heuristic_opts(const UOp& ast, const CodegenTarget& target);

/// Applies `opts` in order; an Error names an opt that does not fit.
UOp apply_gpu_opts(const UOp& ast, const std::vector<GpuOpt>& opts, const CodegenTarget& target);

/// After lower_reduces: accumulators folded into the WMMA and DOT4 ops that feed them.
UOp fuse_gpu_accumulators(const UOp& lowered);

}  // namespace ugrad
