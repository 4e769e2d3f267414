#include "uop/uop.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/error.h"
#include "uop/alu.h"

namespace ugrad {

// ---- hashing: fixed mixing functions, nothing process-dependent (no pointers, no std::hash).

namespace {

constexpr uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finalizer over h ^ v, then a multiply-rotate combine
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t hash_dtype(DType t) {
  return (uint64_t(t.scalar) << 24) | (uint64_t(t.count) << 8) | (uint64_t(t.is_ptr) << 4) |
         uint64_t(t.addrspace);
}

}  // namespace

std::string_view axis_type_name(AxisType t) {
  static constexpr std::string_view names[] = {"loop",        "global", "local",  "reduce",
                                               "groupreduce", "upcast", "unroll", "thread"};
  return names[static_cast<int>(t)];
}

bool arg_equal(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}

uint64_t arg_hash(const Arg& a) {
  uint64_t h = mix(0, a.index());
  struct Visitor {
    uint64_t h;
    uint64_t operator()(std::monostate) { return h; }
    uint64_t operator()(bool v) { return mix(h, v); }
    uint64_t operator()(int64_t v) { return mix(h, static_cast<uint64_t>(v)); }
    uint64_t operator()(double v) { return mix(h, std::bit_cast<uint64_t>(v)); }
    uint64_t operator()(const std::string& v) { return mix(h, hash_string(v)); }
    uint64_t operator()(const std::vector<int64_t>& v) {
      for (int64_t x : v) h = mix(h, static_cast<uint64_t>(x));
      return mix(h, v.size());
    }
    uint64_t operator()(Op v) { return mix(h, static_cast<uint64_t>(v)); }
    uint64_t operator()(const ParamArg& v) {
      return mix(mix(mix(mix(h, v.slot), hash_string(v.name)), v.lo), v.hi);
    }
    uint64_t operator()(const BufferArg& v) {
      return mix(mix(mix(h, v.id), v.size), hash_string(v.device));
    }
    uint64_t operator()(const RangeArg& v) { return mix(mix(h, v.axis), uint64_t(v.type)); }
    uint64_t operator()(const ReduceArg& v) {
      h = mix(h, uint64_t(v.op));
      for (int64_t x : v.axes) h = mix(h, x);
      return mix(h, v.axes.size());
    }
    uint64_t operator()(const Dot4Arg& v) { return mix(mix(h, v.a_signed), v.b_signed); }
  };
  return std::visit(Visitor{h}, a);
}

[[noreturn]] void throw_bad_arg_access() {
  internal_error("UOp::arg_as: the arg holds another type");
}

// ---- interning

namespace {

// Linear probing over a power-of-two table: the first slot from `start` where `stop` holds.
template <class Stop>
size_t probe(size_t start, size_t capacity, Stop stop) {
  size_t i = start & (capacity - 1);
  while (!stop(i)) i = (i + 1) & (capacity - 1);
  return i;
}

bool same(Op op, DType dt, const std::vector<UOp>& src, const Arg& arg, const UOpNode* n) {
  return n->op == op && n->dtype == dt && n->src == src && arg_equal(n->arg, arg);
}

}  // namespace

std::atomic<BufferReleaseHook> g_buffer_release_hook{nullptr};

struct Interner {
  std::mutex mutex;
  // Structural hash -> node, open addressing with linear probing over a power-of-two array
  // (lookups are most of the cost of building graphs; a node-based multimap chased a pointer or
  // two per probe). An empty slot has no node; an erased one holds kErased until a rehash.
  struct Slot {
    uint64_t hash;
    const UOpNode* node;
  };
  static inline const UOpNode* const kErased = reinterpret_cast<const UOpNode*>(uintptr_t{1});
  std::vector<Slot> slots = std::vector<Slot>(1024);
  size_t live = 0, erased = 0;

  static Interner& get() {
    static Interner* instance = new Interner();  // never destroyed: nodes may outlive statics
    return *instance;
  }

