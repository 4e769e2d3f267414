// Hand-written kernels as graph ops (tensor/custom_kernel.h) on the default device (DEV; CTest
// also runs these cases on DEV=AMD through the emulator): exactly one kernel each, lazy inputs
// materialized, outputs read by what follows, in-place updates, bound variables as kernel
// parameters through one JIT capture, and clear errors.
#include <doctest/doctest.h>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "runtime/device.h"
#include "runtime/device_features.h"
#include "runtime/jit.h"
#include "schedule/custom_kernel.h"
#include "schedule/schedule.h"
#include "tensor/custom_kernel.h"
#include "tensor/jit.h"

using namespace ugrad;

namespace {

constexpr int64_t kN = 256, kGroup = 64;
const UOp kScale = UOp::variable("scale", 1, 100);

// out[i] = in[i] * 3 + i over kN elements: workgroups of kGroup work-items.
UOp affine_kernel() {
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {kN}), in = kb.buffer(dtypes::float32, {kN});
  UOp i = kb.global(kN / kGroup) * kGroup + kb.local(kGroup);
  kb.store(out.at(i), in(i)*UOp::cnst(dtypes::float32, 3.0) + i.cast(dtypes::float32));
  return kb.build("affine_256");
}

// state[i] += x[i] * scale for i < kN, in place (slot 0 read and written).
UOp accumulate_kernel() {
  KernelBuilder kb;
  View state = kb.buffer(dtypes::float32, {kN}), x = kb.buffer(dtypes::float32, {kN});
  UOp scale = kb.var("scale", 1, 100);
  UOp i = kb.global(kN / kGroup) * kGroup + kb.local(kGroup);
  kb.store(state.at(i), state(i) + x(i) * scale.cast(dtypes::float32));
  return kb.build("accumulate_256");
}

// out[i] = in[i] * scale: the variable is a kernel parameter.
UOp scale_kernel() {
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {kN}), in = kb.buffer(dtypes::float32, {kN});
  UOp scale = kb.var("scale", 1, 100);
  UOp i = kb.global(kN / kGroup) * kGroup + kb.local(kGroup);
  kb.store(out.at(i), in(i)*scale.cast(dtypes::float32));
  return kb.build("scale_256");
}

std::vector<float> iota_floats(int64_t n, float start) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i) * 0.5f;
  return v;
}

// The schedule of `t`'s graph with its variables unbound, as realize makes it.
Schedule schedule_of(const Tensor& t) {
  return create_schedule(unbind_variables({t.node()}).first);
}

}  // namespace

TEST_CASE("custom kernel: one kernel between generic ones, lazy input materialized") {
  std::vector<float> xs = iota_floats(kN, -3.0f);
  Tensor x = Tensor::from_vector(xs, {kN});
  UOp ast = affine_kernel();
  Tensor y = custom_kernel(ast, {Tensor::empty({kN}), x * 2.0f})[0];
  Tensor z = y + 1.0f;
  Schedule s = schedule_of(z);
  // x*2 (materialized for the kernel), the kernel itself, then +1 reading its output
  REQUIRE(s.items.size() == 3);
  CHECK(s.items[1].ast == ast);
  CHECK(s.items[1].buffers.size() == 2);
  std::vector<float> got = z.to_vector<float>();
  for (int64_t i = 0; i < kN; ++i) CHECK(got[i] == xs[i] * 2.0f * 3.0f + float(i) + 1.0f);
}

TEST_CASE("custom kernel: a realized input is read in place, an existing buffer updated") {
  std::vector<float> st = iota_floats(kN, 1.0f), xs = iota_floats(kN, 10.0f);
  Tensor state = Tensor::from_vector(st, {kN}), x = Tensor::from_vector(xs, {kN});
  state.realize();
  x.realize();
  Tensor out = custom_kernel(accumulate_kernel(), {state, x}, {bind_variable(kScale, 4)})[0];
  CHECK(schedule_of(out).items.size() == 1);  // no copy of either input
  out.realize();
  std::vector<float> got = out.to_vector<float>(), again = state.to_vector<float>();
  for (int64_t i = 0; i < kN; ++i) {
    CHECK(got[i] == st[i] + xs[i] * 4.0f);
    CHECK(again[i] == got[i]);  // the state's own buffer holds the update
  }
}

