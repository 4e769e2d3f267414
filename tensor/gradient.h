// Reverse-mode gradients on the lazy tensor graph (tinygrad's approach): the gradient of a root
// with respect to chosen nodes is another lazy graph, built by walking the root's graph from the
// root to the sources and applying one rule per op. The rules are a table (gradient.cpp), one
// entry per op of uop/ops.h, each written with tensor ops; tensor functions built from primitives
// (matmul, softmax, gather, ...) get their gradients through their decomposition. The result is an
// ordinary graph: the scheduler fuses it and a TensorJit captures it like any other.
//
// Gradients flow through float nodes only: into an integer or bool source (an index, a mask, a
// cast from an int) nothing flows. DETACH stops them; so do ops without a derivative (comparisons,
// bit ops, BITCAST, TRUNC's zero, ASSIGN, a hand-written KERNEL's output).
#pragma once
#include <span>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace ugrad {

/// d(sum(root * root_grad)) / d(target) for each target node the root depends on through
/// differentiable ops (targets it does not reach are absent). root_grad has root's shape and
/// dtype; each gradient has its target's.
std::unordered_map<UOp, Tensor> gradients(const Tensor& root, const Tensor& root_grad,
                                          std::span<const UOp> targets);

/// The ops the gradient table has an entry for (a rule or "no gradient"): every op that can
/// appear in a tensor graph. For the test that the table is complete.
std::vector<Op> ops_with_gradient_entry();

}  // namespace ugrad
