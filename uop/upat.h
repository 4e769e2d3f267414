// UPat: a pattern over UOps. Matches by op set, dtype predicate, arg and sources; binds names.
// Sources match exactly in order, in any order (commutative ops), or all against one pattern.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ugrad {

class UPat {
 public:
  enum class SrcMode : uint8_t { Unchecked, Exact, Permute, Repeat };
  using DTypePred = bool (*)(DType);

  /// Matches any UOp (binds nothing).
  UPat();
  /// Matches `op` with exactly these sources in order.
  UPat(Op op, std::vector<UPat> src);
  /// Matches `op` with any sources.
  explicit UPat(Op op);

  /// Any UOp, bound to `name`.
  static UPat var(std::string name, DTypePred dtype = nullptr);
  /// A CONST, bound to `name`.
  static UPat cvar(std::string name, DTypePred dtype = nullptr);
  /// A CONST with this value (any numeric dtype).
  static UPat cnst(double value);
  /// One of `ops`, with sources in order (or unchecked when `src` is empty and unchecked is set).
  static UPat ops(std::vector<Op> ops, std::vector<UPat> src = {}, bool check_src = true);
  /// `op` whose sources match `src` in some order.
  static UPat commutative(Op op, std::vector<UPat> src);

  UPat named(std::string name) const;
  UPat with_dtype(DTypePred pred) const;
  UPat with_arg(Arg arg) const;
  /// Sources beyond the listed ones are allowed.
  UPat any_len() const;
  /// Every source must match `p`.
  UPat all_src(UPat p) const;

  struct Data {
    std::vector<Op> ops;  // empty: any op
    std::vector<UPat> src;
    SrcMode mode = SrcMode::Unchecked;
    bool any_len = false;
    std::optional<Arg> arg;
    std::optional<double> const_value;
    std::string name;
    DTypePred dtype = nullptr;
  };
  const Data& data() const { return *d_; }
  /// Readable form, for rule names and errors.
  std::string str() const;

 private:
  explicit UPat(std::shared_ptr<Data> d) : d_(std::move(d)) {}
  UPat edit(void (*f)(Data&, const void*), const void* x) const;
  std::shared_ptr<const Data> d_;
};

// Pattern arithmetic mirrors UOp arithmetic; + * max != == & | ^ match in either source order.
UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);
UPat operator%(const UPat& a, const UPat& b);
UPat idiv(const UPat& a, const UPat& b);
UPat lt(const UPat& a, const UPat& b);
UPat ne(const UPat& a, const UPat& b);
UPat maximum(const UPat& a, const UPat& b);
UPat neg(const UPat& a);
UPat where(const UPat& c, const UPat& a, const UPat& b);
UPat operator+(const UPat& a, double c);
UPat operator*(const UPat& a, double c);

/// DType predicates for patterns.
bool dt_int(DType t);
bool dt_float(DType t);
bool dt_bool(DType t);
bool dt_index(DType t);

}  // namespace ugrad
