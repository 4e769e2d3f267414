#include "codegen/opt/gpu_opts.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "codegen/affine.h"
#include "codegen/opt/dot4.h"
#include "codegen/opt/gpu_reduce.h"
#include "codegen/opt/opt.h"
#include "codegen/opt/tensor_cores.h"

namespace ugrad {

namespace {

// Group reduce tiers, first match wins: when the outputs alone cannot fill the GPU, wide groups;
// with more outputs (a matvec) only when that makes the lanes of a wave read adjacent bytes: the
// reduce axis is contiguous in every load, or the loads are not coalesced across outputs anyway
// (a quantized weight row: lanes on adjacent rows read a row's bytes apart, one 128-byte line
// each, while lanes along its reduce read neighbouring blocks). A reduce over an outer axis is
// already coalesced across output threads. Each lane still reduces at least kMinPerLane elements.
struct GroupTier {
  int64_t max_outputs;
  bool coalescing_only;
  int64_t lanes[4];  // tried in order; 0 ends the list
};
constexpr GroupTier kGroupTiers[] = {
    {2048, false, {256, 128, 64, 32}},
    {65536, true, {64, 32, 0, 0}},
};
constexpr int64_t kGroupReduceMinExtent = 256;
constexpr int64_t kMinPerLane = 4;
// Upcast the innermost output axis of elementwise kernels with at least this many outputs.
constexpr int64_t kUpcastMinOutputs = 1 << 16;
constexpr int64_t kUpcastAmount = 4;

// The WMMA lowering implements the gfx11 (RDNA3) fragment layout; gfx12 takes 8-lane fragments.
bool gfx11_wmma(const CodegenTarget& target) {
  return target.has_wmma && target.name.rfind("gfx11", 0) == 0;
}

int64_t extent(const UOp& r) {
  return r.src(0).is_const() ? r.src(0).const_int() : int64_t(r.src(0).vmax());
}

// Every load steps by at most one element with `r`: lanes on adjacent values of r read
// adjacent elements (a load whose index is not affine in r counts as scattered).
bool coalesced_along(const UOp& ast, const UOp& r) {
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::LOAD || u.src(0).op() != Op::INDEX) continue;
    const auto c = affine_coefficient(u.src(0).src(1), r);
    if (!c || (*c != 0 && *c != 1)) return false;
  }
  return true;
}

}  // namespace

std::string to_string(const std::vector<GpuOpt>& opts) {
  static constexpr const char* kNames[] = {"GROUP_REDUCE", "TENSOR_CORE", "DOT4", "UPCAST"};
  std::string s;
  for (const GpuOpt& o : opts)
    s += fmt::format("{}{}({},{})", s.empty() ? "" : " ", kNames[int(o.type)], o.axis, o.amount);
  return s;
}

std::vector<GpuOpt> gpu_heuristic_opts(const UOp& ast, const CodegenTarget& target) {
  if (!target.is_gpu) return {};
  if (gfx11_wmma(target))
    if (auto tc = tensor_core_axis(ast)) return {{GpuOptType::TensorCore, *tc, 0}};
  if (target.has_dot4)
    if (auto d = dot4_axis(ast)) return {{GpuOptType::Dot4, *d, kDot4Width}};
  int64_t outputs = 1;
  UOp longest, innermost_output;
  for (const UOp& r : kernel_ranges(ast)) {
    const AxisType t = r.arg_as<RangeArg>().type;
    if (t == AxisType::Loop) outputs *= std::max<int64_t>(1, extent(r)), innermost_output = r;
    if (t == AxisType::Reduce && r.src(0).is_const() && (!longest || extent(r) > extent(longest)))
      longest = r;
  }
  if (!longest) {
    const std::vector<UOp> ranges = kernel_ranges(ast);
    auto inner = std::find_if(ranges.rbegin(), ranges.rend(), [](const UOp& r) {
      return r.arg_as<RangeArg>().type == AxisType::Loop;
    });
    if (outputs >= kUpcastMinOutputs && inner != ranges.rend() && (*inner).src(0).is_const() &&
        (*inner).src(0).const_int() % kUpcastAmount == 0)
      return {{GpuOptType::Upcast, (*inner).arg_as<RangeArg>().axis, kUpcastAmount}};
    return {};
  }
  if (extent(longest) < kGroupReduceMinExtent) return {};
  for (const GroupTier& tier : kGroupTiers) {
    if (outputs > tier.max_outputs) continue;
    if (tier.coalescing_only && !coalesced_along(ast, longest) && innermost_output &&
        coalesced_along(ast, innermost_output))
      return {};
    for (int64_t lanes : tier.lanes)
      if (lanes > 0 && extent(longest) % lanes == 0 && extent(longest) / lanes >= kMinPerLane)
        return {{GpuOptType::GroupReduce, longest.arg_as<RangeArg>().axis, lanes}};
    return {};
  }
  return {};
}

UOp apply_gpu_opts(const UOp& ast, const std::vector<GpuOpt>& opts, const CodegenTarget& target) {
  UOp out = ast;
  for (const GpuOpt& o : opts) {
    if (!target.is_gpu) fail("codegen: {} needs a GPU target", to_string({o}));
    if (o.type == GpuOptType::GroupReduce) {
      out = group_reduce(out, o.axis, o.amount);
    } else if (o.type == GpuOptType::Upcast) {
      out = apply_opts(out, {Opt{OptType::Upcast, o.axis, o.amount}});
    } else if (o.type == GpuOptType::Dot4) {
      if (!target.has_dot4) fail("codegen: {}: {} has no dot4", to_string({o}), target.name);
      out = dot4_reduce(out, o.axis);
    } else {
      if (!gfx11_wmma(target))
        fail("codegen: {}: the WMMA lowering is for gfx11 (RDNA3), the target is {}",
             to_string({o}), target.name);
      out = tensor_cores(out, o.axis);
    }
  }
  return out;
}

UOp fuse_gpu_accumulators(const UOp& lowered) {
  return graph_rewrite(fuse_wmma_accumulate(lowered), pm_fuse_dot4());
}

}  // namespace ugrad
