// gfx11 instruction decoding: the encoding of an instruction word, its length (literal, VOPD,
// 64-bit formats) and its bit fields, by our own bit-field rules (docs/rdna3.md#encodings). Opcode
// names come from opcode_table.inc, which gen_opcodes.cpp generates from LLVM's disassembler.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ugrad::mockgpu {

enum class Enc : uint8_t {
  SOP1,
  SOP2,
  SOPK,
  SOPC,
  SOPP,
  SMEM,
  VOP1,
  VOP2,
  VOPC,
  VOP3,
  VOP3P,
  VOPDX,
  VOPDY,
  DS,
  FLAT,
  SCRATCH,
  GLOBAL,
  MUBUF,
  UNKNOWN
};

/// "SOP1", "VOP3", ...
std::string_view enc_name(Enc e);

/// The LLVM mnemonic of (encoding, opcode) as the generated table has it, or "" if none.
std::string_view opcode_name(Enc e, unsigned op);

/// Fields of one decoded instruction. Operand codes are the 9-bit source encoding (0-105 SGPR,
/// 106 VCC_LO, 124 NULL, 126 EXEC_LO, 128-208 integers, 240-248 floats, 253 SCC, 255 literal,
/// 256+ VGPR).
struct Fields {
  Enc enc = Enc::UNKNOWN;
  uint16_t op = 0;
  uint8_t size = 4;  // bytes, literal included
  uint32_t w0 = 0, w1 = 0, lit = 0;
  bool has_lit = false;
  uint16_t src[3] = {0, 0, 0};
  uint16_t vdst = 0;  // VGPR number, or SGPR code for scalar/VOPC-e64 destinations
  uint16_t sdst = 0;  // VOP3SD carry-out / scalar destination code
  uint8_t abs = 0, neg = 0, neg_hi = 0, opsel = 0, opsel_hi = 0, omod = 0;
  bool clamp = false;
  uint16_t simm16 = 0;
  // VOPD second half
  uint16_t opy = 0, srcy[2] = {0, 0}, vdsty = 0;
};

/// Decodes the instruction at `words` (at most `avail` dwords readable). Unknown encodings come
/// back with enc UNKNOWN and size 4.
Fields decode(const uint32_t* words, size_t avail);

/// True for VOP3 opcodes in the VOP3SD form (sdst field instead of abs/op_sel).
bool is_vop3sd(unsigned op);

}  // namespace ugrad::mockgpu
