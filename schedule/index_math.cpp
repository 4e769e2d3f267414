#include "schedule/index_math.h"

namespace ugrad::index_math {

UOp add(const UOp& a, const UOp& b) {
  if (a.is_const() && b.is_const()) return dim(a.const_int() + b.const_int());
  if (b.is_const(0)) return a;
  if (a.is_const(0)) return b;
  return a + b;
}

UOp sub(const UOp& a, const UOp& b) {
  if (b.is_const()) return add(a, dim(-b.const_int()));
  return a - b;
}

UOp mul(const UOp& a, const UOp& b) {
  if (a.is_const() && b.is_const()) return dim(a.const_int() * b.const_int());
  if (a.is_const(0) || b.is_const(0)) return dim(0);
  if (b.is_const(1)) return a;
  if (a.is_const(1)) return b;
  return a * b;
}

UOp div(const UOp& a, const UOp& b) {
  if (b.is_const(1)) return a;
  if (a.is_const() && b.is_const() && a.const_int() >= 0 && b.const_int() > 0)
    return dim(a.const_int() / b.const_int());
  return a.idiv(b);
}

UOp mod(const UOp& a, const UOp& b) {
  if (b.is_const(1)) return dim(0);
  if (a.is_const() && b.is_const() && a.const_int() >= 0 && b.const_int() > 0)
    return dim(a.const_int() % b.const_int());
  return a % b;
}

UOp both(const UOp& a, const UOp& b) {
  if (!a || a.is_const(1)) return b;
  if (!b || b.is_const(1)) return a;
  return a.alu(Op::AND, b);
}

std::vector<UOp> strides(const Shape& dims) {
  std::vector<UOp> out(dims.size());
  UOp acc = dim(1);
  for (size_t i = dims.size(); i-- > 0;) {
    out[i] = acc;
    acc = mul(acc, dims[i]);
  }
  return out;
}

UOp flatten(const std::vector<UOp>& idx, const Shape& dims) {
  std::vector<UOp> st = strides(dims);
  UOp flat = dim(0);
  for (size_t i = 0; i < idx.size(); ++i)
    if (!dims[i].is_const(1)) flat = add(flat, mul(idx[i], st[i]));
  return flat;
}

std::vector<UOp> unflatten(const UOp& flat, const Shape& dims) {
  std::vector<UOp> st = strides(dims), out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_const(1)) {
      out[i] = dim(0);
      continue;
    }
    UOp q = div(flat, st[i]);
    out[i] = i == 0 ? q : mod(q, dims[i]);  // the leading axis needs no wrap
  }
  return out;
}

}  // namespace ugrad::index_math
