// The AMD devices: NULL:<arch> compiles every kernel of representative graphs for an AMD GPU and
// each code object's metadata matches the kernel's parameters; the AMD device over HIP reports a
// missing library and a machine without a GPU clearly, and drives a (fake) HIP library with
// kernargs packed byte by byte from the metadata; launch dims are evaluated over variables.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "base/env.h"
#include "base/error.h"
#include "codegen/codegen.h"
#include "runtime/amd/amd_device.h"
#include "runtime/amd/amd_program.h"
#include "runtime/amd/null_amd_device.h"
#include "runtime/device.h"
#include "runtime/jit.h"
#include "runtime/launch_dims.h"
#include "runtime/llvm_target.h"
#include "runtime/realize.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

// Little-endian bytes of `v`'s low `n` bytes.
std::vector<uint8_t> le_bytes(uint64_t v, size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return b;
}

// Checks a compiled kernel against its KernelSource without trusting validate_amd_kernel: one
// explicit argument per buffer (8-byte global pointer, C-ABI offsets) then per variable (8-byte
// by-value), a written buffer never read-only, wave32, the launch dims within the kernel's limit.
void check_metadata(const KernelSource& src, const AmdKernelBinary& bin, const std::string& arch) {
  INFO("kernel ", src.name, " on ", arch);
  CHECK(bin.info.arch == arch);
  const AmdKernelInfo& k = bin.kernel();
  CHECK(k.name == src.entry);
  CHECK(k.wavefront_size == 32);
  std::vector<const AmdKernelArg*> args = k.explicit_args();
  REQUIRE(args.size() == src.buffers.size() + src.vars.size());
  uint32_t offset = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const AmdKernelArg& a = *args[i];
    INFO("arg ", i, " '", a.name, "'");
    CHECK(a.offset == offset);  // every argument is 8 bytes: packed back to back
    CHECK(a.size == 8);
    if (i < src.buffers.size()) {
      CHECK(a.kind == AmdArgKind::GlobalBuffer);
      CHECK(a.address_space == "global");
      if (src.buffers[i].written) CHECK(a.access != "read_only");
      if (!src.buffers[i].written) CHECK(a.access != "write_only");
    } else {
      CHECK(a.kind == AmdArgKind::ByValue);
    }
    offset += 8;
  }
  CHECK(k.kernarg_size >= offset);
  CHECK(k.group_segment_size <= 65536);
  std::vector<int64_t> hi;
  for (const UOp& v : src.vars) hi.push_back(v.arg_as<ParamArg>().hi);
  LaunchDims d = eval_launch_dims(src, hi, k.max_flat_workgroup_size);
  CHECK(uint64_t{d.block[0]} * d.block[1] * d.block[2] <= k.max_flat_workgroup_size);
}

// Realizes `roots` on the device of their buffers, capturing every launch; each kernel is then
// recompiled for `arch` (a program cache hit) and its metadata checked. Returns the kernel count.
size_t realize_and_check(std::vector<UOp> roots, const std::string& arch) {
  std::vector<ExecItem> items;
  {
    CaptureScope capture;
    realize(roots);
    items = capture.items;
  }
  LlvmTarget target = amdgpu_target(arch);
  for (const ExecItem& item : items) {
    CHECK(item.device->name() == "NULL:" + arch);
    const KernelSource& src = item.program->source();
    check_metadata(src, compile_amd_kernel(src, target), arch);
  }
  return items.size();
}

UOp in(std::vector<int64_t> dims, const std::string& dev, DType dt = dtypes::float32) {
  return input(std::move(dims), dt, dev.c_str());
}
UOp expand_to(const UOp& x, std::vector<int64_t> keep_shape, std::vector<int64_t> dims) {
  return mop(Op::EXPAND, mop(Op::RESHAPE, x, keep_shape), dims);
}

// Everything `fn` writes to stdout (DEBUG output goes there).
std::string capture_stdout(const std::function<void()>& fn) {
  std::fflush(stdout);
  FILE* tmp = std::tmpfile();
  REQUIRE(tmp);
  int saved = dup(1);
  dup2(fileno(tmp), 1);
  auto restore = [&] {
    std::fflush(stdout);
    dup2(saved, 1);
    close(saved);
  };
  try {
    fn();
  } catch (...) {
    restore();
    std::fclose(tmp);
    throw;
  }
  restore();
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.append(buf, n);
  std::fclose(tmp);
  return out;
}

}  // namespace

