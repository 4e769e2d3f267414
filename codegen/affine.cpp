#include "codegen/affine.h"

#include <unordered_map>

namespace ugrad {

std::optional<int64_t> affine_coefficient(const UOp& e, const UOp& r) {
  std::unordered_map<UOp, std::optional<int64_t>> coef;
  for (const UOp& u : e.toposort()) {
    std::optional<int64_t> c = 0;
    bool depends = false;
    for (const UOp& s : u.src()) depends |= coef.at(s) != 0;
    if (u == r) {
      c = 1;
    } else if (depends) {
      auto at = [&](size_t i) { return coef.at(u.src(i)); };
      switch (u.op()) {
        case Op::ADD:
          c = at(0) && at(1) ? std::optional(*at(0) + *at(1)) : std::nullopt;
          break;
        case Op::SUB:
          c = at(0) && at(1) ? std::optional(*at(0) - *at(1)) : std::nullopt;
          break;
        case Op::NEG:
          c = at(0) ? std::optional(-*at(0)) : std::nullopt;
          break;
        case Op::CAST:  // index -> int32 (narrowed index math) keeps the step
          c = is_int(u.dtype()) ? at(0) : std::nullopt;
          break;
        case Op::MUL:
          // c*r times a constant
          if (u.src(1).is_const() && at(0))
            c = *at(0) * u.src(1).const_int();
          else if (u.src(0).is_const() && at(1))
            c = *at(1) * u.src(0).const_int();
          else
            c = std::nullopt;
          break;
        default:
          c = std::nullopt;
      }
    }
    coef.emplace(u, c);
  }
  return coef.at(e);
}

}  // namespace ugrad