  // Keeps the table at most 3/4 full counting erased slots: doubles when the live nodes fill
  // half of it, otherwise rebuilds at its size to drop the erased ones.
  void reserve_one() {
    if ((live + erased + 1) * 4 <= slots.size() * 3) return;
    std::vector<Slot> old(live * 2 >= slots.size() ? slots.size() * 2 : slots.size());
    old.swap(slots);
    erased = 0;
    for (const Slot& s : old) {
      if (s.node && s.node != kErased)
        slots[probe(s.hash, slots.size(), [&](size_t i) { return !slots[i].node; })] = s;
    }
  }

  UOp intern(Op op, DType dtype, std::vector<UOp>&& src, Arg&& arg) {
    uint64_t h =
        mix(mix(mix(static_cast<uint64_t>(op) + 1, hash_dtype(dtype)), arg_hash(arg)), src.size());
    for (const UOp& s : src) h = mix(h, s.hash());
    std::lock_guard lock(mutex);
    Slot& slot = slots[probe(h, slots.size(), [&](size_t j) {
      const Slot& s = slots[j];
      return !s.node || (s.hash == h && s.node != kErased && same(op, dtype, src, arg, s.node));
    })];
    if (slot.node) {
      const UOpNode* found = slot.node;
      int64_t r = found->refs.load(std::memory_order_relaxed);
      while (r > 0 && !found->refs.compare_exchange_weak(r, r + 1, std::memory_order_relaxed)) {
      }
      if (r > 0) return UOp(found);
      erase(slot);  // dying: its releaser will see it is no longer the table's entry
    }
    reserve_one();
    auto* n = new UOpNode{op, dtype, std::move(src), std::move(arg), h};
    const size_t i = probe(h, slots.size(),
                           [&](size_t j) { return !slots[j].node || slots[j].node == kErased; });
    if (slots[i].node == kErased) --erased;
    slots[i] = {h, n};
    ++live;
    return UOp(n);
  }

  void erase(Slot& slot) {
    slot.node = kErased;
    --live;
    ++erased;
  }

