// Test harness: assembles gfx1100 snippets with LLVM 19's llvm-mc at test time and runs them on
// one emulated wave with registers and memory the test sets up.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "test/mockgpu/emu.h"
#include "test/mockgpu/launch.h"

namespace ugrad::mockgpu::test {

inline constexpr const char* kLlvmMc = "/usr/lib/llvm-19/bin/llvm-mc";

/// Encodings of each instruction of `src` (one line each), via llvm-mc -show-encoding.
inline std::vector<std::vector<uint8_t>> assemble_lines(const std::string& src) {
  char path[] = "/tmp/mockgpu_asm_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) fail("cannot create a temp file");
  {
    std::ofstream f(path);
    f << src << "\n";
  }
  close(fd);
  std::string cmd = std::string(kLlvmMc) +
                    " -triple=amdgcn-amd-amdhsa -mcpu=gfx1100 -show-encoding " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  std::remove(path);
  if (out.find("error") != std::string::npos) fail("llvm-mc failed:\n{}\nsource:\n{}", out, src);
  std::vector<std::vector<uint8_t>> result;
  size_t pos = 0;
  while ((pos = out.find("encoding: [", pos)) != std::string::npos) {
    pos += 11;
    size_t end = out.find(']', pos);
    std::vector<uint8_t> bytes;
    std::string list = out.substr(pos, end - pos);
    for (size_t i = 0; i < list.size();) {
      size_t comma = list.find(',', i);
      std::string tok = list.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
      bytes.push_back(static_cast<uint8_t>(std::stoul(tok, nullptr, 16)));
      if (comma == std::string::npos) break;
      i = comma + 1;
    }
    result.push_back(bytes);
  }
  return result;
}

inline std::vector<uint8_t> assemble(const std::string& src) {
  std::vector<uint8_t> all;
  for (auto& b : assemble_lines(src)) all.insert(all.end(), b.begin(), b.end());
  return all;
}

/// One wave over a program; VGPRs, SGPRs and EXEC are set by the test, then run() executes from
/// an instruction index until s_endpgm (barriers are stepped over).
struct WaveRunner {
  Program program;
  MemoryMap memory;
  Dispatch dispatch;
  Workgroup group;
  std::unique_ptr<Wave> wave = std::make_unique<Wave>();

  explicit WaveRunner(const std::string& src, uint32_t lds_bytes = 0) {
    std::vector<uint8_t> code = assemble(src);
    program = build_program(code.data(), code.size(), 0x1000);
    dispatch.kernel = "snippet";
    dispatch.program = &program;
    dispatch.memory = &memory;
    dispatch.lds_size = lds_bytes;
    group.lds.assign(lds_bytes, 0);
    reset();
  }
  void reset() {
    std::memset(wave->v, 0, sizeof(wave->v));
    std::memset(wave->s, 0, sizeof(wave->s));
    wave->s[kExec] = 0xffffffffu;
    wave->scc = false;
    wave->dispatch = &dispatch;
    wave->group = &group;
  }
  /// Runs from instruction `index` to s_endpgm; returns instructions executed.
  uint64_t run(uint32_t index = 0) {
    wave->ip = index;
    wave->done = false;
    uint64_t n = 0;
    do {
      wave->at_barrier = false;
      n += run_wave(*wave);
    } while (!wave->done);
    return n;
  }
  uint32_t& v(int reg, int lane = 0) { return wave->v[reg][lane]; }
  uint32_t& s(int reg) { return wave->s[reg]; }
  /// Sets VGPR `reg` to `value` in every lane.
  void set_v(int reg, uint32_t value) {
    for (int l = 0; l < kLanes; ++l) wave->v[reg][l] = value;
  }
  void set_v64(int reg, uint64_t value) {
    set_v(reg, static_cast<uint32_t>(value));
    set_v(reg + 1, static_cast<uint32_t>(value >> 32));
  }
  uint64_t v64(int reg, int lane = 0) {
    return wave->v[reg][lane] | uint64_t{wave->v[reg + 1][lane]} << 32;
  }
};

inline uint32_t fbits(float f) { return f32_bits(f); }
inline float bitsf(uint32_t b) { return as_f32(b); }

}  // namespace ugrad::mockgpu::test
