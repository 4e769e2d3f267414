#include "tensor/gradient.h"

#include <functional>
#include <map>
#include <numbers>
#include <unordered_set>

#include "base/error.h"
#include "tensor/tensor_impl.h"
#include "uop/symbolic.h"

namespace ugrad {
namespace {

using namespace tensor_detail;

// What a rule sees: the node (as a tensor), the gradient arriving at it, and its sources.
struct GradInput {
  const UOp& node;
  const Tensor& out;
  const Tensor& grad;
  const std::vector<Tensor>& src;
};
// One gradient per source, in order; an empty handle where none flows.
using GradRule = std::function<std::vector<Tensor>(const GradInput&)>;

// The symbolic sizes a PAD or SHRINK node carries: n values, then n more.
std::vector<std::pair<UOp, UOp>> size_pairs(const UOp& node) {
  const size_t n = (node.src().size() - 1) / 2;
  std::vector<std::pair<UOp, UOp>> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(node.src(1 + i), node.src(1 + n + i));
  return out;
}

std::vector<Tensor> reduce_grad(const GradInput& in) {
  const ReduceArg& r = in.node.arg_as<ReduceArg>();
  const Tensor& x = in.src[0];
  const Shape& s = x.shape();
  switch (r.op) {
    case Op::ADD:
      // The gradient is broadcast back over the reduced axes: materialized first, else every
      // element of the broadcast recomputes it (a matmul's weight gradient recomputed the whole
      // elementwise chain behind dOut once per input column).
      return {in.grad.contiguous().expand_to(s)};
    case Op::MAX: {
      // Ties share the gradient evenly.
      Tensor hit = x.eq(in.out.expand_to(s));
      Tensor count = hit.cast(in.grad.dtype()).sum(r.axes, true);
      return {hit.where((in.grad / count).expand_to(s), 0)};
    }
    case Op::MUL: {
      // d prod / d x_i is the product of the others: out / x_i where x_i != 0; at a zero, the
      // product of the non-zeros when it is the only zero, else 0.
      Tensor zero = x.eq(0);
      Tensor zeros = zero.cast(dtypes::int32).sum(r.axes, true).expand_to(s);
      Tensor others = zero.where(1, x).prod(r.axes, true).expand_to(s);
      Tensor g = in.grad.expand_to(s);
      Tensor at_zero = zeros.eq(1).where(others, 0);
      return {g * zero.where(at_zero, in.out.expand_to(s) / zero.where(1, x))};
    }
    default:
      internal_error("gradient: REDUCE_AXIS with {}", op_name(r.op));
  }
}

std::vector<Tensor> expand_grad(const GradInput& in) {
  const Shape &from = in.src[0].shape(), &to = in.out.shape();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (!dims_equal(from[i], to[i])) axes.push_back(static_cast<int64_t>(i));
  return {in.grad.sum(axes, true).reshape_to(from)};
}

std::vector<Tensor> permute_grad(const GradInput& in) {
  const auto& order = in.node.arg_as<std::vector<int64_t>>();
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
  return {in.grad.permute(inverse)};
}

std::vector<Tensor> pad_grad(const GradInput& in) {
  std::vector<std::pair<UOp, UOp>> keep;
  const Shape& s = in.src[0].shape();
  auto pads = size_pairs(in.node);
  for (size_t i = 0; i < s.size(); ++i)
    keep.emplace_back(pads[i].first, simplify(pads[i].first + s[i]));
  return {in.grad.shrink_to(keep)};
}

std::vector<Tensor> shrink_grad(const GradInput& in) {
  std::vector<std::pair<UOp, UOp>> pads;
  const Shape& s = in.src[0].shape();
  auto ranges = size_pairs(in.node);
  for (size_t i = 0; i < s.size(); ++i)
    pads.emplace_back(ranges[i].first, simplify(s[i] - ranges[i].second));
  return {in.grad.pad_to(pads)};
}

// maximum(a, b): the larger side takes the gradient; ties share it evenly.
std::vector<Tensor> max_grad(const GradInput& in) {
  const Tensor &a = in.src[0], &b = in.src[1];
  Tensor share = a.gt(b).where(1.0, a.eq(b).where(0.5, 0.0)).cast(in.grad.dtype());
  Tensor ga = in.grad * share;
  return {ga, in.grad - ga};
}

constexpr double kLn2 = std::numbers::ln2;

// The table: every op a tensor graph can hold, with its rule or nullptr (no gradient flows).
const std::map<Op, GradRule>& rules() {
  static const std::map<Op, GradRule> table = {
      // Leaves and what no gradient crosses.
      {Op::CONST, nullptr},
      {Op::BUFFER, nullptr},
      {Op::PARAM, nullptr},
      {Op::RANGE, nullptr},
      {Op::DETACH, nullptr},
      {Op::ASSIGN, nullptr},
      {Op::KERNEL, nullptr},
      {Op::AFTER, nullptr},
      {Op::BITCAST, nullptr},
      {Op::TRUNC, nullptr},  // zero almost everywhere
      {Op::CMPLT, nullptr},
      {Op::CMPNE, nullptr},
      {Op::CMPEQ, nullptr},
      {Op::AND, nullptr},
      {Op::OR, nullptr},
      {Op::XOR, nullptr},
      {Op::SHL, nullptr},
      {Op::SHR, nullptr},
      {Op::IDIV, nullptr},
      {Op::MOD, nullptr},
      {Op::DOT4, nullptr},
      {Op::BYTE_LUT, nullptr},
      // Elementwise.
      {Op::CAST,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad.cast(in.src[0].dtype())};
       }},
      {Op::NEG, [](const GradInput& in) -> std::vector<Tensor> { return {-in.grad}; }},
      {Op::EXP2,
       [](const GradInput& in) -> std::vector<Tensor> { return {in.grad * in.out * kLn2}; }},
      {Op::LOG2,
       [](const GradInput& in) -> std::vector<Tensor> { return {in.grad / (in.src[0] * kLn2)}; }},
      {Op::SIN,
       [](const GradInput& in) -> std::vector<Tensor> { return {in.grad * in.src[0].cos()}; }},
      {Op::SQRT,
       [](const GradInput& in) -> std::vector<Tensor> { return {in.grad / (in.out * 2)}; }},
      {Op::RECIP,
       [](const GradInput& in) -> std::vector<Tensor> { return {-in.grad * in.out * in.out}; }},
      {Op::ADD,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad, in.grad};
       }},
      {Op::SUB,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad, -in.grad};
       }},
      {Op::MUL,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad * in.src[1], in.grad * in.src[0]};
       }},
      {Op::FDIV,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad / in.src[1], -in.grad * in.out / in.src[1]};
       }},
      {Op::MAX, max_grad},
      {Op::POW,
       [](const GradInput& in) -> std::vector<Tensor> {
         const Tensor &a = in.src[0], &b = in.src[1];
         return {in.grad * b * a.pow(b - 1), in.grad * in.out * a.log()};
       }},
      {Op::WHERE,
       [](const GradInput& in) -> std::vector<Tensor> {
         const Tensor& c = in.src[0];
         return {Tensor(), c.where(in.grad, 0), c.where(0, in.grad)};
       }},
      {Op::MULACC,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad * in.src[1], in.grad * in.src[0], in.grad};
       }},
      // Movement.
      {Op::RESHAPE,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad.reshape_to(in.src[0].shape())};
       }},
      {Op::PERMUTE, permute_grad},
      {Op::EXPAND, expand_grad},
      {Op::PAD, pad_grad},
      {Op::SHRINK, shrink_grad},
      {Op::FLIP,
       [](const GradInput& in) -> std::vector<Tensor> {
         return {in.grad.flip(in.node.arg_as<std::vector<int64_t>>())};
       }},
      // The rest of the tensor graph.
      {Op::REDUCE_AXIS, reduce_grad},
      {Op::CONTIGUOUS, [](const GradInput& in) -> std::vector<Tensor> { return {in.grad}; }},
      {Op::COPY,
       [](const GradInput& in) -> std::vector<Tensor> { return {in.grad.to(in.src[0].device())}; }},
  };
  return table;
}