TEST_CASE("NULL:gfx1100 compiles every kernel of representative graphs, metadata matching") {
  const std::string arch = "gfx1100", dev = "NULL:" + arch;
  CHECK(get_device(dev).target().is_gpu);
  SUBCASE("elementwise and broadcasts") {
    UOp a = in({3, 4}, dev), b = in({4}, dev), c = in({3, 1}, dev);
    UOp y = (a + expand_to(b, {1, 4}, {3, 4})) * mop(Op::EXPAND, c, {3, 4}) + full(2, {3, 4});
    CHECK(realize_and_check({y, a.alu(Op::SQRT) - a.alu(Op::RECIP)}, arch) >= 1);
  }
  SUBCASE("reductions over inner, outer and all axes") {
    UOp x = in({6, 7}, dev);
    CHECK(realize_and_check(
              {reduce(x, Op::ADD, {1}), reduce(x, Op::MAX, {0}), reduce(x, Op::ADD, {0, 1})},
              arch) == 3);
  }
  SUBCASE("matmul with bias and relu") {
    int64_t n = 5, k = 9, m = 3;
    UOp mm = matmul(in({n, k}, dev), in({k, m}, dev), n, k, m);
    UOp bias = expand_to(in({m}, dev), {1, m}, {n, m});
    CHECK(realize_and_check({(mm + bias).alu(Op::MAX, full(0, {n, m}))}, arch) == 1);
    UOp big = matmul(in({64, 64}, dev), in({64, 64}, dev), 64, 64, 64);
    CHECK(realize_and_check({big}, arch) == 1);
  }
  SUBCASE("softmax") {
    UOp x = in({4, 10}, dev);
    UOp mx = mop(Op::EXPAND, reduce(x, Op::MAX, {1}), {4, 10});
    UOp e = (x - mx).alu(Op::EXP2);
    UOp sm = mop(Op::EXPAND, reduce(e, Op::ADD, {1}), {4, 10});
    CHECK(realize_and_check({e * sm.alu(Op::RECIP)}, arch) >= 1);
  }
  SUBCASE("pad, flip, permute, shrink") {
    UOp x = in({2, 3}, dev);
    CHECK(realize_and_check({permute(x, {1, 0}) + full(0, {3, 2}), mop(Op::PAD, x, {1, 0, 0, 2}),
                             flip(x, {1}) + full(1, {2, 3}), mop(Op::SHRINK, x, {0, 1, 2, 3})},
                            arch) == 4);
  }
  SUBCASE("symbolic shapes: one kernel per graph serves every bound value") {
    UOp x = in({8, 32}, dev);
    UOp t = UOp::variable("T", 1, 32);
    auto shr = [&](const UOp& v) {
      return UOp::make(Op::SHRINK, x.dtype(), {x, dim(0), dim(0), dim(8), v});
    };
    for (int64_t n : {1, 17, 32})
      CHECK(realize_and_check({reduce(shr(bind_variable(t, n)), Op::ADD, {1})}, arch) == 1);
    UOp t5 = bind_variable(t, 5);
    UOp scaled =
        shr(t5) * UOp::make(Op::SHRINK, x.dtype(), {full(3, {8, 32}), dim(0), dim(0), dim(8), t5});
    CHECK(realize_and_check({scaled}, arch) == 1);
    CHECK_THROWS_WITH_AS(realize_and_check({reduce(shr(t), Op::ADD, {1})}, arch),
                         doctest::Contains("variable 'T' is not bound"), Error);
  }
}

TEST_CASE("NULL:gfx1100 compiles elementwise ops, casts and compares for every dtype") {
  const std::string arch = "gfx1100", dev = "NULL:" + arch;
  const DType all[] = {dtypes::bool_,  dtypes::int8,    dtypes::int16,    dtypes::int32,
                       dtypes::int64,  dtypes::uint8,   dtypes::uint16,   dtypes::uint32,
                       dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                       dtypes::float64};
  for (DType dt : all) {
    INFO("dtype ", to_string(dt));
    UOp a = in({5, 6}, dev, dt), b = in({6}, dev, dt);
    UOp bb = expand_to(b, {1, 6}, {5, 6});
    std::vector<UOp> roots{a.alu(Op::MAX, bb), a.lt(bb), a.cast(dtypes::float32),
                           in({5, 6}, dev, dtypes::float32).cast(dt), a.ne(bb).where(a, bb)};
    if (dt != dtypes::bool_) {
      roots.push_back(a + bb);
      roots.push_back(a * bb);
      roots.push_back(reduce(a, Op::ADD, {1}));
    }
    // Casts to the dtype a buffer already has are views, not kernels.
    const size_t views = dt == dtypes::float32 ? 2 : 0;
    CHECK(realize_and_check(roots, arch) == roots.size() - views);
  }
}

