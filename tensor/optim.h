// Optimizers over requires-grad tensors, torch's update rules. step() builds every update as an
// assignment into the buffers of the parameters and of the optimizer's state and realizes them in
// one schedule, so a step inside a TensorJit is captured with the forward and backward passes and
// replays with no host work. The learning rate lives in a device buffer: set_lr() between replays
// changes what the captured step reads.
//
// Mixed precision: a float16/bfloat16 parameter gets a float32 master copy; the update runs on the
// master in float32 (gradients cast up) and the parameter receives the master rounded down.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ugrad {

class Optimizer {
 public:
  /// `params` must require grad (an Error names the first that does not).
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  /// Clears every parameter's gradient.
  void zero_grad();
  /// One update from the accumulated gradients (a parameter without one is left alone), realized
  /// in one schedule with `with` (the loss, say): those are computed from the parameters as they
  /// were before the update (a tensor realized after step() would see the new values).
  void step(std::vector<Tensor> with = {});
  void set_lr(double lr);
  double lr() const { return lr_value_; }
  const std::vector<Tensor>& params() const { return params_; }
  /// Every buffer the optimizer updates besides the parameters (float32 masters, moments, the
  /// step's bias-correction powers), in a fixed order: a checkpoint saves them and restores them
  /// with assign() to resume exactly.
  std::vector<Tensor> state() const;

 protected:
  /// The new value of parameter i (float32 or float64, the master's dtype) from its value `w`
  /// and gradient `g`; the state's assignments go into `writes`.
  virtual Tensor update(size_t i, const Tensor& w, const Tensor& g,
                        std::vector<Tensor>& writes) = 0;
  /// Called once per step before the updates (state shared by all parameters).
  virtual void begin_step(std::vector<Tensor>& /*writes*/) {}
  /// The subclass's state buffers, for state().
  virtual std::vector<Tensor> own_state() const = 0;
  /// A zeroed state buffer shaped like parameter i's master.
  Tensor state_like(size_t i) const;
  /// The learning rate as a scalar of `dtype` (read from its buffer when the step runs).
  Tensor lr_as(DType dtype) const;

 private:
  std::vector<Tensor> params_, masters_;  // masters_[i]: the float32 copy, or params_[i] itself
  std::vector<bool> has_master_;
  Tensor lr_;  // float64 scalar buffer
  double lr_value_;
};

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;  // L2: added to the gradient
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SgdOptions options);

 private:
  Tensor update(size_t i, const Tensor& w, const Tensor& g, std::vector<Tensor>& writes) override;
  std::vector<Tensor> own_state() const override { return velocity_; }
  SgdOptions opt_;
  std::vector<Tensor> velocity_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  /// true (AdamW): the weights decay by lr * weight_decay apart from the gradient; false (Adam):
  /// weight_decay * w is added to the gradient (L2).
  bool decoupled = false;
};

/// Adam and AdamW (decoupled weight decay) with bias correction, as torch.optim defines them.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);

 private:
  void begin_step(std::vector<Tensor>& writes) override;
  Tensor update(size_t i, const Tensor& w, const Tensor& g, std::vector<Tensor>& writes) override;
  std::vector<Tensor> own_state() const override;
  AdamOptions opt_;
  std::vector<Tensor> m_, v_;
  Tensor beta_powers_;  // (2,) float64 buffer: beta1^t, beta2^t of the last step
  Tensor powers_now_;   // this step's: the buffer times (beta1, beta2)
};

/// Scales the gradients of `params` so that their global L2 norm is at most `max_norm`; returns
/// the norm before scaling (a lazy scalar float32).
Tensor clip_grad_norm(std::vector<Tensor>& params, double max_norm);

/// The learning rate at `step` of linear warm-up from 0 to `peak` over `warmup` steps, then a
/// cosine decay to `floor` at `total` steps (and `floor` after).
double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double floor);

}  // namespace ugrad
