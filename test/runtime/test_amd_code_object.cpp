// AMDGPU back end without a GPU: compile hand-written kernels for gfx1100, link them into HSA code
// objects and check the ELF, the metadata against the IR signatures, the kernel descriptors, the
// ISA, kernarg packing, and in-process lld against the ld.lld-19 subprocess.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "runtime/amd/amd_compile.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/llvm_disasm.h"
#include "test/runtime/test_llvm_kernels.h"

using namespace ugrad;
namespace tk = ugrad::test_kernels;

namespace {

struct ArgSpec {
  uint32_t offset, size;
  AmdArgKind kind;
};

struct KernelCase {
  const char* name;
  std::string_view ir;
  size_t buffers, scalars;
  std::vector<ArgSpec> args;  // explicit args expected from the IR signature
  uint32_t kernarg_size;      // with the attributor's hidden-arg trimming
};

const AmdArgKind kBuf = AmdArgKind::GlobalBuffer, kVal = AmdArgKind::ByValue;

std::vector<KernelCase> cases() {
  return {
      {"E_add", tk::kAmdAdd, 3, 1, {{0, 8, kBuf}, {8, 8, kBuf}, {16, 8, kBuf}, {24, 4, kVal}}, 28},
      {"R_sum", tk::kAmdSum, 2, 0, {{0, 8, kBuf}, {8, 8, kBuf}}, 16},
      {"E_scale",
       tk::kAmdScale,
       2,
       2,
       {{0, 8, kBuf}, {8, 8, kBuf}, {16, 4, kVal}, {20, 4, kVal}},
       24},
      {"E_mixed",
       tk::kAmdMixed,
       1,
       3,
       {{0, 8, kBuf}, {8, 4, kVal}, {16, 8, kVal}, {24, 4, kVal}},
       28},
      {"L_reverse", tk::kAmdLds, 2, 0, {{0, 8, kBuf}, {8, 8, kBuf}}, 16},
      {"W_wmma",
       tk::kAmdWmma,
       4,
       0,
       {{0, 8, kBuf}, {8, 8, kBuf}, {16, 8, kBuf}, {24, 8, kBuf}},
       32},
      {"D_sdot4",
       tk::kAmdDot,
       4,
       0,
       {{0, 8, kBuf}, {8, 8, kBuf}, {16, 8, kBuf}, {24, 8, kBuf}},
       32},
  };
}

template <typename T>
T read_le(const std::vector<uint8_t>& bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

// Mnemonics of a listing up to the first s_code_end padding: "\ts_load_b32 s4, ..." ->
// "s_load_b32".
std::vector<std::string> mnemonics(const std::string& listing) {
  std::vector<std::string> out;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '\t' || line.find(';') == 1) continue;
    std::string m = line.substr(1, line.find_first_of(" /", 1) - 1);
    if (m == "s_code_end") break;
    out.push_back(m);
  }
  return out;
}

