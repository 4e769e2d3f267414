#include "uop/pattern_matcher.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace ugrad {

const UOp& Match::operator[](std::string_view name) const {
  for (const auto& [n, u] : binds)
    if (*n == name) return u;
  internal_error("rule asked for '{}' but its pattern binds no such name", name);
}

namespace {

// Continuation-passing matcher: `k` is called for every way the pattern matches, and the first
// continuation that succeeds wins. This backtracks fully through nested commutative sources.
template <typename K>
bool match(const UPat& pat, const UOp& u, Match& m, const K& k);

bool match_list(const std::vector<const UPat*>& pats, const std::vector<const UOp*>& us, size_t i,
                Match& m, const std::function<bool()>& k) {
  if (i == pats.size()) return k();
  return match(*pats[i], *us[i], m, [&] { return match_list(pats, us, i + 1, m, k); });
}

bool node_ok(const UPat::Data& d, const UOp& u) {
  if (!d.ops.empty() && std::find(d.ops.begin(), d.ops.end(), u.op()) == d.ops.end()) return false;
  if (d.dtype && !d.dtype(u.dtype())) return false;
  if (d.arg && !arg_equal(*d.arg, u.arg())) return false;
  if (d.const_value && (u.op() != Op::CONST || u.const_value() != *d.const_value)) return false;
  return true;
}

template <typename K>
bool match(const UPat& pat, const UOp& u, Match& m, const K& k) {
  const UPat::Data& d = pat.data();
  if (!node_ok(d, u)) return false;
  size_t saved = m.binds.size();
  if (!d.name.empty()) {
    auto it =
        std::find_if(m.binds.begin(), m.binds.end(), [&](auto& b) { return *b.first == d.name; });
    if (it != m.binds.end()) {
      if (!(it->second == u)) return false;
    } else {
      m.binds.emplace_back(&d.name, u);
    }
  }
  auto undo = [&] {
    m.binds.resize(saved);
    return false;
  };
  const auto& src = u.src();
  std::function<bool()> cont = [&] { return k(); };
  switch (d.mode) {
    case UPat::SrcMode::Unchecked:
      if (k()) return true;
      return undo();
    case UPat::SrcMode::Repeat: {
      std::vector<const UPat*> pats(src.size(), &d.src[0]);
      std::vector<const UOp*> us;
      for (const UOp& s : src) us.push_back(&s);
      if (match_list(pats, us, 0, m, cont)) return true;
      return undo();
    }
    case UPat::SrcMode::Exact:
    case UPat::SrcMode::Permute: {
      if (d.any_len ? src.size() < d.src.size() : src.size() != d.src.size()) return undo();
      std::vector<const UPat*> pats;
      for (const UPat& p : d.src) pats.push_back(&p);
      std::vector<size_t> order(d.src.size());
      std::iota(order.begin(), order.end(), 0);
      do {
        std::vector<const UOp*> us;
        for (size_t i : order) us.push_back(&src[i]);
        if (match_list(pats, us, 0, m, cont)) return true;
      } while (d.mode == UPat::SrcMode::Permute &&
               std::next_permutation(order.begin(), order.end()));
      return undo();
    }
  }
  return undo();
}

// Ops that must appear among a node's sources for the pattern to have a chance.
std::bitset<128> required_ops(const UPat& p) {
  std::bitset<128> req;
  const auto& d = p.data();
  if (d.mode == UPat::SrcMode::Exact || d.mode == UPat::SrcMode::Permute)
    for (const UPat& s : d.src)
      if (s.data().ops.size() == 1) req.set(static_cast<size_t>(s.data().ops[0]));
  return req;
}

}  // namespace

bool upat_match(const UPat& pat, const UOp& u, Match& m) {
  return match(pat, u, m, [] { return true; });
}

Rule::Rule(UPat p, RewriteFn f, const char* file, int line)
    : pat(std::move(p)),
      fn(std::move(f)),
      name(fmt::format("{}:{}", file, line)),
      required_child_ops(required_ops(pat)) {
  // Keep only the path from the repository root, so names read the same on every machine.
  size_t cut = std::string::npos;
  for (std::string_view top : {"/uop/", "/schedule/", "/codegen/", "/runtime/", "/tensor/", "/llm/",
                               "/test/", "/bench/", "/examples/"})
    cut = std::min(cut, name.find(top));
  if (cut != std::string::npos) name = name.substr(cut + 1);
}

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    const auto& ops = rules_[i].pat.data().ops;
    for (int op = 0; op < kNumOps; ++op)
      if (ops.empty() || std::find(ops.begin(), ops.end(), static_cast<Op>(op)) != ops.end())
        by_op_[op].push_back(i);
  }
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& other) const {
  std::vector<Rule> all = rules_;
  all.insert(all.end(), other.rules_.begin(), other.rules_.end());
  return PatternMatcher(std::move(all));
}

std::optional<UOp> PatternMatcher::rewrite(const UOp& u, void* ctx, const Rule** fired) const {
  const auto& bucket = by_op_[static_cast<size_t>(u.op())];
  if (bucket.empty()) return std::nullopt;
  std::bitset<128> child_ops;
  for (const UOp& s : u.src()) child_ops.set(static_cast<size_t>(s.op()));
  for (uint32_t i : bucket) {
    const Rule& r = rules_[i];
    if ((r.required_child_ops & ~child_ops).any()) continue;
    Match m(u, ctx);
    if (!upat_match(r.pat, u, m)) continue;
    if (std::optional<UOp> out = r.fn(m); out && !(*out == u)) {
      if (fired) *fired = &r;
      return out;
    }
  }
  return std::nullopt;
}

}  // namespace ugrad
