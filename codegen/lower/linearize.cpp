#include "codegen/lower/linearize.h"

#include <algorithm>
#include <unordered_set>

#include "base/error.h"
#include "codegen/ranges.h"

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
      if (n == sink || !ready(n)) continue;
      const bool guard = threaded_ && writes_global(n) && !has_thread(n);
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
  // A store to a buffer parameter, or a loop nest containing one.
  static bool writes_global(const UOp& u) {
    if (u.op() != Op::STORE && u.op() != Op::END) return false;
    for (const UOp& x : u.toposort()) {
      if (x.op() != Op::STORE) continue;
      UOp base = x.src(0).src(0);
      while (base.op() == Op::AFTER) base = base.src(0);
      if (base.op() == Op::PARAM) return true;
    }
    return false;
  }
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

  // Vector lanes (an upcast or a reduce's lane axis left by the expander) are not loops.
  static bool is_lanes(const UOp& r) {
    const AxisType t = r.arg_as<RangeArg>().type;
    return t == AxisType::Upcast || t == AxisType::Unroll;
  }

  // Every range `n` depends on is open (vector lanes are always available).
  bool ready(const UOp& n) const {
    for (const UOp& r : open_.at(n))
      if (!is_lanes(r) && !done(r)) return false;
    return true;
  }

  // Nodes under `roots` not yet placed, sources first, nested loop bodies included; RANGEs are
  // placed by the END that opens them, so they are not listed.
  std::vector<UOp> pending(const std::vector<UOp>& roots) const {
    std::vector<UOp> order;
    std::unordered_set<UOp> seen;
    std::vector<std::pair<UOp, size_t>> stack;
    for (const UOp& r : roots) {
      if (done(r) || !seen.insert(r).second) continue;
      stack.emplace_back(r, 0);
      while (!stack.empty()) {
        auto& [u, i] = stack.back();
        if (i < u.src().size()) {
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
        if (s.op() == Op::RANGE && !done(s) && !is_lanes(s))
          internal_error("linearize: {} uses axis {} outside its loop", op_name(n.op()),
                         s.arg_as<RangeArg>().axis);
      out_.push_back(n);
    }
    scopes_.back().insert(n);
  }

  // An END(body, loops...): opens the loops one by one, placing before each loop whatever under
  // it is ready (every range it depends on is open: loop-invariant code and copies are hoisted),
  // then what is ready inside all of them (nested loops place their own bodies), then closes them.
  void emit_loop(const UOp& end) {
    std::vector<UOp> loops(end.src().begin() + 1, end.src().end());
    std::sort(loops.begin(), loops.end(), loop_order);
    std::vector<UOp> roots{end.src(0)};
    for (const UOp& r : loops) roots.push_back(r.src(0));
    std::vector<UOp> nodes = pending(roots);
    for (size_t i = 0; i <= loops.size(); ++i) {
      for (const UOp& n : nodes)
        if (!done(n) && ready(n)) place(n);
      if (i == loops.size()) break;
      out_.push_back(loops[i]);
      scopes_.emplace_back();
      scopes_.back().insert(loops[i]);
    }
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
