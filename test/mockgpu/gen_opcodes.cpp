// Generates opcode_table.inc: the gfx1100 (encoding, opcode) -> mnemonic table, by building an
// instruction word for every opcode value of every encoding the emulator decodes and asking LLVM's
// MC disassembler what it is. Several operand fillings are tried per opcode, because one filling
// does not decode for every instruction (64-bit register pairs, carry-out SGPRs, data fields).
// Usage: gen_opcodes > opcode_table.inc (the mockgpu test regenerates it and compares).
#include <llvm/Config/llvm-config.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

extern "C" void LLVMInitializeAMDGPUTargetInfo();
extern "C" void LLVMInitializeAMDGPUTargetMC();
extern "C" void LLVMInitializeAMDGPUDisassembler();

namespace {

struct Mc {
  const llvm::Target* target = nullptr;
  std::unique_ptr<llvm::MCRegisterInfo> mri;
  std::unique_ptr<llvm::MCAsmInfo> mai;
  std::unique_ptr<llvm::MCSubtargetInfo> sti;
  std::unique_ptr<llvm::MCInstrInfo> mii;
  std::unique_ptr<llvm::MCContext> ctx;
  std::unique_ptr<llvm::MCDisassembler> dis;
  std::unique_ptr<llvm::MCInstPrinter> printer;

