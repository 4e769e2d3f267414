// GPU launch dimensions: the output loops of a kernel become launch indices. Each of at most three
// dims d pairs a workgroup id SPECIAL("gidx<d>") with a workitem id SPECIAL("lidx<d>"); a range
// mapped to dim d is gidx<d>*local<d> + lidx<d> (ranges merged into one dim are recovered with
// div/mod). A thread whose index falls past a range's end (the extent is not a multiple of the
// local size, or symbolic) does nothing: `guard` says when a thread is in range.
//   Loop ranges         auto mode: the innermost goes to x (coalesced), the next to y, the rest
//                       are merged into z; local sizes up to kDefaultLocal threads, x first
//   Global / Local      explicit (kernel builder, tensor cores, group reduce): Local ranges take
//   GroupReduce         lidx dims in axis order, Global ranges gidx dims; Loop ranges then get
//                       dims of their own with local size 1
#pragma once
#include <cstdint>
#include <vector>

#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

/// Hardware limits of an AMD GPU launch (HSA dispatch packet, gfx11 workgroup).
inline constexpr int64_t kMaxLocalThreads = 1024;
inline constexpr int64_t kDefaultLocalThreads = 256;
inline constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;  // workgroups along x
inline constexpr int64_t kMaxGridYZ = 65535;                  // workgroups along y and z

struct GpuDims {
  std::vector<UOp> global_size;  // workgroups per dim (index UOps, symbolic over variables)
  std::vector<UOp> local_size;   // workitems per dim (constants)
  UOp guard;                     // bool over SPECIALs and variables; null when always true
};

/// The SPECIAL launch index `name` ("gidx0", "lidx2") of extent `extent`.
UOp gpu_special(const std::string& name, const UOp& extent);

/// Replaces the launch ranges of `ast` (after opts and expansion, before lower_reduces) with
/// SPECIALs and fills `dims`. Error when a launch does not fit the hardware limits.
/// A whole-graph pass: the launch grid is chosen from all the output loops of the kernel together.
UOp gpu_dims(const UOp& ast, const CodegenTarget& target, GpuDims& dims);

/// Threads per workgroup of `dims` (the flat-work-group-size of the kernel).
int64_t gpu_local_threads(const GpuDims& dims);

}  // namespace ugrad

namespace ugrad {

/// `program` (from linearize) run only by threads where `guard` holds: the guard's nodes first,
/// then IF(guard) program ENDIF. A null guard returns `program` unchanged.
std::vector<UOp> gpu_guard_program(const UOp& guard, std::vector<UOp> program);

}  // namespace ugrad
