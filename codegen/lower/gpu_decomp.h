// GPU-only decompositions of what LLVM 19 cannot (or should not) lower on AMDGPU:
//   f64 EXP2, LOG2, SIN   no lowering at all ("no libcall available"): polynomial approximations
//                         with exact range reduction through the exponent bits
//   f32/f16 SIN           v_sin takes revolutions with no range reduction: x is first reduced to
//                         [-pi, pi] by a two-part 2*pi (Cody-Waite)
#pragma once
#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

/// Rewrites the transcendentals above in `k` (after decompose), once each. A walk, not a rule
/// table: the f32 reduction yields a SIN again, which a fixed-point rewrite would reduce forever.
UOp gpu_decompose(const UOp& k, const CodegenTarget& target);

/// The decompositions themselves, for tests: x is float64 (or float32 for sin_reduced).
UOp exp2_f64(const UOp& x);
UOp log2_f64(const UOp& x);
UOp sin_f64(const UOp& x);
UOp sin_reduced(const UOp& x);

}  // namespace ugrad
