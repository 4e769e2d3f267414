#include "uop/upat.h"

#include <fmt/format.h>

namespace ugrad {

UPat::UPat() : d_(std::make_shared<Data>()) {}
UPat::UPat(Op op, std::vector<UPat> src) {
  auto d = std::make_shared<Data>();
  d->ops = {op};
  d->src = std::move(src);
  d->mode = SrcMode::Exact;
  d_ = std::move(d);
}
UPat::UPat(Op op) {
  auto d = std::make_shared<Data>();
  d->ops = {op};
  d_ = std::move(d);
}

UPat UPat::var(std::string name, DTypePred dtype) {
  auto d = std::make_shared<Data>();
  d->name = std::move(name);
  d->dtype = dtype;
  return UPat(std::move(d));
}
UPat UPat::cvar(std::string name, DTypePred dtype) {
  auto d = std::make_shared<Data>();
  d->ops = {Op::CONST};
  d->name = std::move(name);
  d->dtype = dtype;
  return UPat(std::move(d));
}
UPat UPat::cnst(double value) {
  auto d = std::make_shared<Data>();
  d->ops = {Op::CONST};
  d->const_value = value;
  return UPat(std::move(d));
}
UPat UPat::ops(std::vector<Op> ops, std::vector<UPat> src, bool check_src) {
  auto d = std::make_shared<Data>();
  d->ops = std::move(ops);
  d->src = std::move(src);
  d->mode = check_src ? SrcMode::Exact : SrcMode::Unchecked;
  return UPat(std::move(d));
}
UPat UPat::commutative(Op op, std::vector<UPat> src) {
  auto d = std::make_shared<Data>();
  d->ops = {op};
  d->src = std::move(src);
  d->mode = SrcMode::Permute;
  return UPat(std::move(d));
}

UPat UPat::edit(void (*f)(Data&, const void*), const void* x) const {
  auto d = std::make_shared<Data>(*d_);
  f(*d, x);
  return UPat(std::move(d));
}
UPat UPat::named(std::string name) const {
  return edit([](Data& d, const void* x) { d.name = *static_cast<const std::string*>(x); }, &name);
}
UPat UPat::with_dtype(DTypePred pred) const {
  return edit([](Data& d, const void* x) { d.dtype = *static_cast<const DTypePred*>(x); }, &pred);
}
UPat UPat::with_arg(Arg arg) const {
  return edit([](Data& d, const void* x) { d.arg = *static_cast<const Arg*>(x); }, &arg);
}
UPat UPat::any_len() const {
  return edit([](Data& d, const void*) { d.any_len = true; }, nullptr);
}
UPat UPat::all_src(UPat p) const {
  return edit(
      [](Data& d, const void* x) {
        d.src = {*static_cast<const UPat*>(x)};
        d.mode = SrcMode::Repeat;
      },
      &p);
}

std::string UPat::str() const {
  const Data& d = *d_;
  std::string s(d.ops.empty() ? 1 : 0, '*');
  for (size_t i = 0; i < d.ops.size(); ++i)
    s += fmt::format("{}{}", i ? "|" : "", op_name(d.ops[i]));
  if (d.const_value) s += fmt::format("({})", *d.const_value);
  if (!d.name.empty()) s += ":" + d.name;
  if (d.mode != SrcMode::Unchecked) {
    s += d.mode == SrcMode::Permute ? "{" : "(";
    for (size_t i = 0; i < d.src.size(); ++i) s += (i ? ", " : "") + d.src[i].str();
    if (d.mode == SrcMode::Repeat) s += "...";
    s += d.mode == SrcMode::Permute ? "}" : ")";
  }
  return s;
}

UPat operator+(const UPat& a, const UPat& b) { return UPat::commutative(Op::ADD, {a, b}); }
UPat operator*(const UPat& a, const UPat& b) { return UPat::commutative(Op::MUL, {a, b}); }
UPat operator%(const UPat& a, const UPat& b) { return UPat(Op::MOD, {a, b}); }
UPat idiv(const UPat& a, const UPat& b) { return UPat(Op::IDIV, {a, b}); }
UPat lt(const UPat& a, const UPat& b) { return UPat(Op::CMPLT, {a, b}); }
UPat ne(const UPat& a, const UPat& b) { return UPat::commutative(Op::CMPNE, {a, b}); }
UPat maximum(const UPat& a, const UPat& b) { return UPat::commutative(Op::MAX, {a, b}); }
UPat neg(const UPat& a) { return UPat(Op::NEG, {a}); }
UPat where(const UPat& c, const UPat& a, const UPat& b) { return UPat(Op::WHERE, {c, a, b}); }
UPat operator+(const UPat& a, double c) { return a + UPat::cnst(c); }
UPat operator*(const UPat& a, double c) { return a * UPat::cnst(c); }

bool dt_int(DType t) { return is_int(t); }
bool dt_float(DType t) { return is_float(t); }
bool dt_bool(DType t) { return is_bool(t); }
bool dt_index(DType t) { return t.scalar == Scalar::Index; }

}  // namespace ugrad