TEST_CASE("NULL:gfx1101 and NULL:gfx1200 compile matmul, softmax and a symbolic reduce") {
  for (std::string arch : {"gfx1101", "gfx1200"}) {
    INFO("arch ", arch);
    const std::string dev = "NULL:" + arch;
    UOp mm = matmul(in({8, 16}, dev), in({16, 4}, dev), 8, 16, 4);
    UOp x = in({4, 10}, dev);
    UOp e = (x - mop(Op::EXPAND, reduce(x, Op::MAX, {1}), {4, 10})).alu(Op::EXP2);
    UOp sm = e * mop(Op::EXPAND, reduce(e, Op::ADD, {1}), {4, 10}).alu(Op::RECIP);
    UOp v = in({32}, dev);
    UOp t = bind_variable(UOp::variable("T", 1, 32), 9);
    UOp part = reduce(UOp::make(Op::SHRINK, v.dtype(), {v, dim(0), t}), Op::ADD, {0});
    CHECK(realize_and_check({mm, sm, part}, arch) >= 3);
  }
}

TEST_CASE("NULL:<arch> runs nothing and reads zeros, unknown archs are named") {
  UOp b = new_buffer("NULL:gfx1100", dtypes::int32, 4);
  std::vector<int32_t> host{1, 2, 3, 4};
  copy_in(b, std::as_bytes(std::span(host)));
  copy_out(b, std::as_writable_bytes(std::span(host)));
  CHECK(host == std::vector<int32_t>{0, 0, 0, 0});
  CHECK_THROWS_WITH_AS(get_device("NULL:gfx906"),
                       doctest::Contains("AMD architecture 'gfx906' is not supported (known: "
                                         "gfx1100"),
                       Error);
  CHECK_THROWS_WITH_AS(get_device("NULL:"), doctest::Contains("not supported"), Error);
  CHECK_THROWS_WITH_AS(get_device("TPU"), doctest::Contains("NULL:<amd-arch>, AMD"), Error);
  CHECK(get_device("NULL").name() == "NULL");  // the host compile-only device stays
}

TEST_CASE("AMD device: a missing HIP library is 'AMD device unavailable'") {
  ScopedKnob lib(Knob::HIP_LIB, "/nonexistent/libamdhip64.so");
  CHECK_THROWS_WITH_AS(make_amd_device("AMD"),
                       doctest::Contains("AMD device unavailable: libamdhip64.so not found "
                                         "(install ROCm 5.5 or newer)"),
                       Error);
  CHECK_THROWS_WITH_AS(make_amd_device("AMD:x"), doctest::Contains("AMD or AMD:<index>"), Error);
}

TEST_CASE("AMD device: Debian's HIP library without a GPU is a clear no-device error") {
  const char* debian = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
  if (!std::filesystem::exists(debian)) {
    MESSAGE("skipped: Debian's libamdhip64-5 is not installed");
    return;
  }
  ScopedKnob lib(Knob::HIP_LIB, debian);
  const std::string want = "AMD device unavailable: " + std::string(debian) + " found no AMD GPU";
  CHECK_THROWS_WITH_AS(make_amd_device("AMD:0"), doctest::Contains(want.c_str()), Error);
}

