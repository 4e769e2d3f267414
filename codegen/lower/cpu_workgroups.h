// GPU workgroups on the CPU: a hand-written kernel (kernel_builder.h) with explicit GLOBAL/LOCAL
// ranges, LDS arrays and barriers runs as loops. Each workgroup (an iteration of the GLOBAL
// ranges) is one iteration of the outer loops, and the threads of the CPU take whole workgroups
// (the widest GLOBAL range becomes the Thread axis). Inside it:
//   DEFINE_LOCAL d        a stack array of the kernel invocation, reused by the workgroups one
//                         after another: every access is tied to the workgroup loops
//                         (INDEX(d, i) -> INDEX(AFTER(d, globals...), i)) so none is hoisted out
//   BARRIER(stores...)    ends a phase: END(stores', l'...), the stores with every LOCAL range l
//                         they use renamed to a fresh range l' and closed there; what reads the
//                         array AFTER the barrier runs in a later loop over the workitems, so
//                         every workitem finishes the phase before any starts the next
//   AFTER(x, BARRIER(x))  a barrier after reads (no stores) orders nothing more: x
//   WMMA(a, b, c)         per lane: the wave's fragments are stored to two local arrays in a
//                         phase of their own; each lane then sums its 8 outputs' 16 products
//                         from the fragments of the lanes holding its rows and its column
//                         (the layout of tensor_cores.h). An Error when the workgroup is not
//                         whole waves of 32 workitems.
// A value the stores and a later phase share is recomputed in each phase (the renamed copy and
// the original), not kept per workitem across the split: it must be a pure function of the
// indices and of loads of memory no later phase writes (an LDS load sees the array as of its
// AFTER only until the array is written again). A barrier inside a loop (a tile per iteration of a
// reduce) recomputes that iteration's phases in each workitem's own pass: right, but slower by the
// workgroup size for those phases.
#pragma once
#include <cstdint>

#include "uop/uop.h"

namespace ugrad {

/// `ast` (after expansion, before lower_reduces) with its workgroups as CPU loops; `cpu_threads`
/// is raised to the workgroups worth one core each (at most `cores`) when the kernel is not
/// threaded yet. Error on a WMMA outside whole waves. A whole-graph pass: the workgroup
/// ranges and fresh axis ids are read from the whole kernel.
UOp cpu_workgroups(const UOp& ast, int64_t cores, int64_t& cpu_threads);

}  // namespace ugrad
