#include "codegen/kernel_builder.h"

#include <cctype>

#include "base/error.h"
#include "codegen/opt/tensor_cores.h"

namespace ugrad {

namespace {
UOp idx(int64_t v) { return UOp::cnst_int(dtypes::index, v); }
}  // namespace

std::string hand_written_name(const UOp& ast) {
  return ast.op() == Op::SINK && std::holds_alternative<std::string>(ast.arg())
             ? ast.arg_as<std::string>()
             : std::string();
}

UOp KernelBuilder::buffer(DType dtype, int64_t count) {
  const int64_t slot = next_slot_++;
  return UOp::make(Op::PARAM, dtype.ptr(), {},
                   ParamArg{slot, "data" + std::to_string(slot), 0, count});
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

UOp KernelBuilder::load(const UOp& buf, const UOp& index) const {
  const DType pt = buf.dtype();
  return UOp::make(Op::LOAD, pt.base(), {UOp::make(Op::INDEX, pt, {buf, index})});
}

UOp KernelBuilder::load(const UOp& buf, const UOp& index, const UOp& valid) const {
  const DType pt = buf.dtype();
  return UOp::make(Op::LOAD, pt.base(), {UOp::make(Op::INDEX, pt, {buf, index, valid})});
}

void KernelBuilder::store(const UOp& buf, const UOp& index, const UOp& value, const UOp& gate) {
  if (buf.op() != Op::PARAM)
    fail("kernel builder: store() writes a buffer parameter; use lds_store for LDS");
  std::vector<UOp> src{UOp::make(Op::INDEX, buf.dtype(), {buf, index}), value};
  if (gate) src.push_back(gate);
  stores_.push_back(UOp::make(Op::STORE, dtypes::void_, std::move(src)));
}

UOp KernelBuilder::reduce(const UOp& value, Op op, const std::vector<UOp>& ranges) {
  std::vector<UOp> src{value};
  src.insert(src.end(), ranges.begin(), ranges.end());
  return UOp::make(Op::REDUCE, value.dtype(), std::move(src), op);
}

UOp KernelBuilder::lds(DType dtype, int64_t count) {
  // DEFINE_LOCALs are interned by (dtype, size): equal requests get a few spare elements so
  // that each array stays distinct.
  if (count < 1) fail("kernel builder: an LDS array of {} elements", count);
  int64_t size = count;
  while (lds_sizes_.count({dtype.scalar, size})) ++size;
  lds_sizes_.insert({dtype.scalar, size});
  return UOp::make(Op::DEFINE_LOCAL, dtype.ptr(AddrSpace::Local), {}, size);
}

UOp KernelBuilder::lds_store(const UOp& lds, const UOp& index, const UOp& value, const UOp& gate) {
  std::vector<UOp> src{UOp::make(Op::INDEX, lds.dtype(), {lds, index}), value};
  if (gate) src.push_back(gate);
  return UOp::make(Op::STORE, dtypes::void_, std::move(src));
}

UOp KernelBuilder::barrier(const UOp& lds, const std::vector<UOp>& stores) {
  UOp bar = UOp::make(Op::BARRIER, dtypes::void_, stores);
  return UOp::make(Op::AFTER, lds.dtype(), {lds, bar});
}

UOp KernelBuilder::barrier_after(const UOp& value) {
  return UOp::make(Op::AFTER, value.dtype(),
                   {value, UOp::make(Op::BARRIER, dtypes::void_, {value})});
}

UOp KernelBuilder::vectorize(const std::vector<UOp>& elements) {
  if (elements.empty()) fail("kernel builder: vectorize() of no elements");
  return UOp::make(Op::VECTORIZE, elements[0].dtype().vec(uint16_t(elements.size())), elements);
}

UOp KernelBuilder::gep(const UOp& vec, int64_t i) {
  if (i < 0 || i >= vec.dtype().count)
    fail("kernel builder: element {} of a {}", i, to_string(vec.dtype()));
  return UOp::make(Op::GEP, vec.dtype().base(), {vec}, std::vector<int64_t>{i});
}

UOp KernelBuilder::wmma(const UOp& a, const UOp& b, const UOp& c) { return ugrad::wmma(a, b, c); }

UOp KernelBuilder::dot4(const UOp& a, const UOp& b, const UOp& acc, Dot4Arg signs) {
  const DType t = acc.dtype();
  if ((t != dtypes::int32 && t != dtypes::uint32) || a.dtype() != t || b.dtype() != t)
    fail("kernel builder: dot4 takes int32 (or uint32) words and accumulator, got {}, {}, {}",
         to_string(a.dtype()), to_string(b.dtype()), to_string(t));
  return UOp::make(Op::DOT4, t, {a, b, acc}, signs);
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