TEST_CASE("kernargs of a real gfx1100 kernel, byte by byte") {
  // out[i] = a[i, :T] summed * b[i]: three buffers and one variable.
  const std::string dev = "NULL:gfx1100";
  UOp a = in({4, 16}, dev), b = in({4}, dev);
  UOp t = bind_variable(UOp::variable("T", 1, 16), 3);
  UOp part = reduce(UOp::make(Op::SHRINK, a.dtype(), {a, dim(0), dim(0), dim(4), t}), Op::ADD, {1});
  UOp y = mop(Op::RESHAPE, part, {4}) * b;
  std::vector<ExecItem> items;
  {
    CaptureScope capture;
    UOp roots[] = {y};
    realize(roots);
    items = capture.items;
  }
  REQUIRE(items.size() == 1);
  const KernelSource& src = items[0].program->source();
  REQUIRE(src.buffers.size() == 3);
  REQUIRE(src.vars.size() == 1);
  AmdKernelBinary bin = compile_amd_kernel(src, amdgpu_target("gfx1100"));
  const AmdKernelInfo& k = bin.kernel();
  void* bufs[] = {reinterpret_cast<void*>(0x1122334455667788ull),
                  reinterpret_cast<void*>(0x0000010000000100ull),
                  reinterpret_cast<void*>(0x00007fffdeadbe00ull)};
  int64_t vars[] = {-2};  // a negative value shows the sign extension
  std::vector<uint8_t> seg = pack_kernel_args(bin, bufs, vars);
  REQUIRE(seg.size() == k.kernarg_size);
  std::vector<uint8_t> want(k.kernarg_size, 0);
  // ptr, ptr, ptr, i64: C-ABI offsets 0, 8, 16, 24; hidden arguments (if kept) stay zero.
  for (size_t i = 0; i < 3; ++i) {
    auto bytes = le_bytes(reinterpret_cast<uintptr_t>(bufs[i]), 8);
    std::copy(bytes.begin(), bytes.end(), want.begin() + 8 * i);
  }
  auto var = le_bytes(static_cast<uint64_t>(vars[0]), 8);
  std::copy(var.begin(), var.end(), want.begin() + 24);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("byte ", i);
    CHECK(int(seg[i]) == int(want[i]));
  }
  // The wrong argument count is refused before anything is packed.
  CHECK_THROWS_WITH_AS(pack_kernel_args(bin, std::span(bufs, 2), vars),
                       doctest::Contains("explicit args"), Error);
}

TEST_CASE("launch dims are evaluated over the kernel's variables") {
  UOp t = UOp::variable("T", 1, 64), s = UOp::variable("S", 0, 100);
  KernelSource src;
  src.name = "E_test";
  src.vars = {s, t};
  src.global_size = {t * UOp::cnst_int(dtypes::index, 4),
                     (s + UOp::cnst_int(dtypes::index, 3)).idiv(4).max(1),
                     UOp::cnst_int(dtypes::index, 2)};
  src.local_size = {UOp::cnst_int(dtypes::index, 32),
                    t.lt(8).where(t, UOp::cnst_int(dtypes::index, 8))};
  int64_t v1[] = {10, 5};  // S = 10, T = 5
  LaunchDims d = eval_launch_dims(src, v1);
  CHECK(d.grid == std::array<uint32_t, 3>{20, 3, 2});
  CHECK(d.block == std::array<uint32_t, 3>{32, 5, 1});
  int64_t v2[] = {0, 64};
  d = eval_launch_dims(src, v2);
  CHECK(d.grid == std::array<uint32_t, 3>{256, 1, 2});
  CHECK(d.block == std::array<uint32_t, 3>{32, 8, 1});
  CHECK_THROWS_WITH_AS(eval_launch_dims(src, v2, 128),
                       doctest::Contains("exceeds the kernel's limit of 128"), Error);
  src.global_size = {s};
  int64_t zero[] = {0, 1};
  CHECK_THROWS_WITH_AS(eval_launch_dims(src, zero), doctest::Contains("global size[0] = 0"), Error);
  src.global_size = {UOp::variable("Q", 0, 4)};
  CHECK_THROWS_WITH_AS(eval_launch_dims(src, zero), doctest::Contains("'Q'"), Error);
  src.global_size.assign(4, UOp::cnst_int(dtypes::index, 1));
  CHECK_THROWS_WITH_AS(eval_launch_dims(src, zero), doctest::Contains("at most 3"), Error);
  // No dims (a CPU kernel's source) is a 1x1x1 launch.
  KernelSource none;
  CHECK(eval_launch_dims(none, {}).grid == std::array<uint32_t, 3>{1, 1, 1});
}