  // Called by the thread that dropped the last reference. Children released while destroying a
  // node are queued, not recursed into, so a deep chain frees in constant stack.
  void release(const UOpNode* n) {
    static thread_local std::vector<const UOpNode*>* pending = nullptr;
    if (pending) {
      pending->push_back(n);
      return;
    }
    std::vector<const UOpNode*> work{n};
    pending = &work;
    while (!work.empty()) {
      const UOpNode* x = work.back();
      work.pop_back();
      {
        std::lock_guard lock(mutex);
        const size_t i = probe(x->hash, slots.size(),
                               [&](size_t j) { return !slots[j].node || slots[j].node == x; });
        if (slots[i].node == x) erase(slots[i]);
      }
      if (x->op == Op::BUFFER)
        if (BufferReleaseHook hook = g_buffer_release_hook.load())
          hook(std::get<BufferArg>(x->arg).id);
      delete x;  // destroying x->src queues the children that die with it
    }
    pending = nullptr;
  }
};

void set_buffer_release_hook(BufferReleaseHook hook) { g_buffer_release_hook.store(hook); }

size_t live_uop_count() {
  Interner& in = Interner::get();
  std::lock_guard lock(in.mutex);
  return in.live;
}

UOp::UOp(const UOp& o) noexcept : n_(o.n_) {
  if (n_) n_->refs.fetch_add(1, std::memory_order_relaxed);
}
UOp& UOp::operator=(const UOp& o) noexcept {
  UOp tmp(o);
  std::swap(n_, tmp.n_);
  return *this;
}
UOp& UOp::operator=(UOp&& o) noexcept {
  UOp tmp(std::move(o));
  std::swap(n_, tmp.n_);
  return *this;
}
UOp::~UOp() {
  if (n_ && n_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) Interner::get().release(n_);
}

UOp UOp::make(Op op, DType dtype, std::vector<UOp> src, Arg arg) {
  int arity = op_arity(op);
  if (arity >= 0 && static_cast<int>(src.size()) != arity)
    internal_error("UOp::make: {} takes {} sources, got {}", op_name(op), arity, src.size());
  for (const UOp& s : src)
    if (!s) internal_error("UOp::make: {} has a null source", op_name(op));
  return Interner::get().intern(op, dtype, std::move(src), std::move(arg));
}

// ---- accessors

Op UOp::op() const { return n_->op; }
DType UOp::dtype() const { return n_->dtype; }
const std::vector<UOp>& UOp::src() const { return n_->src; }
const UOp& UOp::src(size_t i) const {
  if (i >= n_->src.size())
    internal_error("UOp::src({}) of {} with {} sources", i, op_name(n_->op), n_->src.size());
  return n_->src[i];
}
const Arg& UOp::arg() const { return n_->arg; }
uint64_t UOp::hash() const { return n_->hash; }

// ---- constants and builders

UOp UOp::cnst(DType dtype, double value) {
  if (is_float(dtype)) return make(Op::CONST, dtype, {}, value);
  if (is_bool(dtype)) return make(Op::CONST, dtype, {}, value != 0);
  return cnst_int(dtype, static_cast<int64_t>(value));
}
UOp UOp::cnst_int(DType dtype, int64_t value) {
  if (is_float(dtype)) return make(Op::CONST, dtype, {}, static_cast<double>(value));
  if (is_bool(dtype)) return make(Op::CONST, dtype, {}, value != 0);
  // Integer constants hold the dtype's value: -1 as uint8 is 255.
  if (dtype.scalar != Scalar::Index && dtype.scalar != Scalar::WeakInt)
    value = wrap_to_int_dtype(static_cast<uint64_t>(value), dtype);
  return make(Op::CONST, dtype, {}, value);
}
UOp UOp::cnst_bool(bool value) { return make(Op::CONST, dtypes::bool_, {}, value); }

UOp UOp::variable(std::string name, int64_t lo, int64_t hi) {
  if (lo > hi) fail("variable '{}': empty range [{}, {}]", name, lo, hi);
  return make(Op::PARAM, dtypes::index, {}, ParamArg{-1, std::move(name), lo, hi});
}
UOp UOp::range(UOp end, int64_t axis, AxisType type) {
  return make(Op::RANGE, dtypes::index, {std::move(end)}, RangeArg{axis, type});
}
UOp UOp::range(int64_t end, int64_t axis, AxisType type) {
  return range(cnst_int(dtypes::index, end), axis, type);
}

double UOp::const_value() const {
  const Arg& a = arg();
  if (auto* d = std::get_if<double>(&a)) return *d;
  if (auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  internal_error("const_value of {} which is not a constant", op_name(op()));
}
int64_t UOp::const_int() const {
  const Arg& a = arg();
  if (auto* i = std::get_if<int64_t>(&a)) return *i;
  if (auto* b = std::get_if<bool>(&a)) return *b;
  if (auto* d = std::get_if<double>(&a)) return static_cast<int64_t>(*d);
  internal_error("const_int of {} which is not a constant", op_name(op()));
}

UOp UOp::const_like(double v) const { return cnst(dtype().base(), v); }
UOp UOp::const_int_like(int64_t v) const { return cnst_int(dtype().base(), v); }

UOp UOp::replace_src(std::vector<UOp> src) const {
  if (src == n_->src) return *this;
  return make(op(), dtype(), std::move(src), arg());
}

// ---- graph walks

namespace {

// The nodes a walk has visited, by address: open addressing over a power-of-two array (an
// std::unordered_set allocated a list node per insert: this took a tenth off a model's warm-up).
class VisitedSet {
 public:
  bool insert(const UOpNode* n) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const size_t i =
        probe(slot_of(n), slots_.size(), [&](size_t j) { return !slots_[j] || slots_[j] == n; });
    if (slots_[i]) return false;
    slots_[i] = n;
    ++size_;
    return true;
  }

 private:
  static size_t slot_of(const UOpNode* n) {
    return static_cast<size_t>(mix(0, reinterpret_cast<uintptr_t>(n)));
  }
  void grow() {
    std::vector<const UOpNode*> old(slots_.size() * 2);
    old.swap(slots_);
    for (const UOpNode* n : old) {
      if (n) slots_[probe(slot_of(n), slots_.size(), [&](size_t j) { return !slots_[j]; })] = n;
    }
  }
  std::vector<const UOpNode*> slots_ = std::vector<const UOpNode*>(64);
  size_t size_ = 0;
};

}  // namespace

std::vector<UOp> UOp::toposort() const {
  return toposort([](const UOp&) { return true; });
}

std::vector<UOp> UOp::toposort(const std::function<bool(const UOp&)>& enter) const {
  std::vector<UOp> order;
  if (!enter(*this)) return order;
  VisitedSet done;
  std::vector<std::pair<const UOp*, size_t>> stack{{this, 0}};  // node, next source to visit
  done.insert(n_);
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->src().size()) {
      const UOp* s = &u->src()[i++];
      if (done.insert(s->n_) && enter(*s)) stack.emplace_back(s, 0);
    } else {
      order.push_back(*u);
      stack.pop_back();
    }
  }
  return order;
}

