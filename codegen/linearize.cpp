#include "codegen/linearize.h"

#include <algorithm>
#include <unordered_set>

#include "codegen/ranges.h"
#include "uop/error.h"

namespace ugrad {

UOp core_id_special() {
  return UOp::make(Op::SPECIAL, dtypes::index, {UOp::cnst_int(dtypes::index, 1)},
                   std::string("core_id"));
}

namespace {

class Linearizer {
 public:
  Linearizer(const UOp& root, bool threaded) : open_(open_ranges(root)), threaded_(threaded) {
    scopes_.emplace_back();
  }

  void emit_top(const UOp& sink) {
    for (const UOp& n : pending({sink})) {
      if (n == sink) continue;
      const bool guard = threaded_ && is_effect(n) && !has_thread(n);
      if (guard) {
        UOp cond = core_id_special().eq(UOp::cnst_int(dtypes::index, 0));
        for (const UOp& c : pending({cond})) place(c);
        out_.push_back(UOp::make(Op::IF, dtypes::void_, {cond}));
      }
      place(n);
      if (guard) out_.push_back(UOp::make(Op::ENDIF, dtypes::void_, {out_.back()}));
    }
  }

  std::vector<UOp> out_;

 private:
  static bool is_effect(const UOp& u) { return u.op() == Op::STORE || u.op() == Op::END; }
  static bool has_thread(const UOp& end) {
    if (end.op() != Op::END) return false;
    for (size_t i = 1; i < end.src().size(); ++i)
      if (end.src(i).arg_as<RangeArg>().type == AxisType::Thread) return true;
    return false;
  }

  bool done(const UOp& u) const {
    for (const auto& s : scopes_)
      if (s.count(u)) return true;
    return false;
  }

  // Nodes under `roots` not yet placed, sources first. ENDs are leaves (emit_loop places their
  // bodies); RANGEs are placed by the END that opens them, so they are not listed.
  std::vector<UOp> pending(const std::vector<UOp>& roots) const {
    std::vector<UOp> order;
    std::unordered_set<UOp> seen;
    std::vector<std::pair<UOp, size_t>> stack;
    for (const UOp& r : roots) {
      if (done(r) || !seen.insert(r).second) continue;
      stack.emplace_back(r, 0);
      while (!stack.empty()) {
        auto& [u, i] = stack.back();
        const bool leaf = u.op() == Op::END && !(u == r);
        if (!leaf && i < u.src().size()) {
          UOp s = u.src(i++);
          if (s.op() == Op::RANGE || done(s) || !seen.insert(s).second) continue;
          stack.emplace_back(s, 0);
        } else {
          if (u.op() != Op::RANGE) order.push_back(u);
          stack.pop_back();
        }
      }
    }
    return order;
  }

  void place(const UOp& n) {
    if (done(n)) return;
    if (n.op() == Op::END) {
      emit_loop(n);
    } else {
      for (const UOp& s : n.src())
        if (s.op() == Op::RANGE && !done(s) && s.arg_as<RangeArg>().type != AxisType::Upcast)
          internal_error("linearize: {} uses axis {} outside its loop", op_name(n.op()),
                         s.arg_as<RangeArg>().axis);
      out_.push_back(n);
    }
    scopes_.back().insert(n);
  }

  // An END(body, loops...): opens the loops one by one, placing before each loop what does not
  // depend on it or on any loop inside it, then the body, then closes them.
  void emit_loop(const UOp& end) {
    std::vector<UOp> loops(end.src().begin() + 1, end.src().end());
    std::sort(loops.begin(), loops.end(), loop_order);
    std::vector<UOp> roots{end.src(0)};
    for (const UOp& r : loops) roots.push_back(r.src(0));
    std::vector<UOp> nodes = pending(roots);
    auto independent = [&](const UOp& n, size_t from) {
      const std::vector<UOp>& rs = open_.at(n);
      for (size_t i = from; i < loops.size(); ++i)
        if (std::find(rs.begin(), rs.end(), loops[i]) != rs.end()) return false;
      return true;
    };
    for (size_t i = 0; i < loops.size(); ++i) {
      for (const UOp& n : nodes)
        if (!done(n) && independent(n, i)) place(n);
      out_.push_back(loops[i]);
      scopes_.emplace_back();
      scopes_.back().insert(loops[i]);
    }
    for (const UOp& n : nodes) place(n);
    for (size_t i = loops.size(); i-- > 0;) {
      scopes_.pop_back();
      out_.push_back(UOp::make(Op::END, dtypes::void_, {end.src(0), loops[i]}));
    }
  }

  RangeMap open_;
  bool threaded_;
  std::vector<std::unordered_set<UOp>> scopes_;
};

}  // namespace

std::vector<UOp> linearize(const UOp& lowered, bool threaded) {
  Linearizer l(lowered, threaded);
  l.emit_top(lowered);
  return std::move(l.out_);
}

}  // namespace ugrad