// The device a node's values live on: its first buffer's, else `fallback` (constants).
std::string device_of(const UOp& node, const std::string& fallback) {
  for (const UOp& u : node.toposort())
    if (u.op() == Op::BUFFER) return u.arg_as<BufferArg>().device;
  return fallback;
}

}  // namespace

std::vector<Op> ops_with_gradient_entry() {
  std::vector<Op> out;
  for (const auto& [op, rule] : rules()) out.push_back(op);
  return out;
}

std::unordered_map<UOp, Tensor> gradients(const Tensor& root, const Tensor& root_grad,
                                          std::span<const UOp> targets) {
  const std::unordered_set<UOp> wanted(targets.begin(), targets.end());
  const std::vector<UOp> order = root.node().toposort();  // sources before users
  // The nodes on a path to a target (the only ones a gradient is built for).
  std::unordered_set<UOp> reaches;
  for (const UOp& u : order) {
    bool r = wanted.count(u) > 0;
    for (const UOp& s : u.src()) r = r || reaches.count(s) > 0;
    if (r) reaches.insert(u);
  }
  std::unordered_map<UOp, Tensor> grad;
  std::unordered_map<UOp, std::string> device;
  if (reaches.count(root.node())) grad.emplace(root.node(), root_grad);
  device.emplace(root.node(), root.device());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    auto g = grad.find(u);
    if (g == grad.end() || wanted.count(u)) continue;  // targets are where gradients stop
    auto rule = rules().find(u.op());
    if (rule == rules().end())
      internal_error("gradient: no entry for {} in the gradient table", op_name(u.op()));
    if (!rule->second) continue;
    const std::string& dev = device.at(u);
    std::vector<Tensor> src;
    for (const UOp& s : u.src()) src.emplace_back(s, u.op() == Op::COPY ? device_of(s, dev) : dev);
    const Tensor out(u, dev);
    const std::vector<Tensor> gs = rule->second({u, out, g->second, src});
    for (size_t i = 0; i < gs.size(); ++i) {
      const UOp& s = u.src(i);
      if (!gs[i].defined() || !reaches.count(s) || !is_float(s.dtype())) continue;
      device.emplace(s, src[i].device());
      auto [slot, fresh] = grad.emplace(s, gs[i]);
      if (!fresh) slot->second = slot->second + gs[i];
    }
  }
  std::unordered_map<UOp, Tensor> out;
  for (const UOp& t : targets)
    if (auto g = grad.find(t); g != grad.end()) out.emplace(t, g->second);
  return out;
}

}  // namespace ugrad
