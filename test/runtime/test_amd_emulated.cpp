// Graphs realized on DEV=AMD through the real AMD runtime path (HIP loaded with dlopen, code
// objects loaded from memory, kernargs from metadata, grid/block from KernelSource) against
// libmockhip.so, the gfx1100 emulator behind the HIP API, compared with the CPU backend.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <random>

#include "base/env.h"
#include "base/error.h"
#include "runtime/device.h"
#include "runtime/jit.h"
#include "runtime/realize.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

// The AMD device backed by the emulator. HIP_LIB is read when the device is first created.
Device& emulated_amd() {
  ScopedKnob lib(Knob::HIP_LIB, UGRAD_MOCKHIP_LIB);
  return get_device("AMD");
}

// A graph over float32 inputs of the given shapes, built on any device.
struct GraphCase {
  std::vector<std::vector<int64_t>> inputs;
  std::function<std::vector<UOp>(const std::vector<UOp>&)> build;
  /// Which elements of root r hold values (a symbolic shape leaves the rest of its buffer alone).
  std::function<bool(size_t r, size_t i)> valid = nullptr;
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Every root cast to float32 and read back.
std::vector<std::vector<float>> run_on(const std::string& dev, const GraphCase& c) {
  std::vector<UOp> ins;
  uint32_t seed = 1;
  for (const auto& dims : c.inputs) {
    UOp x = input(dims, dtypes::float32, dev.c_str());
    UOp b = realized_buffer(x);
    std::vector<float> values = random_values(b.arg_as<BufferArg>().size, seed++);
    copy_in(b, std::as_bytes(std::span(values)));
    ins.push_back(x);
  }
  std::vector<UOp> roots;
  for (const UOp& r : c.build(ins))
    roots.push_back(r.dtype() == dtypes::float32 ? r : r.cast(dtypes::float32));
  std::vector<UOp> out = realize(roots);
  std::vector<std::vector<float>> values;
  for (const UOp& o : out) {
    UOp b = realized_buffer(o);
    std::vector<float> v(b.arg_as<BufferArg>().size);
    copy_out(b, std::as_writable_bytes(std::span(v)));
    values.push_back(std::move(v));
  }
  return values;
}

// AMD (emulated) against CPU: equal within `rtol` (0: bit-exact), on the elements `valid` keeps.
void compare_with_cpu(const GraphCase& c, double rtol) {
  emulated_amd();
  std::vector<std::vector<float>> want = run_on("CPU", c), got = run_on("AMD", c);
  REQUIRE(got.size() == want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    REQUIRE(got[r].size() == want[r].size());
    for (size_t i = 0; i < want[r].size(); ++i) {
      if (c.valid && !c.valid(r, i)) continue;
      INFO("root ", r, " element ", i);
      if (rtol == 0 || std::isnan(want[r][i]))
        CHECK(std::bit_cast<uint32_t>(got[r][i]) == std::bit_cast<uint32_t>(want[r][i]));
      else
        CHECK(got[r][i] == doctest::Approx(want[r][i]).epsilon(rtol).scale(1));
    }
  }
}

UOp bcast(const UOp& x, std::vector<int64_t> keep, std::vector<int64_t> dims) {
  return mop(Op::EXPAND, mop(Op::RESHAPE, x, keep), dims);
}

}  // namespace

TEST_CASE("the emulated AMD device is a gfx1100 GPU") {
  Device& amd = emulated_amd();
  CHECK(amd.name() == "AMD");
  CHECK(amd.target().name == "gfx1100");
}

TEST_CASE("elementwise and broadcasts on DEV=AMD match the CPU bit for bit") {
  compare_with_cpu(
      {{{3, 40}, {40}, {3, 1}},
       [](const std::vector<UOp>& x) {
         UOp y = (x[0] + bcast(x[1], {1, 40}, {3, 40})) * mop(Op::EXPAND, x[2], {3, 40});
         return std::vector<UOp>{y, x[0].alu(Op::MAX, full(0, {3, 40})),
                                 x[0].lt(full(0.5, {3, 40})).where(x[0], x[0] * x[0])};
       }},
      0);
}

// LLVM folds where(c, x, -x) into v_cndmask_b32_e64 v1, -v1, v1, vcc: a VOP3 neg on an untyped
// source (a regression test for an emulator bug this case found).
TEST_CASE("where(c, x, -x) on DEV=AMD: VOP3 neg on v_cndmask_b32") {
  compare_with_cpu({{{3, 40}},
                    [](const std::vector<UOp>& x) {
                      return std::vector<UOp>{x[0].lt(full(0.5, {3, 40})).where(x[0], -x[0])};
                    }},
                   0);
}

TEST_CASE("reductions on DEV=AMD match the CPU") {
  compare_with_cpu({{{6, 37}},
                    [](const std::vector<UOp>& x) {
                      return std::vector<UOp>{reduce(x[0], Op::ADD, {1}),
                                              reduce(x[0], Op::MAX, {0}),
                                              reduce(x[0], Op::ADD, {0, 1})};
                    }},
                   1e-5);
}