std::string run_objdump(const std::vector<uint8_t>& code_object) {
  char path[] = "/tmp/ugrad-objdump-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, code_object.data(), code_object.size()) ==
          static_cast<ssize_t>(code_object.size()));
  close(fd);
  std::string cmd = std::string("/usr/lib/llvm-19/bin/llvm-objdump -d --mcpu=gfx1100 ") + path;
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
    pclose(p);
  }
  std::remove(path);
  return text;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("amd_code_object") {
  TEST_CASE("every test kernel links into a valid gfx1100 code object matching its signature") {
    LlvmTarget target = amdgpu_target("gfx1100", 2, 5);
    for (const KernelCase& kc : cases()) {
      CAPTURE(kc.name);
      AmdBinary bin = amd_compile(target, kc.ir, kc.name);
      const auto& elf = bin.code_object;
      // ELF header, read independently of the parser.
      REQUIRE(elf.size() > 64);
      CHECK(std::memcmp(elf.data(),
                        "\x7f"
                        "ELF",
                        4) == 0);
      CHECK(elf[7] == 64);                                 // ELFOSABI_AMDGPU_HSA
      CHECK(elf[8] == 3);                                  // COV5
      CHECK(read_le<uint16_t>(elf, 16) == 3);              // ET_DYN
      CHECK(read_le<uint16_t>(elf, 18) == 224);            // EM_AMDGPU
      CHECK((read_le<uint32_t>(elf, 48) & 0xff) == 0x41);  // EF_AMDGPU_MACH_AMDGCN_GFX1100

      CHECK(bin.info.arch == "gfx1100");
      CHECK(bin.info.code_object_version == 5);
      CHECK(bin.info.target.find("gfx1100") != std::string::npos);
      REQUIRE(bin.info.kernels.size() == 1);
      const AmdKernelInfo& k = bin.info.kernel(kc.name);
      CHECK(k.symbol == std::string(kc.name) + ".kd");
      CHECK(k.descriptor_address != 0);
      CHECK(k.wavefront_size == 32);
      CHECK(k.descriptor.wavefront_size32());
      CHECK(k.kernarg_size == kc.kernarg_size);
      CHECK(k.descriptor.kernarg_size == kc.kernarg_size);
      CHECK(k.kernarg_align == 8);
      CHECK(k.max_flat_workgroup_size == 256);
      CHECK(k.private_segment_size == 0);
      CHECK(k.vgpr_count > 0);
      auto args = k.explicit_args();
      REQUIRE(args.size() == kc.args.size());
      for (size_t i = 0; i < args.size(); ++i) {
        CAPTURE(i);
        CHECK(args[i]->offset == kc.args[i].offset);
        CHECK(args[i]->size == kc.args[i].size);
        CHECK(args[i]->kind == kc.args[i].kind);
        if (kc.args[i].kind == kBuf) CHECK(args[i]->address_space == "global");
      }
      CHECK_NOTHROW(validate_amd_kernel(k, kc.buffers, kc.scalars));
      CHECK_THROWS_AS(validate_amd_kernel(k, kc.buffers + 1, kc.scalars), Error);
    }
  }

  TEST_CASE("ISA contains WMMA, dot4, LDS and barrier instructions") {
    LlvmTarget target = amdgpu_target("gfx1100");
    std::string wmma = disassemble_amdgpu(amd_compile(target, tk::kAmdWmma, "W_wmma").code_object);
    CHECK(wmma.find("W_wmma:") != std::string::npos);
    CHECK(wmma.find("v_wmma_f32_16x16x16_f16") != std::string::npos);
    std::string dot = disassemble_amdgpu(amd_compile(target, tk::kAmdDot, "D_sdot4").code_object);
    CHECK(dot.find("v_dot4") != std::string::npos);
    AmdBinary lds = amd_compile(target, tk::kAmdLds, "L_reverse");
    std::string lds_isa = disassemble_amdgpu(lds.code_object);
    CHECK(lds_isa.find("ds_store") != std::string::npos);
    CHECK(lds_isa.find("ds_load") != std::string::npos);
    CHECK(lds_isa.find("s_barrier") != std::string::npos);
    CHECK(lds_isa.find("buffer_gl0_inv") != std::string::npos);  // the acquire fence
    CHECK(lds.info.kernel("L_reverse").group_segment_size == 1024);
    CHECK(lds_isa.find("s_endpgm") != std::string::npos);
    CHECK(lds_isa.find("<undecodable>") == std::string::npos);
    CHECK(lds_isa.find("repeated") != std::string::npos);  // the s_code_end padding, folded
  }

  TEST_CASE("the ISA listing agrees with llvm-objdump-19") {
    if (access("/usr/lib/llvm-19/bin/llvm-objdump", X_OK) != 0) {
      MESSAGE("skipped: llvm-objdump-19 not installed");
      return;
    }
    LlvmTarget target = amdgpu_target("gfx1100");
    for (std::string_view ir : {tk::kAmdAdd, tk::kAmdLds, tk::kAmdWmma, tk::kAmdDot}) {
      AmdBinary bin = amd_compile(target, ir, "k");
      auto ours = mnemonics(disassemble_amdgpu(bin.code_object));
      auto theirs = mnemonics(run_objdump(bin.code_object));
      CHECK(ours.size() > 5);
      CHECK(ours == theirs);
    }
  }

  TEST_CASE("code object v4 and v5") {
    AmdBinary v4 = amd_compile(amdgpu_target("gfx1100", 2, 4), tk::kAmdAdd, "E_add");
    AmdBinary v5 = amd_compile(amdgpu_target("gfx1100", 2, 5), tk::kAmdAdd, "E_add");
    CHECK(v4.code_object[8] == 2);
    CHECK(v5.code_object[8] == 3);
    CHECK(v4.info.amdhsa_version == std::vector<uint64_t>{1, 1});
    CHECK(v5.info.amdhsa_version == std::vector<uint64_t>{1, 2});
    {
      ScopedKnob cov(Knob::AMD_COV, "4");
      CHECK(amdgpu_target("gfx1100").code_object_version == 4);
    }
    {
      ScopedKnob cov(Knob::AMD_COV, "6");
      CHECK_THROWS_AS(amdgpu_target("gfx1100"), Error);
    }
  }

  TEST_CASE("kernarg packing follows the metadata offsets byte by byte") {
    AmdBinary bin = amd_compile(amdgpu_target("gfx1100"), tk::kAmdMixed, "E_mixed");
    const AmdKernelInfo& k = bin.info.kernel("E_mixed");
    const uint64_t out_ptr = 0x00007f1234567890ull;
    const int32_t x = -7;
    const int64_t y = 0x0123456789abcdefll;
    const float z = 2.5f;
    uint32_t z_bits;
    std::memcpy(&z_bits, &z, 4);
    std::vector<uint64_t> buffers = {out_ptr};
    std::vector<uint64_t> scalars = {static_cast<uint64_t>(static_cast<int64_t>(x)),
                                     static_cast<uint64_t>(y), z_bits};
    std::vector<uint8_t> packed = pack_kernargs(k, buffers, scalars);
    REQUIRE(packed.size() == k.kernarg_size);
    auto args = k.explicit_args();
    // Independent expectation: each value's little-endian bytes at the metadata offset, zero
    // between.
    std::vector<uint8_t> expect(k.kernarg_size, 0);
    auto put = [&](uint32_t offset, const void* src, size_t n) {
      std::memcpy(expect.data() + offset, src, n);
    };
    put(args[0]->offset, &out_ptr, 8);
    put(args[1]->offset, &x, 4);
    put(args[2]->offset, &y, 8);
    put(args[3]->offset, &z, 4);
    CHECK(packed == expect);
    CHECK(packed[12] == 0);  // the padding after x (offsets 12..15) stays zero
    CHECK(read_le<int32_t>(packed, 8) == -7);
    CHECK(read_le<int64_t>(packed, 16) == y);

    // Wrong counts and values that do not fit are errors naming the kernel.
    CHECK(error_of([&] { pack_kernargs(k, {}, scalars); }).find("E_mixed") != std::string::npos);
    const uint32_t sizes_ok[] = {4, 8, 4}, sizes_bad[] = {4, 4, 4};
    CHECK_NOTHROW(validate_amd_kernel(k, 1, 3, sizes_ok));
    CHECK(error_of([&] { validate_amd_kernel(k, 1, 3, sizes_bad); }).find("'y'") !=
          std::string::npos);
    std::vector<uint64_t> too_big = {uint64_t{1} << 40, 0, 0};
    CHECK(error_of([&] { pack_kernargs(k, buffers, too_big); }).find("does not fit") !=
          std::string::npos);
  }

  TEST_CASE("two kernels in one code object") {
    const char* two = R"(
define amdgpu_kernel void @K1(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}
define amdgpu_kernel void @K2(ptr addrspace(1) %p, i32 %v) {
  store i32 %v, ptr addrspace(1) %p
  ret void
})";
    AmdBinary bin = amd_compile(amdgpu_target("gfx1100"), two, "two");
    REQUIRE(bin.info.kernels.size() == 2);
    CHECK(bin.info.kernel("K1").explicit_args().size() == 1);
    CHECK(bin.info.kernel("K2").explicit_args().size() == 2);
    CHECK(bin.info.kernel("K1").descriptor_address != bin.info.kernel("K2").descriptor_address);
    std::string isa = disassemble_amdgpu(bin.code_object);
    CHECK(isa.find("K1:") != std::string::npos);
    CHECK(isa.find("K2:") != std::string::npos);
    std::string e = error_of([&] { bin.info.kernel("K3"); });
    CHECK(e.find("K1, K2") != std::string::npos);
  }

  TEST_CASE("a kernel without explicit arguments packs to an empty buffer") {
    const char* no_args = R"(
define amdgpu_kernel void @K() {
  ret void
})";
    AmdBinary bin = amd_compile(amdgpu_target("gfx1100", 0), no_args, "K");
    const AmdKernelInfo& k = bin.info.kernel("K");
    CHECK(k.explicit_args().empty());
    CHECK(pack_kernargs(k, {}, {}).empty());
  }

  TEST_CASE("hidden arguments are listed after the explicit ones and packed as zero") {
    // Without optimization the attributor does not run: every COV5 hidden argument stays.
    AmdBinary bin = amd_compile(amdgpu_target("gfx1100", 0), tk::kAmdScale, "E_scale");
    const AmdKernelInfo& k = bin.info.kernel("E_scale");
    CHECK(k.kernarg_size > 200);
    bool saw_block_count = false;
    for (const auto& a : k.args) saw_block_count |= a.kind == AmdArgKind::HiddenBlockCountX;
    CHECK(saw_block_count);
    std::vector<uint64_t> buffers = {0x1000, 0x2000};
    std::vector<uint64_t> scalars = {3, 100};
    auto packed = pack_kernargs(k, buffers, scalars);
    CHECK(packed.size() == k.kernarg_size);
    for (size_t i = 24; i < packed.size(); ++i) REQUIRE(packed[i] == 0);
  }

  TEST_CASE("in-process lld output equals the ld.lld-19 subprocess byte for byte") {
    LlvmTarget target = amdgpu_target("gfx1100");
    for (std::string_view ir : {tk::kAmdAdd, tk::kAmdLds, tk::kAmdWmma}) {
      AmdBinary in_process = amd_compile(target, ir, "k", nullptr, AmdLinker::InProcess);
      AmdBinary subprocess = amd_compile(target, ir, "k", nullptr, AmdLinker::Subprocess);
      CHECK(in_process.code_object == subprocess.code_object);
    }
  }

  TEST_CASE("concurrent compiles are thread-safe and deterministic") {
    LlvmTarget target = amdgpu_target("gfx1100");
    const std::string_view irs[] = {tk::kAmdAdd, tk::kAmdLds, tk::kAmdWmma, tk::kAmdDot};
    std::vector<std::vector<uint8_t>> serial;
    for (auto ir : irs) serial.push_back(amd_compile(target, ir, "k").code_object);
    std::vector<std::vector<uint8_t>> parallel(8);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < parallel.size(); ++t)
      threads.emplace_back(
          [&, t] { parallel[t] = amd_compile(target, irs[t % 4], "k").code_object; });
    for (auto& th : threads) th.join();
    for (size_t t = 0; t < parallel.size(); ++t) CHECK(parallel[t] == serial[t % 4]);
  }

  TEST_CASE("every supported architecture, and unknown ones") {
    for (std::string_view arch : known_amd_archs()) {
      CAPTURE(arch);
      AmdBinary bin = amd_compile(amdgpu_target(arch), tk::kAmdAdd, "E_add");
      CHECK(bin.info.arch == arch);
      CHECK_NOTHROW(validate_amd_kernel(bin.info.kernel("E_add"), 3, 1));
    }
    CHECK(amdgpu_target("gfx1100:sramecc-:xnack-").arch == "gfx1100");
    std::string e = error_of([] { amdgpu_target("gfx906"); });
    CHECK(e.find("gfx906") != std::string::npos);
    CHECK(e.find("gfx1100") != std::string::npos);  // lists the known ones
  }

  TEST_CASE("IR LLVM would abort on is rejected with an Error") {
    LlvmTarget target = amdgpu_target("gfx1100");
    const char* f64_sin = R"(
declare double @llvm.sin.f64(double)
define amdgpu_kernel void @K(ptr addrspace(1) %p) {
  %v = load double, ptr addrspace(1) %p
  %s = call double @llvm.sin.f64(double %v)
  store double %s, ptr addrspace(1) %p
  ret void
})";
    CHECK(error_of([&] { amd_compile(target, f64_sin, "K"); }).find("f64") != std::string::npos);
    const char* bf16 = R"(
