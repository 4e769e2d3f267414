// Private to schedule/: a graph's schedule built from scratch (kernelize.cpp). create_schedule
// (schedule_cache.cpp) calls it once per graph structure and instantiates the cached result.
#pragma once
#include <vector>

#include "schedule/schedule.h"

namespace ugrad {

/// The schedule of `roots`: which nodes get a buffer, then one kernel AST per buffer.
Schedule build_schedule(const std::vector<UOp>& roots);

}  // namespace ugrad