TEST_CASE("matmul with bias and relu on DEV=AMD matches the CPU") {
  compare_with_cpu({{{5, 9}, {9, 7}, {7}},
                    [](const std::vector<UOp>& x) {
                      UOp mm = matmul(x[0], x[1], 5, 9, 7);
                      UOp y = (mm + bcast(x[2], {1, 7}, {5, 7})).alu(Op::MAX, full(0, {5, 7}));
                      return std::vector<UOp>{y};
                    }},
                   1e-5);
}

TEST_CASE("softmax on DEV=AMD matches the CPU") {
  compare_with_cpu({{{4, 10}},
                    [](const std::vector<UOp>& x) {
                      UOp mx = mop(Op::EXPAND, reduce(x[0], Op::MAX, {1}), {4, 10});
                      UOp e = (x[0] - mx).alu(Op::EXP2);
                      UOp s = mop(Op::EXPAND, reduce(e, Op::ADD, {1}), {4, 10});
                      return std::vector<UOp>{e * s.alu(Op::RECIP)};
                    }},
                   1e-5);
}

TEST_CASE("flip, permute and shrink on DEV=AMD match the CPU bit for bit") {
  compare_with_cpu({{{3, 5}},
                    [](const std::vector<UOp>& x) {
                      return std::vector<UOp>{permute(x[0], {1, 0}) + full(0, {5, 3}),
                                              flip(x[0], {1}) + full(1, {3, 5}),
                                              mop(Op::SHRINK, x[0], {0, 1, 2, 3})};
                    }},
                   0);
}

// KNOWN BUG (codegen, GPU renderer): a gated LOAD (padding) is rendered as an unconditional load
// and a select, so it reads outside the buffer; the emulator stops it as out of bounds (real
// hardware may fault). The kernel contract says a masked load does not touch memory.
TEST_CASE("pad on DEV=AMD: gated loads must not touch memory" * doctest::may_fail()) {
  compare_with_cpu({{{3, 5}},
                    [](const std::vector<UOp>& x) {
                      return std::vector<UOp>{mop(Op::PAD, x[0], {1, 0, 0, 2})};
                    }},
                   0);
}

TEST_CASE("a symbolic length on DEV=AMD: one program, every bound value") {
  for (int64_t t : {1, 13, 32}) {
    INFO("T = ", t);
    GraphCase c;
    c.inputs = {{4, 32}};
    c.build = [t](const std::vector<UOp>& x) {
      UOp v = bind_variable(UOp::variable("T", 1, 32), t);
      UOp s = UOp::make(Op::SHRINK, x[0].dtype(), {x[0], dim(0), dim(0), dim(4), v});
      return std::vector<UOp>{reduce(s, Op::ADD, {1}), s * s};
    };
    // s * s lives in a (4, 32) buffer: row i holds T values from i * 32.
    c.valid = [t](size_t r, size_t i) { return r == 0 || static_cast<int64_t>(i % 32) < t; };
    compare_with_cpu(c, 1e-5);
  }
}

TEST_CASE("casts through every dtype on DEV=AMD match the CPU bit for bit") {
  const DType all[] = {dtypes::bool_,  dtypes::int8,    dtypes::int16,    dtypes::int32,
                       dtypes::int64,  dtypes::uint8,   dtypes::uint16,   dtypes::uint32,
                       dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float64};
  for (DType dt : all) {
    INFO("dtype ", to_string(dt));
    compare_with_cpu({{{2, 33}, {33}},
                      [dt](const std::vector<UOp>& x) {
                        // Float -> unsigned of a negative value is undefined: those get |x|.
                        const bool non_negative = dt == dtypes::bool_ || is_unsigned(dt);
                        auto prep = [&](const UOp& v, std::vector<int64_t> dims) {
                          UOp scaled = v * full(20, dims);
                          if (non_negative) scaled = scaled.alu(Op::MAX, -scaled);
                          return scaled.cast(dt);
                        };
                        UOp a = prep(x[0], {2, 33});
                        UOp b = bcast(prep(x[1], {33}), {1, 33}, {2, 33});
                        std::vector<UOp> r{a.alu(Op::MAX, b), a.lt(b)};
                        if (dt != dtypes::bool_) r.push_back(a + b);
                        return r;
                      }},
                     0);
  }
}