TEST_CASE(
    "custom kernel: a bound variable reaches the kernel, one JIT capture serves every value") {
  std::vector<float> xs = iota_floats(kN, 0.25f);
  Tensor x = Tensor::from_vector(xs, {kN});
  x.realize();
  TensorJit jit([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{
        custom_kernel(scale_kernel(), {Tensor::empty({kN}, dtypes::float32, in[0].device()), in[0]},
                      {in[1].node()})[0] +
        1.0f};
  });
  int64_t compiles = -1;
  for (int64_t scale : {2, 3, 5, 7, 11}) {
    Tensor out = jit({x, Tensor(bind_variable(kScale, scale), x.device())})[0];
    if (scale == 5) compiles = jit_stats().compiles;
    if (scale > 5) CHECK(jit_stats().compiles == compiles);  // replays compile nothing
    std::vector<float> got = out.to_vector<float>();
    CAPTURE(scale);
    for (int64_t i = 0; i < kN; ++i) CHECK(got[i] == xs[i] * float(scale) + 1.0f);
  }
  CHECK(jit.graph().captured_kernels() == 2);
}

TEST_CASE("custom kernel: named in codegen, no optimization applied") {
  const std::string device = Tensor::empty({1}).device();
  KernelSource ks = codegen(affine_kernel(), get_device(device).target());
  CHECK(ks.name == "affine_256");
  CHECK(ks.opts.empty());
  CHECK(ks.gpu_opts.empty());
}

TEST_CASE("custom kernel: errors name the kernel, the slot and the mismatch") {
  UOp ast = affine_kernel();
  Tensor x = Tensor::from_vector(iota_floats(kN, 0.0f), {kN});
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of([&] {
          custom_kernel(ast, {Tensor::empty({kN})});
        }).find("affine_256: takes 2 buffers, got 1") != std::string::npos);
  CHECK(error_of([&] {
          custom_kernel(ast, {Tensor::empty({kN}, dtypes::int32), x});
        }).find("slot 0 takes float32, got int32") != std::string::npos);
  CHECK(error_of([&] {
          custom_kernel(ast, {Tensor::empty({kN / 2}), x});
        }).find("slot 0 reads up to 256 elements") != std::string::npos);
  CHECK(error_of([&] {
          custom_kernel(ast, {x * 2.0f, x});
        }).find("slot 0 is written") != std::string::npos);
  CHECK(error_of([&] {
          Tensor s = Tensor::empty({kN});
          custom_kernel(accumulate_kernel(), {s, x});
        }).find("variable 'scale' [1, 100] is not among the bound variables") != std::string::npos);
  KernelBuilder kb;
  kb.store(kb.buffer(dtypes::float32, {4}).at(UOp::cnst_int(dtypes::index, 0)),
           UOp::cnst(dtypes::float32, 1.0));
  CHECK(error_of([&] { kb.build("bad name"); }).find("kernel name 'bad name'") !=
        std::string::npos);
}

TEST_CASE("custom kernel: compiles for gfx1100 through NULL:gfx1100") {
  Tensor x = Tensor::from_vector(iota_floats(kN, 0.0f), {kN}, dtypes::float32, "NULL:gfx1100");
  Tensor y =
      custom_kernel(affine_kernel(), {Tensor::empty({kN}, dtypes::float32, "NULL:gfx1100"), x})[0];
  CHECK_NOTHROW(y.realize());  // the NULL device links and validates the code object
}

TEST_CASE("device features: what a hand-written kernel may ask of a device") {
  DeviceFeatures cpu = device_features("CPU");
  CHECK(!cpu.is_gpu);
  CHECK(cpu.runs_kernels);
  CHECK(cpu.wave_size == 1);
  CHECK(!cpu.wmma);
  DeviceFeatures gfx = device_features("NULL:gfx1100");
  CHECK(gfx.arch == "gfx1100");
  CHECK(gfx.is_gpu);
  CHECK(!gfx.runs_kernels);
  CHECK(gfx.wave_size == 32);
  CHECK(gfx.wmma);
  CHECK(gfx.int8_dot);
  CHECK(gfx.lds_bytes == 65536);
}

TEST_CASE("custom kernel: one kernel's output feeds another, both in one schedule") {
  std::vector<float> xs = iota_floats(kN, 1.0f);
  Tensor x = Tensor::from_vector(xs, {kN});
  UOp ast = affine_kernel();
  Tensor y = custom_kernel(ast, {Tensor::empty({kN}, dtypes::float32, x.device()), x})[0];
  Tensor z = custom_kernel(ast, {Tensor::empty({kN}, dtypes::float32, x.device()), y})[0];
  Schedule s = schedule_of(z);
  REQUIRE(s.items.size() == 2);  // x is realized; y's buffer is z's input as it is
  CHECK(s.items[1].buffers[1] == s.items[0].buffers[0]);
  std::vector<float> got = z.to_vector<float>();
  for (int64_t i = 0; i < kN; ++i) CHECK(got[i] == (xs[i] * 3.0f + float(i)) * 3.0f + float(i));
}
