#include "test/mockgpu/decode.h"

#include <array>
#include <vector>

namespace ugrad::mockgpu {

namespace {

constexpr size_t kNumEnc = static_cast<size_t>(Enc::UNKNOWN) + 1;
constexpr unsigned kMaxOp = 1024;

struct Names {
  std::array<std::vector<std::string_view>, kNumEnc> by_enc;
  Names() {
    for (auto& v : by_enc) v.resize(kMaxOp);
#define X(enc, op, name) by_enc[static_cast<size_t>(Enc::enc)][op] = name;
#include "test/mockgpu/opcode_table.inc"
#undef X
  }
};

const Names& names() {
  static const Names n;
  return n;
}

uint32_t bits(uint32_t w, int hi, int lo) { return (w >> lo) & ((1u << (hi - lo + 1)) - 1); }

bool scalar_lit(uint16_t code) { return code == 255; }

}  // namespace

std::string_view enc_name(Enc e) {
  static constexpr std::string_view kNames[] = {
      "SOP1",  "SOP2", "SOPK",  "SOPC", "SOPP", "SMEM",    "VOP1",   "VOP2",  "VOPC",   "VOP3",
      "VOP3P", "VOPD", "VOPDY", "DS",   "FLAT", "SCRATCH", "GLOBAL", "MUBUF", "UNKNOWN"};
  return kNames[static_cast<size_t>(e)];
}

std::string_view opcode_name(Enc e, unsigned op) {
  if (op >= kMaxOp) return "";
  return names().by_enc[static_cast<size_t>(e)][op];
}

bool is_vop3sd(unsigned op) { return (op >= 288 && op <= 290) || (op >= 764 && op <= 770); }

Fields decode(const uint32_t* words, size_t avail) {
  Fields f;
  const uint32_t w0 = words[0];
  f.w0 = w0;
  auto take_w1 = [&] {
    f.size = 8;
    f.w1 = avail > 1 ? words[1] : 0;
  };
  auto take_lit = [&] {
    f.has_lit = true;
    size_t at = f.size / 4;
    f.lit = avail > at ? words[at] : 0;
    f.size += 4;
  };
  const uint32_t top9 = bits(w0, 31, 23);
  if (top9 == 0x17D || top9 == 0x17E || top9 == 0x17F) {  // SOP1 / SOPC / SOPP
    f.enc = top9 == 0x17D ? Enc::SOP1 : top9 == 0x17E ? Enc::SOPC : Enc::SOPP;
    f.src[0] = bits(w0, 7, 0);
    f.src[1] = bits(w0, 15, 8);
    f.simm16 = bits(w0, 15, 0);
    if (f.enc == Enc::SOP1) {
      f.op = bits(w0, 15, 8);
      f.sdst = bits(w0, 22, 16);
      f.src[1] = 0;
    } else {
      f.op = bits(w0, 22, 16);
    }
    if (f.enc != Enc::SOPP &&
        (scalar_lit(f.src[0]) || (f.enc == Enc::SOPC && scalar_lit(f.src[1]))))
      take_lit();
    return f;
  }
  if (bits(w0, 31, 28) == 0xB) {  // SOPK
    f.enc = Enc::SOPK;
    f.op = bits(w0, 27, 23);
    f.sdst = bits(w0, 22, 16);
    f.simm16 = bits(w0, 15, 0);
    if (f.op == 19) take_lit();  // s_setreg_imm32_b32
    return f;
  }
  if (bits(w0, 31, 30) == 2) {  // SOP2
    f.enc = Enc::SOP2;
    f.op = bits(w0, 29, 23);
    f.sdst = bits(w0, 22, 16);
    f.src[0] = bits(w0, 7, 0);
    f.src[1] = bits(w0, 15, 8);
    if (scalar_lit(f.src[0]) || scalar_lit(f.src[1])) take_lit();
    return f;
  }
  const uint32_t top6 = bits(w0, 31, 26);
  switch (top6) {
    case 0x3D:  // SMEM
      f.enc = Enc::SMEM;
      take_w1();
      f.op = bits(w0, 25, 18);
      f.src[0] = bits(w0, 5, 0) * 2;  // sbase pair
      f.vdst = bits(w0, 12, 6);       // sdata
      f.src[1] = bits(f.w1, 31, 25);  // soffset
      return f;
    case 0x35:  // VOP3 (+SD)
      f.enc = Enc::VOP3;
      take_w1();
      f.op = bits(w0, 25, 16);
      f.vdst = bits(w0, 7, 0);
      if (is_vop3sd(f.op)) {
        f.sdst = bits(w0, 14, 8);
      } else {
        f.abs = bits(w0, 10, 8);
        f.opsel = bits(w0, 14, 11);
      }
      f.clamp = bits(w0, 15, 15);
      f.src[0] = bits(f.w1, 8, 0);
      f.src[1] = bits(f.w1, 17, 9);
      f.src[2] = bits(f.w1, 26, 18);
      f.omod = bits(f.w1, 28, 27);
      f.neg = bits(f.w1, 31, 29);
      if (scalar_lit(f.src[0]) || scalar_lit(f.src[1]) || scalar_lit(f.src[2])) take_lit();
      return f;
    case 0x33:  // VOP3P (w0[31:24] = 0xCC)
      if (bits(w0, 25, 24) != 0) break;
      f.enc = Enc::VOP3P;
      take_w1();
      f.op = bits(w0, 22, 16);
      f.vdst = bits(w0, 7, 0);
      f.neg_hi = bits(w0, 10, 8);
      f.opsel = bits(w0, 13, 11);
      f.opsel_hi = static_cast<uint8_t>(bits(f.w1, 28, 27) | bits(w0, 14, 14) << 2);
      f.clamp = bits(w0, 15, 15);
      f.src[0] = bits(f.w1, 8, 0);
      f.src[1] = bits(f.w1, 17, 9);
      f.src[2] = bits(f.w1, 26, 18);
      f.neg = bits(f.w1, 31, 29);
      if (scalar_lit(f.src[0]) || scalar_lit(f.src[1]) || scalar_lit(f.src[2])) take_lit();
      return f;
    case 0x32: {  // VOPD
      f.enc = Enc::VOPDX;
      take_w1();
      f.op = bits(w0, 25, 22);
      f.opy = bits(w0, 21, 17);
      f.src[0] = bits(w0, 8, 0);
      f.src[1] = 256 + bits(w0, 16, 9);
      f.srcy[0] = bits(f.w1, 8, 0);
      f.srcy[1] = 256 + bits(f.w1, 16, 9);
      f.vdst = bits(f.w1, 31, 24);
      f.vdsty = static_cast<uint16_t>(bits(f.w1, 23, 17) << 1 | (~f.vdst & 1));
      bool k = f.op == 1 || f.op == 2 || f.opy == 1 || f.opy == 2;
      if (k || scalar_lit(f.src[0]) || scalar_lit(f.srcy[0])) take_lit();
      return f;
    }
    case 0x36:  // DS
      f.enc = Enc::DS;
      take_w1();
      f.op = bits(w0, 25, 18);
      f.simm16 = bits(w0, 15, 0);
      f.src[0] = bits(f.w1, 7, 0);    // addr
      f.src[1] = bits(f.w1, 15, 8);   // data0
      f.src[2] = bits(f.w1, 23, 16);  // data1
      f.vdst = bits(f.w1, 31, 24);
      return f;
    case 0x37: {  // FLAT / SCRATCH / GLOBAL
      uint32_t seg = bits(w0, 17, 16);
      f.enc = seg == 0   ? Enc::FLAT
              : seg == 1 ? Enc::SCRATCH
              : seg == 2 ? Enc::GLOBAL
                         : Enc::UNKNOWN;
      take_w1();
      f.op = bits(w0, 24, 18);
      f.simm16 = bits(w0, 12, 0);
      f.src[0] = bits(f.w1, 7, 0);    // vaddr
      f.src[1] = bits(f.w1, 15, 8);   // data
      f.src[2] = bits(f.w1, 22, 16);  // saddr (124 = off)
      f.vdst = bits(f.w1, 31, 24);
      f.sdst = bits(f.w1, 23, 23);  // scratch SVE
      return f;
    }
    case 0x38:  // MUBUF
      f.enc = Enc::MUBUF;
      take_w1();
      f.op = bits(w0, 25, 18);
      return f;
    default:
      break;
  }
  const uint32_t top7 = bits(w0, 31, 25);
  if (top7 == 0x3F || top7 == 0x3E) {  // VOP1 / VOPC
    f.enc = top7 == 0x3F ? Enc::VOP1 : Enc::VOPC;
    f.src[0] = bits(w0, 8, 0);
    if (f.enc == Enc::VOP1) {
      f.op = bits(w0, 16, 9);
      f.vdst = bits(w0, 24, 17);
    } else {
      f.op = bits(w0, 24, 17);
      f.src[1] = 256 + bits(w0, 16, 9);
    }
    if (scalar_lit(f.src[0])) take_lit();
    return f;
  }
  if (bits(w0, 31, 31) == 0) {  // VOP2
    f.enc = Enc::VOP2;
    f.op = bits(w0, 30, 25);
    f.src[0] = bits(w0, 8, 0);
    f.src[1] = 256 + bits(w0, 16, 9);
    f.vdst = bits(w0, 24, 17);
    bool k = f.op == 44 || f.op == 45 || f.op == 55 || f.op == 56;  // fmamk/fmaak f32/f16
    if (k || scalar_lit(f.src[0])) take_lit();
    return f;
  }
  f.enc = Enc::UNKNOWN;
  return f;
}

}  // namespace ugrad::mockgpu