TEST_CASE("JIT on DEV=AMD: replays rerun the captured launches with new inputs and lengths") {
  emulated_amd();
  const UOp t = UOp::variable("T", 1, 16);
  // out = sum(a[:T] * b[:T]) + a[0]
  GraphJit jit(
      [](const std::vector<UOp>& in) {  // in: a, b, T bound
        UOp prod = UOp::make(Op::SHRINK, dtypes::float32, {in[0] * in[1], dim(0), in[2]});
        UOp first = mop(Op::SHRINK, in[0], {0, 1});
        return std::vector<UOp>{reduce(prod, Op::ADD, {0}) + first};
      },
      "amd_jit");
  int64_t compiles = 0;
  for (int64_t call = 0; call < 5; ++call) {
    const int64_t len = 3 + 3 * call;
    INFO("call ", call, " T = ", len);
    std::vector<float> va = random_values(16, 100 + call), vb = random_values(16, 200 + call);
    std::vector<UOp> ins;
    for (const auto* v : {&va, &vb}) {
      UOp buf = new_buffer("AMD", dtypes::float32, 16);
      copy_in(buf, std::as_bytes(std::span(*v)));
      ins.push_back(buffer_view(buf, make_shape({16})));
    }
    if (call == 2) compiles = jit_stats().compiles;
    ins.push_back(bind_variable(t, len));
    std::vector<UOp> out = jit(ins);
    double want = va[0];
    for (int64_t i = 0; i < len; ++i) want += double(va[i]) * vb[i];
    UOp b = realized_buffer(out[0]);
    std::vector<float> got(b.arg_as<BufferArg>().size);
    copy_out(b, std::as_writable_bytes(std::span(got)));
    CHECK(got[0] == doctest::Approx(want).epsilon(1e-5));
  }
  CHECK(jit.captured_kernels() >= 1);
  CHECK(jit_stats().compiles == compiles);  // replays compile nothing
}

namespace {

UOp copy_to(const UOp& x, const std::string& device) {
  return UOp::make(Op::COPY, x.dtype(), {x}, device);
}

std::vector<float> read_back(const UOp& realized) {
  UOp b = realized_buffer(realized);
  std::vector<float> v(b.arg_as<BufferArg>().size);
  copy_out(b, std::as_writable_bytes(std::span(v)));
  return v;
}

}  // namespace

TEST_CASE("COPY between CPU and AMD: computed on the CPU, doubled on the GPU, read on the CPU") {
  emulated_amd();
  UOp x = input({4, 8});
  std::vector<float> vx = random_values(32, 7);
  copy_in(realized_buffer(x), std::as_bytes(std::span(vx)));
  // (x + 1) on the CPU, its transpose times 2 on the GPU, back to the CPU
  UOp on_gpu = permute(copy_to(x + full(1, {4, 8}), "AMD"), {1, 0});
  UOp back = copy_to(on_gpu * full(2, {8, 4}), "CPU");
  Schedule s = create_schedule({back});
  // x + 1 (CPU), copy, 2 * transpose (AMD), copy
  REQUIRE(s.items.size() == 4);
  CHECK(!s.items[0].is_copy());
  CHECK(s.items[0].buffers[0].arg_as<BufferArg>().device == "CPU");
  CHECK(s.items[1].is_copy());
  CHECK(s.items[2].buffers[0].arg_as<BufferArg>().device == "AMD");
  CHECK(s.items[3].is_copy());
  CHECK(s.items[3].buffers[0].arg_as<BufferArg>().device == "CPU");
  std::vector<UOp> out = realize(std::vector<UOp>{back});
  CHECK(realized_buffer(out[0]).arg_as<BufferArg>().device == "CPU");
  std::vector<float> got = read_back(out[0]);
  REQUIRE(got.size() == 32);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) CHECK(got[i * 4 + j] == (vx[j * 8 + i] + 1) * 2);
}

TEST_CASE("COPY of a realized buffer is one copy and no kernel, between GPU buffers too") {
  emulated_amd();
  UOp x = input({16}, dtypes::float32, "AMD");
  std::vector<float> vx = random_values(16, 8);
  copy_in(realized_buffer(x), std::as_bytes(std::span(vx)));
  Schedule s = create_schedule({copy_to(x, "CPU")});
  REQUIRE(s.items.size() == 1);
  CHECK(s.items[0].is_copy());
  CHECK(read_back(realize(std::vector<UOp>{copy_to(x, "CPU")})[0]) == vx);
  CHECK(read_back(realize(std::vector<UOp>{copy_to(x, "AMD")})[0]) ==
        vx);  // device to device, staged
}

TEST_CASE("JIT with COPY on DEV=AMD: replays copy the new inputs in and the result out") {
  emulated_amd();
  GraphJit jit(
      [](const std::vector<UOp>& in) {
        UOp squared = copy_to(in[0], "AMD") * copy_to(in[0], "AMD");
        return std::vector<UOp>{copy_to(reduce(squared, Op::ADD, {0}), "CPU")};
      },
      "copy_jit");
  int64_t compiles = 0;
  for (int64_t call = 0; call < 4; ++call) {
    INFO("call ", call);
    std::vector<float> v = random_values(64, 300 + call);
    UOp x = input({64});
    copy_in(realized_buffer(x), std::as_bytes(std::span(v)));
    if (call == 2) compiles = jit_stats().compiles;
    std::vector<UOp> out = jit({x});
    double want = 0;
    for (float f : v) want += double(f) * f;
    std::vector<float> got = read_back(out[0]);
    CHECK(realized_buffer(out[0]).arg_as<BufferArg>().device == "CPU");
    CHECK(got[0] == doctest::Approx(want).epsilon(1e-5));
  }
  CHECK(jit_stats().compiles == compiles);
}
