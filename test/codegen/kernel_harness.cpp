#include "kernel_harness.h"

#include "runtime/llvm_compile.h"
#include "runtime/llvm_target.h"

namespace ugrad::test {

UOp buf(int64_t slot, DType dt, int64_t count) {
  return UOp::make(Op::PARAM, dt.ptr(), {},
                   ParamArg{slot, "data" + std::to_string(slot), 0, count});
}
UOp load(const UOp& b, const UOp& i) {
  return UOp::make(Op::LOAD, b.dtype().base(), {UOp::make(Op::INDEX, b.dtype(), {b, i})});
}
UOp load_gated(const UOp& b, const UOp& i, const UOp& valid) {
  return UOp::make(Op::LOAD, b.dtype().base(), {UOp::make(Op::INDEX, b.dtype(), {b, i, valid})});
}
UOp store(const UOp& b, const UOp& i, const UOp& v) {
  return UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, b.dtype(), {b, i}), v});
}
UOp sink(std::vector<UOp> stores) { return UOp::make(Op::SINK, dtypes::void_, std::move(stores)); }

void Kernel::run(std::vector<void*> bufs, std::vector<int64_t> vars, int64_t n_cores) const {
  for (int64_t v : vars) bufs.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(v)));
  ThreadPool::instance().run(fn, bufs.data(), n_cores > 0 ? n_cores : ks.cpu_threads);
}

Kernel compile(const UOp& ast, const CodegenOptions& opts, const CodegenTarget& target) {
  Kernel k;
  k.ks = codegen(ast, target, opts);
  static const LlvmTarget host = cpu_target();
  auto object = llvm_compile_object(host, k.ks.src, k.ks.name);
  k.program = CpuJit::instance().load(object, k.ks.name);
  k.fn = k.program->function<ThreadPool::RawKernel>(k.ks.entry);
  return k;
}

std::vector<float> randf(size_t n, uint32_t seed, float lo, float hi) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x = lo + (hi - lo) * float(s >> 8) / float(1 << 24);
  }
  return v;
}

}  // namespace ugrad::test