define amdgpu_kernel void @K(ptr addrspace(1) %p, i32 %x) {
  %c = icmp sgt i32 %x, 0
  %f = uitofp i1 %c to bfloat
  store bfloat %f, ptr addrspace(1) %p
  ret void
})";
    CHECK(error_of([&] { amd_compile(target, bf16, "K"); }).find("bfloat") != std::string::npos);
    const char* fp128 = R"(
define amdgpu_kernel void @K(ptr addrspace(1) %p) {
  %v = load fp128, ptr addrspace(1) %p
  %s = fmul fp128 %v, %v
  store fp128 %s, ptr addrspace(1) %p
  ret void
})";
    CHECK(error_of([&] { amd_compile(target, fp128, "K"); }).find("128/80-bit") !=
          std::string::npos);
    const char* powi = R"(
declare double @llvm.powi.f64.i32(double, i32)
define amdgpu_kernel void @K(ptr addrspace(1) %p, i32 %n) {
  %v = load double, ptr addrspace(1) %p
  %s = call double @llvm.powi.f64.i32(double %v, i32 %n)
  store double %s, ptr addrspace(1) %p
  ret void
})";
    CHECK(error_of([&] { amd_compile(target, powi, "K"); }).find("f64") != std::string::npos);
    // Missing libcalls that LLVM reports as diagnostics (not aborts) become Errors too.
    const char* tan = R"(
