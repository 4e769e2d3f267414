#include "codegen/kernel_builder.h"

#include <cctype>

#include "base/error.h"

namespace ugrad {

std::string hand_written_name(const UOp& ast) {
  return ast.op() == Op::SINK && std::holds_alternative<std::string>(ast.arg())
             ? ast.arg_as<std::string>()
             : std::string();
}

UOp idx(int64_t v) { return UOp::cnst_int(dtypes::index, v); }
UOp f32(double v) { return UOp::cnst(dtypes::float32, v); }
UOp i32(int64_t v) { return UOp::cnst_int(dtypes::int32, v); }
UOp u32(int64_t v) { return UOp::cnst_int(dtypes::uint32, v); }

View::View(UOp mem, std::vector<int64_t> dims, UOp prefix)
    : mem_(std::move(mem)), prefix_(std::move(prefix)), dims_(std::move(dims)) {
  if (dims_.empty()) fail("kernel builder: a view needs at least one dim");
}

Elem View::at_list(const std::vector<Ix>& i) const {
  if (i.size() != dims_.size())
    fail("kernel builder: {} indices into a view of {} dims", i.size(), dims_.size());
  UOp at = prefix_ ? prefix_ * dims_[0] + i[0].u : i[0].u;
  for (size_t k = 1; k < i.size(); ++k)
    at = i[k].u.is_const(0) ? at * dims_[k] : at * dims_[k] + i[k].u;
  return {mem_, at};
}

View View::operator[](const Ix& i) const {
  if (dims_.size() < 2) fail("kernel builder: [] on a view of one dim (use at or ())");
  return View(mem_, {dims_.begin() + 1, dims_.end()}, prefix_ ? prefix_ * dims_[0] + i.u : i.u);
}

View View::reshape(std::vector<int64_t> dims) const {
  int64_t a = 1, b = 1;
  for (int64_t d : dims_) a *= d;
  for (int64_t d : dims) b *= d;
  if (a != b || prefix_) fail("kernel builder: a view of {} elements reshaped to {}", a, b);
  return View(mem_, std::move(dims));
}

UOp load(const Elem& e, const UOp& valid) {
  const DType pt = e.mem.dtype();
  std::vector<UOp> src{e.mem, e.index};
  if (valid) src.push_back(valid);
  return UOp::make(Op::LOAD, pt.base(), {UOp::make(Op::INDEX, pt, std::move(src))});
}

UOp lds_store(const Elem& e, const UOp& value, const UOp& gate) {
  std::vector<UOp> src{UOp::make(Op::INDEX, e.mem.dtype(), {e.mem, e.index}), value};
  if (gate) src.push_back(gate);
  return UOp::make(Op::STORE, dtypes::void_, std::move(src));
}

View barrier(const View& lds, const std::vector<UOp>& stores) {
  UOp bar = UOp::make(Op::BARRIER, dtypes::void_, stores);
  return lds.after(UOp::make(Op::AFTER, lds.mem().dtype(), {lds.mem(), bar}));
}

UOp barrier_after(const UOp& value) {
  return UOp::make(Op::AFTER, value.dtype(),
                   {value, UOp::make(Op::BARRIER, dtypes::void_, {value})});
}

void for_each_item(const UOp& tid, int64_t threads, int64_t count,
                   const std::function<void(const UOp& c, const UOp& gate)>& body) {
  for (int64_t it = 0; it * threads < count; ++it) {
    const UOp c = tid + it * threads;
    body(c, count % threads ? c.lt(count) : UOp());
  }
}

View copy_to_lds(KernelBuilder& kb, DType dtype, int64_t count, const UOp& tid, int64_t threads,
                 const std::function<UOp(const UOp& c, const UOp& gate)>& value) {
  View lds = kb.lds(dtype, {count});
  std::vector<UOp> stores;
  for_each_item(tid, threads, count, [&](const UOp& c, const UOp& gate) {
    stores.push_back(lds_store(lds.at(c), value(c, gate), gate));
  });
  return barrier(lds, stores);
}

UOp reduce(const UOp& value, Op op, const std::vector<UOp>& ranges) {
  std::vector<UOp> src{value};
  src.insert(src.end(), ranges.begin(), ranges.end());
  return UOp::make(Op::REDUCE, value.dtype(), std::move(src), op);
}
UOp sum_over(const UOp& value, const std::vector<UOp>& ranges) {
  return reduce(value, Op::ADD, ranges);
}
UOp max_over(const UOp& value, const std::vector<UOp>& ranges) {
  return reduce(value, Op::MAX, ranges);
}

UOp sum(const std::vector<UOp>& values) {
  if (values.empty()) fail("kernel builder: the sum of no values");
  UOp s = values[0];
  for (size_t i = 1; i < values.size(); ++i) s = s + values[i];
  return s;
}
UOp maximum(const std::vector<UOp>& values) {
  if (values.empty()) fail("kernel builder: the max of no values");
  UOp m = values[0];
  for (size_t i = 1; i < values.size(); ++i) m = m.max(values[i]);
  return m;
}

std::vector<UOp> generate(int64_t n, const std::function<UOp(int64_t)>& f) {
  std::vector<UOp> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(f(i));
  return out;
}

UOp last_at_most(const UOp& i, int64_t last) {
  if (i.vmax() <= last) return i;
  const UOp l = i.const_int_like(last);
  return i.lt(l).where(i, l);
}

UOp vectorize(const std::vector<UOp>& elements) {
  if (elements.empty()) fail("kernel builder: vectorize() of no elements");
  return UOp::make(Op::VECTORIZE, elements[0].dtype().vec(uint16_t(elements.size())), elements);
}

UOp gep(const UOp& vec, int64_t i) {
  if (i < 0 || i >= vec.dtype().count)
    fail("kernel builder: element {} of a {}", i, to_string(vec.dtype()));
  return UOp::make(Op::GEP, vec.dtype().base(), {vec}, std::vector<int64_t>{i});
}

UOp bitcast(const UOp& v, DType to) { return UOp::make(Op::BITCAST, to, {v}); }

UOp dot4(const UOp& a, const UOp& b, const UOp& acc, Dot4Arg signs) {
  const DType t = acc.dtype();
  if ((t != dtypes::int32 && t != dtypes::uint32) || a.dtype() != t || b.dtype() != t)
    fail("kernel builder: dot4 takes int32 (or uint32) words and accumulator, got {}, {}, {}",
         to_string(a.dtype()), to_string(b.dtype()), to_string(t));
  return UOp::make(Op::DOT4, t, {a, b, acc}, signs);
}

UOp WmmaLane::fragment(const std::function<UOp(int64_t k)>& f, DType dtype) {
  return vectorize(generate(kWmmaTile, [&](int64_t k) {
    const UOp v = f(k);
    return v.dtype() == dtype ? v : v.cast(dtype);
  }));
}

UOp WmmaLane::zero() { return vectorize(std::vector<UOp>(kAcc, f32(0.0))); }

View KernelBuilder::buffer(DType dtype, std::vector<int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  const int64_t slot = next_slot_++;
  return View(UOp::make(Op::PARAM, dtype.ptr(), {},
                        ParamArg{slot, "data" + std::to_string(slot), 0, count}),
              std::move(dims));
}

UOp KernelBuilder::var(const std::string& name, int64_t lo, int64_t hi) {
  if (lo > hi) fail("kernel builder: variable '{}' has an empty range [{}, {}]", name, lo, hi);
  return UOp::make(Op::PARAM, dtypes::index, {}, ParamArg{-1, name, lo, hi});
}

UOp KernelBuilder::range(const UOp& extent, AxisType type) {
  return UOp::range(extent, next_axis_++, type);
}
UOp KernelBuilder::global(int64_t extent) { return range(idx(extent), AxisType::Global); }
UOp KernelBuilder::global(const UOp& extent) { return range(extent, AxisType::Global); }
UOp KernelBuilder::local(int64_t extent) { return range(idx(extent), AxisType::Local); }
UOp KernelBuilder::loop(int64_t extent) { return range(idx(extent), AxisType::Loop); }
UOp KernelBuilder::loop(const UOp& extent) { return range(extent, AxisType::Loop); }
UOp KernelBuilder::reduce_range(int64_t extent) { return range(idx(extent), AxisType::Reduce); }
UOp KernelBuilder::reduce_range(const UOp& extent) { return range(extent, AxisType::Reduce); }

void KernelBuilder::store(const Elem& e, const UOp& value, const UOp& gate) {
  if (e.mem.op() != Op::PARAM)
    fail("kernel builder: store() writes a buffer parameter; use lds_store for LDS");
  stores_.push_back(lds_store(e, value, gate));
}

View KernelBuilder::lds(DType dtype, std::vector<int64_t> dims) {
  // DEFINE_LOCALs are interned by (dtype, size): equal requests get a few spare elements so
  // that each array stays distinct.
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (count < 1) fail("kernel builder: an LDS array of {} elements", count);
  int64_t size = count;
  while (lds_sizes_.count({dtype.scalar, size})) ++size;
  lds_sizes_.insert({dtype.scalar, size});
  return View(UOp::make(Op::DEFINE_LOCAL, dtype.ptr(AddrSpace::Local), {}, size), std::move(dims));
}

UOp KernelBuilder::build(const std::string& name) const {
  if (stores_.empty()) fail("kernel builder: a kernel needs at least one store");
  if (name.empty()) return UOp::make(Op::SINK, dtypes::void_, stores_);
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      fail("kernel builder: kernel name '{}' has a character other than letters, digits and '_'",
           name);
  return UOp::make(Op::SINK, dtypes::void_, stores_, name);
}

}  // namespace ugrad
