#include "tensor/optim.h"

#include <cmath>
#include <numbers>

#include "base/error.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : params_(std::move(params)), lr_value_(lr) {
  if (params_.empty()) fail("optimizer: no parameters");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.requires_grad()) fail("optimizer: parameter {} does not require grad", i);
    const bool half = p.dtype() == dtypes::float16 || p.dtype() == dtypes::bfloat16;
    masters_.push_back(half ? p.detach().cast(dtypes::float32).contiguous().realize() : p);
    has_master_.push_back(half);
  }
  lr_ = Tensor::full({}, lr, dtypes::float64, params_[0].device()).contiguous().realize();
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad(Tensor());
}

void Optimizer::set_lr(double lr) {
  lr_value_ = lr;
  lr_.assign(lr).realize();
}

Tensor Optimizer::state_like(size_t i) const {
  const Tensor& m = masters_[i];
  return Tensor::zeros(m.dims(), m.dtype(), m.device()).contiguous().realize();
}

Tensor Optimizer::lr_as(DType dtype) const { return lr_.cast(dtype); }

std::vector<Tensor> Optimizer::state() const {
  std::vector<Tensor> out;
  for (size_t i = 0; i < masters_.size(); ++i)
    if (has_master_[i]) out.push_back(masters_[i]);
  for (Tensor& t : own_state()) out.push_back(std::move(t));
  return out;
}

void Optimizer::step(std::vector<Tensor> with) {
  std::vector<Tensor> writes = std::move(with);
  NoGradScope no_grad;
  begin_step(writes);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    const Tensor& master = masters_[i];
    // What reads a buffer that the step also writes reads the assignment (it orders the read
    // after the write), never the buffer itself.
    const Tensor w = master.assign(update(i, master, g.cast(master.dtype()), writes));
    writes.push_back(w);
    if (has_master_[i]) writes.push_back(params_[i].assign(w));
  }
  Tensor::realize_all(writes);
}

SGD::SGD(std::vector<Tensor> params, SgdOptions options)
    : Optimizer(std::move(params), options.lr), opt_(options) {
  if (opt_.nesterov && opt_.momentum <= 0) fail("SGD: nesterov needs a momentum > 0");
  if (opt_.momentum > 0)
    for (size_t i = 0; i < this->params().size(); ++i) velocity_.push_back(state_like(i));
}

Tensor SGD::update(size_t i, const Tensor& w, const Tensor& grad, std::vector<Tensor>& writes) {
  Tensor g = opt_.weight_decay != 0 ? grad + w * opt_.weight_decay : grad;
  if (opt_.momentum > 0) {
    const Tensor v = velocity_[i].assign(velocity_[i] * opt_.momentum + g);
    writes.push_back(v);
    g = opt_.nesterov ? g + v * opt_.momentum : v;
  }
  return w - lr_as(w.dtype()) * g;
}

std::vector<Tensor> Adam::own_state() const {
  std::vector<Tensor> out = m_;
  out.insert(out.end(), v_.begin(), v_.end());
  out.push_back(beta_powers_);
  return out;
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer(std::move(params), options.lr), opt_(options) {
  for (size_t i = 0; i < this->params().size(); ++i) {
    m_.push_back(state_like(i));
    v_.push_back(state_like(i));
  }
  beta_powers_ =
      Tensor::ones({2}, dtypes::float64, this->params()[0].device()).contiguous().realize();
}

void Adam::begin_step(std::vector<Tensor>& writes) {
  powers_now_ = beta_powers_.assign(
      beta_powers_ * Tensor::from_vector<double>({opt_.beta1, opt_.beta2}, {2}, dtypes::float64,
                                                 beta_powers_.device()));
  writes.push_back(powers_now_);
}

Tensor Adam::update(size_t i, const Tensor& w, const Tensor& grad, std::vector<Tensor>& writes) {
  const DType t = w.dtype();
  const Tensor lr = lr_as(t);
  Tensor g = grad, decayed = w;
  if (opt_.weight_decay != 0) {
    if (opt_.decoupled)
      decayed = w * (1.0 - lr * opt_.weight_decay);
    else
      g = g + w * opt_.weight_decay;
  }
  const Tensor m = m_[i].assign(m_[i] * opt_.beta1 + g * (1 - opt_.beta1));
  const Tensor v = v_[i].assign(v_[i] * opt_.beta2 + g * g * (1 - opt_.beta2));
  writes.push_back(m);
  writes.push_back(v);
  const Tensor b1 = 1.0 - powers_now_.shrink({{0, 1}}).reshape({}).cast(t);
  const Tensor b2 = 1.0 - powers_now_.shrink({{1, 2}}).reshape({}).cast(t);
  return decayed - lr * (m / b1) / ((v / b2).sqrt() + opt_.eps);
}

Tensor clip_grad_norm(std::vector<Tensor>& params, double max_norm) {
  NoGradScope no_grad;
  Tensor total;
  for (const Tensor& p : params)
    if (Tensor g = p.grad(); g.defined()) {
      Tensor s = g.cast(dtypes::float32).square().sum();
      total = total.defined() ? total + s : s;
    }
  if (!total.defined()) fail("clip_grad_norm: no parameter has a gradient");
  const Tensor norm = total.sqrt();
  const Tensor scale = minimum(max_norm / (norm + 1e-6), 1.0);
  for (Tensor& p : params)
    if (Tensor g = p.grad(); g.defined()) p.set_grad(g * scale.cast(g.dtype()));
  return norm;
}

double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double floor) {
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (step >= total) return floor;
  const double t = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
  return floor + (peak - floor) * 0.5 * (1 + std::cos(std::numbers::pi * t));
}

}  // namespace ugrad
