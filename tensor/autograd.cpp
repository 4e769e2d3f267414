// The Tensor side of gradients: leaves that require grad, backward(), grad(), no-grad scopes.
// The gradient graph itself is built by gradient.cpp.
#include <algorithm>

#include "tensor/gradient.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

thread_local int no_grad_depth = 0;

bool same_shape(const Shape& a, const Shape& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), dims_equal);
}

}  // namespace

NoGradScope::NoGradScope() { ++no_grad_depth; }
NoGradScope::~NoGradScope() { --no_grad_depth; }
bool NoGradScope::active() { return no_grad_depth > 0; }

std::vector<std::weak_ptr<Tensor::State>>& Tensor::grad_leaves() {
  static std::vector<std::weak_ptr<State>> leaves;
  std::erase_if(leaves, [](const std::weak_ptr<State>& s) {
    auto live = s.lock();
    return !live || !live->requires_grad;
  });
  return leaves;
}

Tensor& Tensor::requires_grad_(bool on) {
  if (on && !is_float(dtype()))
    fail("requires_grad: only float tensors have gradients, not {}", dname(dtype()));
  if (on && !is_realized()) realize();  // a buffer of its own: the leaf's identity
  const bool was = state_->requires_grad;
  state_->requires_grad = on;
  if (on && !was) grad_leaves().push_back(state_);
  return *this;
}

bool Tensor::requires_grad() const { return state_ && state_->requires_grad; }

Tensor Tensor::grad() const {
  if (!state_) fail("tensor: use of an empty Tensor handle");
  return state_->grad ? *state_->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  if (!state_) fail("tensor: use of an empty Tensor handle");
  if (grad.defined() && (!same_shape(grad.shape(), shape()) || grad.dtype() != dtype()))
    fail("set_grad: a gradient of shape {} and {} for a tensor of shape {} and {}",
         shape_str(grad.shape()), dname(grad.dtype()), shape_str(shape()), dname(dtype()));
  state_->grad = grad.defined() ? std::make_shared<Tensor>(grad) : nullptr;
}

void Tensor::backward(const Tensor& grad) const {
  if (NoGradScope::active()) fail("backward: called inside a NoGradScope");
  if (!is_float(dtype())) fail("backward: a {} tensor has no gradient", dname(dtype()));
  // A realized tensor differentiates the graph that computed it.
  const Tensor root = state_->lazy ? Tensor(state_->lazy, device()) : *this;
  Tensor seed = grad;
  if (!seed.defined()) {
    if (numel() != 1)
      fail(
          "backward: a tensor of shape {} needs an explicit gradient (only a single element "
          "defaults to 1)",
          shape_str(shape()));
    seed = const_like(root, 1.0);
  } else if (!same_shape(seed.shape(), shape())) {
    fail("backward: the gradient's shape {} is not the tensor's {}", shape_str(seed.shape()),
         shape_str(shape()));
  }
  seed = seed.cast(dtype());
  std::vector<std::shared_ptr<State>> leaves;
  std::vector<UOp> targets;
  for (const auto& weak : grad_leaves()) {
    leaves.push_back(weak.lock());
    targets.push_back(leaves.back()->node);
  }
  const std::unordered_map<UOp, Tensor> g = gradients(root, seed, targets);
  if (g.empty())
    fail(
        "backward: the tensor depends on no tensor that requires grad (or only through "
        "detached or non-differentiable ops)");
  for (const auto& leaf : leaves)
    if (auto it = g.find(leaf->node); it != g.end())
      leaf->grad = std::make_shared<Tensor>(leaf->grad ? *leaf->grad + it->second : it->second);
}

}  // namespace ugrad