UOp UOp::substitute(const std::vector<std::pair<UOp, UOp>>& mapping) const {
  std::unordered_map<UOp, UOp> repl(mapping.begin(), mapping.end());
  for (const UOp& u : toposort()) {
    if (repl.count(u)) continue;
    std::vector<UOp> src;
    src.reserve(u.src().size());
    bool changed = false;
    for (const UOp& s : u.src()) {
      auto it = repl.find(s);
      src.push_back(it == repl.end() ? s : it->second);
      changed |= it != repl.end();
    }
    if (changed) repl.emplace(u, u.replace_src(std::move(src)));
  }
  auto it = repl.find(*this);
  return it == repl.end() ? *this : it->second;
}

// ---- arithmetic

namespace {
DType result_dtype(Op op, DType a, DType b) {
  if (is_comparison(op)) return DType(Scalar::Bool).vec(a.count);
  if (a == b || is_weak(b)) return a;
  if (is_weak(a)) return b;
  internal_error("{} of mismatched dtypes {} and {}", op_name(op), to_string(a), to_string(b));
}
}  // namespace

UOp UOp::alu(Op op, const UOp& b) const {
  return make(op, result_dtype(op, dtype(), b.dtype()), {*this, b});
}
UOp UOp::alu(Op op) const { return make(op, dtype(), {*this}); }
UOp UOp::cast(DType t) const { return dtype() == t ? *this : make(Op::CAST, t, {*this}); }
UOp UOp::where(const UOp& a, const UOp& b) const {
  return make(Op::WHERE, result_dtype(Op::WHERE, a.dtype(), b.dtype()), {*this, a, b});
}

UOp operator+(const UOp& a, const UOp& b) { return a.alu(Op::ADD, b); }
UOp operator-(const UOp& a, const UOp& b) { return a.alu(Op::ADD, -b); }
UOp operator*(const UOp& a, const UOp& b) { return a.alu(Op::MUL, b); }
UOp operator%(const UOp& a, const UOp& b) { return a.alu(Op::MOD, b); }
UOp operator+(const UOp& a, int64_t b) { return a + a.const_int_like(b); }
UOp operator-(const UOp& a, int64_t b) { return a + a.const_int_like(-b); }
UOp operator*(const UOp& a, int64_t b) { return a * a.const_int_like(b); }
UOp operator%(const UOp& a, int64_t b) { return a % a.const_int_like(b); }
UOp operator+(int64_t a, const UOp& b) { return b.const_int_like(a) + b; }
UOp operator*(int64_t a, const UOp& b) { return b.const_int_like(a) * b; }
UOp operator&(const UOp& a, const UOp& b) { return a.alu(Op::AND, b); }
UOp operator|(const UOp& a, const UOp& b) { return a.alu(Op::OR, b); }
UOp operator^(const UOp& a, const UOp& b) { return a.alu(Op::XOR, b); }
UOp operator<<(const UOp& a, const UOp& b) { return a.alu(Op::SHL, b); }
UOp operator>>(const UOp& a, const UOp& b) { return a.alu(Op::SHR, b); }
UOp operator&(const UOp& a, int64_t b) { return a & a.const_int_like(b); }
UOp operator|(const UOp& a, int64_t b) { return a | a.const_int_like(b); }
UOp operator^(const UOp& a, int64_t b) { return a ^ a.const_int_like(b); }
UOp operator<<(const UOp& a, int64_t b) { return a << a.const_int_like(b); }
UOp operator>>(const UOp& a, int64_t b) { return a >> a.const_int_like(b); }

}  // namespace ugrad