  // The printed text of the instruction in `words` (plus a zero literal dword), or "".
  std::string decode(uint32_t w0, uint32_t w1, bool two_words) {
    uint8_t bytes[16] = {};
    uint32_t ws[4] = {w0, w1, 0, 0};
    for (int i = 0; i < 16; ++i) bytes[i] = static_cast<uint8_t>(ws[i / 4] >> (8 * (i % 4)));
    llvm::MCInst inst;
    uint64_t size = 0;
    auto st = dis->getInstruction(inst, size, llvm::ArrayRef<uint8_t>(bytes, 16), 0, llvm::nulls());
    if (st != llvm::MCDisassembler::Success || size == 0) return "";
    if (two_words && size < 8) return "";
    std::string text;
    llvm::raw_string_ostream os(text);
    printer->printInst(&inst, 0, "", *sti, os);
    os.flush();
    return text;
  }
};

std::string first_token(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_first_of(" \t", b);
  return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

struct Row {
  std::string enc;
  unsigned op;
  std::string name;
};

// Tries each (w0, w1) filling for an opcode; the first that decodes names it.
template <typename Fill>
void enumerate(Mc& mc, std::vector<Row>& rows, const char* enc, unsigned count, bool two_words,
               int fillings, Fill fill, int token = 0) {
  for (unsigned op = 0; op < count; ++op) {
    for (int f = 0; f < fillings; ++f) {
      auto [w0, w1] = fill(op, f);
      std::string text = mc.decode(w0, w1, two_words);
      if (text.empty()) continue;
      std::string name;
      if (token == 0) {
        name = first_token(text);
      } else {  // VOPD: "v_dual_x ... :: v_dual_y ..."
        size_t sep = text.find("::");
        if (sep == std::string::npos) continue;
        name = first_token(text.substr(sep + 2));
      }
      if (name.empty() || name[0] == '.') continue;
      rows.push_back({enc, op, name});
      break;
    }
  }
}

}  // namespace

int main() {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUDisassembler();
  Mc mc;
  const std::string triple = "amdgcn-amd-amdhsa";
  std::string err;
  mc.target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!mc.target) {
    std::fprintf(stderr, "gen_opcodes: %s\n", err.c_str());
    return 1;
  }
  llvm::Triple tt(triple);
  mc.mri.reset(mc.target->createMCRegInfo(triple));
  llvm::MCTargetOptions options;
  mc.mai.reset(mc.target->createMCAsmInfo(*mc.mri, triple, options));
  mc.sti.reset(mc.target->createMCSubtargetInfo(triple, "gfx1100", "+wavefrontsize32"));
  mc.mii.reset(mc.target->createMCInstrInfo());
  mc.ctx = std::make_unique<llvm::MCContext>(tt, mc.mai.get(), mc.mri.get(), mc.sti.get());
  mc.dis.reset(mc.target->createMCDisassembler(*mc.sti, *mc.ctx));
  mc.printer.reset(
      mc.target->createMCInstPrinter(tt, mc.mai->getAssemblerDialect(), *mc.mai, *mc.mii, *mc.mri));
  if (!mc.dis || !mc.printer) {
    std::fprintf(stderr, "gen_opcodes: no AMDGPU disassembler\n");
    return 1;
  }
  using W = std::pair<uint32_t, uint32_t>;
  constexpr uint32_t kV = 256;  // VGPR operand code base
  std::vector<Row> rows;
  // Unused operand fields are fixed to 0 in LLVM's encodings, so each filling (a bit mask f)
  // zeroes a different subset of the optional fields: bit i set = field i is 0.
  auto pick = [](int f, int bit, uint32_t value) { return (f >> bit & 1) ? 0u : value; };
  // Scalar formats: s4/s6 as sources, s2 as destination (all even: 64-bit pairs decode too).
  enumerate(mc, rows, "SOP1", 256, false, 4, [&](unsigned op, int f) {
    return W{0xBE800000u | pick(f, 0, 2) << 16 | op << 8 | pick(f, 1, 4), 0};
  });
  enumerate(mc, rows, "SOP2", 0x60, false, 2, [&](unsigned op, int f) {
    return W{0x80000000u | op << 23 | pick(f, 0, 2) << 16 | 6u << 8 | 4u, 0};
  });
  enumerate(mc, rows, "SOPK", 0x1D, false, 2, [&](unsigned op, int f) {
    return W{0xB0000000u | op << 23 | pick(f, 0, 2) << 16 | 0x10u, 0};
  });
  enumerate(mc, rows, "SOPC", 128, false, 1, [](unsigned op, int) {
    return W{0xBF000000u | op << 16 | 6u << 8 | 4u, 0};
  });
  enumerate(mc, rows, "SOPP", 128, false, 2, [&](unsigned op, int f) {
    return W{0xBF800000u | op << 16 | pick(f, 0, 1), 0};
  });
  enumerate(mc, rows, "SMEM", 256, true, 4, [&](unsigned op, int f) {
    return W{0xF4000000u | op << 18 | pick(f, 0, 8) << 6 | pick(f, 1, 2), 124u << 25 | 0x10u};
  });
  // Vector formats: v4/v6/v8 sources, v2 (or an SGPR carry-out) destinations.
  enumerate(mc, rows, "VOP1", 256, false, 2, [&](unsigned op, int f) {
    return W{0x7E000000u | pick(f, 0, 2) << 17 | op << 9 | (kV + 4), 0};
  });
  enumerate(mc, rows, "VOP2", 62, false, 1, [](unsigned op, int) {
    return W{op << 25 | 2u << 17 | 6u << 9 | (kV + 4), 0};
  });
  enumerate(mc, rows, "VOPC", 256, false, 1, [](unsigned op, int) {
    return W{0x7C000000u | op << 17 | 6u << 9 | (kV + 4), 0};
  });
  enumerate(mc, rows, "VOP3", 1024, true, 24, [&](unsigned op, int f) {
    uint32_t sdst = f & 1 ? 106u << 8 : 0u;  // VOP3SD: sdst = vcc_lo
    uint32_t src1 = f & 2 ? 0u : kV + 6;
    uint32_t src2 = (f >> 2) == 0   ? kV + 8
                    : (f >> 2) == 1 ? 106u
                    : (f >> 2) == 2 ? 0u
                    : (f >> 2) == 3 ? 0u
                    : (f >> 2) == 4 ? kV + 8
                                    : 106u;
    uint32_t dst = (f >> 2) >= 3 ? 0u : 2u;
    return W{0xD4000000u | op << 16 | sdst | dst, src2 << 18 | src1 << 9 | (kV + 4)};
  });
  enumerate(mc, rows, "VOP3P", 128, true, 4, [&](unsigned op, int f) {
    uint32_t srcs = pick(f, 0, kV + 16) << 18 | pick(f, 1, kV + 8) << 9 | (kV + 0);
    return W{0xCC000000u | op << 16 | 24u | 1u << 14, srcs | 3u << 27};
  });
  // VOPD: the other half is v_dual_mul_f32 (X op 3, Y op 3); vdstY must differ in bank parity.
  enumerate(mc, rows, "VOPDX", 16, true, 2, [&](unsigned op, int f) {
    return W{0xC8000000u | op << 22 | 3u << 17 | pick(f, 0, 6) << 9 | (kV + 4),
             2u << 24 | (6u >> 1) << 17 | 9u << 9 | (kV + 5)};
  });
  enumerate(
      mc, rows, "VOPDY", 32, true, 2,
      [&](unsigned op, int f) {
        return W{0xC8000000u | 3u << 22 | op << 17 | 6u << 9 | (kV + 4),
                 2u << 24 | (6u >> 1) << 17 | pick(f, 0, 9) << 9 | (kV + 5)};
      },
      1);
  enumerate(mc, rows, "DS", 256, true, 16, [&](unsigned op, int f) {
    return W{0xD8000000u | op << 18 | 0x0201u,
             pick(f, 0, 8) << 24 | pick(f, 1, 6) << 16 | pick(f, 2, 4) << 8 | pick(f, 3, 2)};
  });
  const char* flat_names[3] = {"FLAT", "SCRATCH", "GLOBAL"};
  for (uint32_t seg = 0; seg < 3; ++seg) {
    enumerate(mc, rows, flat_names[seg], 128, true, 16, [&, seg](unsigned op, int f) {
      uint32_t saddr = (f >> 2 & 1) ? 124u : 2u;
      uint32_t sve = seg == 1 && (f >> 3 & 1) ? 1u << 23 : 0u;
      uint32_t vaddr = seg == 1 && !sve && saddr != 124u ? 0u : 2u;
      return W{0xDC000000u | op << 18 | seg << 16 | 0x10u,
               pick(f, 0, 8) << 24 | saddr << 16 | pick(f, 1, 4) << 8 | vaddr | sve};
    });
  }
  enumerate(mc, rows, "MUBUF", 256, true, 1, [](unsigned op, int) {
    return W{0xE0000000u | op << 18, 124u << 24 | 2u << 16 | 4u << 8 | 2u};
  });
  std::printf(
      "// GENERATED by test/mockgpu/gen_opcodes.cpp from LLVM %s's AMDGPU disassembler (gfx1100). "
      "Do not edit.\n// X(encoding, opcode, mnemonic as LLVM prints it)\n",
      LLVM_VERSION_STRING);
  for (const Row& r : rows) std::printf("X(%s, %u, \"%s\")\n", r.enc.c_str(), r.op, r.name.c_str());
  return 0;
}