#ifdef UGRAD_FAKE_HIP_LIB
TEST_CASE("AMD device over a fake HIP library: allocation, copies and the launch it receives") {
  ScopedKnob lib(Knob::HIP_LIB, UGRAD_FAKE_HIP_LIB);
  Device& amd = get_device("AMD");
  CHECK(amd.target().name == "gfx1100");
  CHECK(amd.target().is_gpu);
  // The fake's device memory is host memory: copies round-trip.
  UOp a = new_buffer("AMD", dtypes::float32, 8), b = new_buffer("AMD", dtypes::float32, 8);
  std::vector<float> va{1, 2, 3, 4, 5, 6, 7, 8}, back(8);
  copy_in(a, std::as_bytes(std::span(va)));
  copy_out(a, std::as_writable_bytes(std::span(back)));
  CHECK(back == va);
  // A HIP failure names the call, the error's name and code; out of memory is OutOfMemory.
  CHECK_THROWS_WITH_AS(amd.allocator()->alloc(size_t{1} << 41),
                       doctest::Contains("hipMalloc(2199023255552 bytes) failed: "
                                         "hipErrorOutOfMemory (2)"),
                       OutOfMemory);

  void* fake = dlopen(UGRAD_FAKE_HIP_LIB, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(fake);
  auto launches = reinterpret_cast<int (*)()>(dlsym(fake, "fake_hip_launch_count"));
  auto last_kernel = reinterpret_cast<const char* (*)()>(dlsym(fake, "fake_hip_last_kernel"));
  auto last_grid = reinterpret_cast<const unsigned* (*)()>(dlsym(fake, "fake_hip_last_grid"));
  auto last_block = reinterpret_cast<const unsigned* (*)()>(dlsym(fake, "fake_hip_last_block"));
  auto last_kernargs =
      reinterpret_cast<const unsigned char* (*)(size_t*)>(dlsym(fake, "fake_hip_last_kernargs"));
  REQUIRE((launches && last_kernel && last_grid && last_block && last_kernargs));

  UOp t = bind_variable(UOp::variable("T", 1, 8), 6);
  UOp va_view = buffer_view(a, make_shape({8})), vb_view = buffer_view(b, make_shape({8}));
  UOp y =
      reduce(UOp::make(Op::SHRINK, dtypes::float32, {va_view * vb_view, dim(0), t}), Op::ADD, {0});
  int before = launches();
  std::vector<ExecItem> items;
  std::vector<UOp> out;
  {
    ScopedKnob debug(Knob::DEBUG, "2");  // timed with HIP events
    CaptureScope capture;
    UOp roots[] = {y};
    out = realize(roots);
    items = capture.items;
  }
  REQUIRE(items.size() == 1);
  CHECK(launches() == before + 1);
  const KernelSource& src = items[0].program->source();
  CHECK(std::string(last_kernel()) == src.entry);
  int64_t tv[] = {6};
  LaunchDims dims = eval_launch_dims(src, tv);
  for (int i = 0; i < 3; ++i) {
    CHECK(last_grid()[i] == dims.grid[i]);
    CHECK(last_block()[i] == dims.block[i]);
  }
  // The kernargs HIP received: the three buffers' device addresses, then T, at 8-byte steps.
  size_t size = 0;
  const unsigned char* got = last_kernargs(&size);
  REQUIRE(size >= 32);
  std::vector<uint64_t> want;
  for (const UOp& buf : items[0].buffers)
    want.push_back(reinterpret_cast<uintptr_t>(buffer_of(buf)->handle()));
  want.push_back(6);
  REQUIRE(want.size() == 4);
  for (size_t i = 0; i < want.size(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, got + 8 * i, 8);
    CHECK(v == want[i]);
  }
  CHECK(realized_buffer(out[0]).arg_as<BufferArg>().device == "AMD");
}
#endif

TEST_CASE("DEBUG=7 prints each kernel's machine code: AMDGPU ISA and x86 assembly") {
  // Shapes no other case uses, so the kernels are compiled (not found in realize's program map).
  for (std::string dev : {"NULL:gfx1100", "CPU"}) {
    INFO("device ", dev);
    UOp a = in({3, 29}, dev), b = in({29}, dev);
    UOp y = a * expand_to(b, {1, 29}, {3, 29}) + full(1, {3, 29});
    std::vector<ExecItem> items;
    std::string out = capture_stdout([&] {
      ScopedKnob debug(Knob::DEBUG, "7");
      CaptureScope capture;
      UOp roots[] = {y};
      realize(roots);
      items = capture.items;
    });
    REQUIRE(items.size() == 1);
    const std::string& name = items[0].program->source().name;
    if (dev == "CPU") {
      CHECK(out.find(name + " (" + cpu_target().arch + "):") != std::string::npos);
      CHECK(out.find("\tret") != std::string::npos);
    } else {
      CHECK(out.find(name + " (gfx1100):") != std::string::npos);
      CHECK(out.find("global_store_b32") != std::string::npos);
      CHECK(out.find("s_endpgm") != std::string::npos);
    }
  }
}