declare float @llvm.tan.f32(float)
define amdgpu_kernel void @K(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p
  %s = call float @llvm.tan.f32(float %v)
  store float %s, ptr addrspace(1) %p
  ret void
})";
    CHECK(error_of([&] { amd_compile(target, tan, "K"); }).find("no libcall available") !=
          std::string::npos);
    CHECK(error_of([&] { amd_compile(target, "define void @f( {", "broken"); }).find("broken") !=
          std::string::npos);
    CHECK_THROWS_AS(amd_compile(cpu_target(), tk::kAmdAdd, "E_add"), Error);
    // gfx11-shaped WMMA fragments on gfx12 would be a "Cannot select" abort.
    CHECK(error_of([] {
            amd_compile(amdgpu_target("gfx1200"), tk::kAmdWmma, "W_wmma");
          }).find("A fragments") != std::string::npos);
    // Undefined external calls are lld errors (with lld's message), not crashes.
    const char* undefined = R"(
declare void @ext()
define amdgpu_kernel void @K() {
  call void @ext()
  ret void
})";
    CHECK(error_of([&] { amd_compile(target, undefined, "K"); }).find("undefined symbol: ext") !=
          std::string::npos);
  }

  TEST_CASE("damaged code objects are Errors, never crashes") {
    AmdBinary bin = amd_compile(amdgpu_target("gfx1100"), tk::kAmdScale, "E_scale");
    const auto& good = bin.code_object;
    size_t errors = 0;
    for (size_t len = 0; len < good.size(); len += std::max<size_t>(1, good.size() / 97)) {
      std::vector<uint8_t> cut(good.begin(), good.begin() + len);
      errors += !error_of([&] { parse_amd_code_object(cut); }).empty();
    }
    CHECK(errors > 90);
    // Flip bytes across the file: the parser either accepts or throws Error (no crash, no other
    // exception type).
    for (size_t at = 0; at < good.size(); at += 7) {
      std::vector<uint8_t> bad = good;
      bad[at] ^= 0x5a;
      try {
        parse_amd_code_object(bad);
      } catch (const Error&) {
      }
    }
    std::vector<uint8_t> not_elf(128, 0);
    CHECK(error_of([&] { parse_amd_code_object(not_elf); }).find("not an ELF") !=
          std::string::npos);
  }
}
