// Private to schedule/: a graph's schedule built from scratch, in two stages. create_schedule
// (schedule_cache.cpp) calls build_schedule once per graph structure and instantiates the cached
// result.
#pragma once
#include <unordered_map>
#include <vector>

#include "schedule/schedule.h"

namespace ugrad {

struct BufferPlan {
  std::unordered_map<UOp, UOp> buffers;  // node -> the BUFFER it is materialized into
  std::vector<UOp> kernels;              // the nodes with a kernel (or a copy), in graph order
};

/// The BUFFER under a view of one (a chain of movement ops).
inline UOp base_buffer(UOp view) {
  while (view.op() != Op::BUFFER) view = view.src(0);
  return view;
}

/// Stage 1 (decide_buffers.cpp): which nodes of the graph of `roots` get a buffer.
BufferPlan decide_buffers(const std::vector<UOp>& roots);
/// Stage 2 (build_kernels.cpp): one kernel per node of plan.kernels (none for an empty one), in
/// dependency order. It adds no buffer.
std::vector<ScheduleItem> build_kernels(const BufferPlan& plan);

/// The schedule of `roots`: decide_buffers, then build_kernels.
Schedule build_schedule(const std::vector<UOp>& roots);

}  // namespace ugrad
