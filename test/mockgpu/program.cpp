// Decoding a code object's .text into a Program, the handler registry, and error reporting.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/error.h"
#include "test/mockgpu/emu.h"

namespace ugrad::mockgpu {

namespace {

// The instruction's words as "VOP3 d6130002 04220d04".
std::string encoding_text(const Inst& in) {
  std::string s(enc_name(in.enc));
  s += fmt::format(" {:08x}", in.w0);
  if (in.size >= 8 && in.enc != Enc::SOP1 && in.enc != Enc::SOP2 && in.enc != Enc::SOPC &&
      in.enc != Enc::VOP1 && in.enc != Enc::VOP2 && in.enc != Enc::VOPC)
    s += fmt::format(" {:08x}", in.w1);
  if (in.has_lit) s += fmt::format(" lit {:08x}", in.lit);
  return s;
}

void unimplemented(Wave& w, const Inst& in) {
  w.fail(in, "opcode has no semantics in the emulator");
}

// Instruction classes by mnemonic prefix, first match wins; the rest go by encoding.
constexpr std::pair<std::string_view, InstClass> kClassByPrefix[] = {
    {"v_wmma_", InstClass::WMMA},
    {"v_dot4_", InstClass::DOT4},
    {"v_dot8_", InstClass::DOT4},
    {"v_exp_", InstClass::TRANS},
    {"v_log_", InstClass::TRANS},
    {"v_rcp_", InstClass::TRANS},
    {"v_rsq_", InstClass::TRANS},
    {"v_sqrt_", InstClass::TRANS},
    {"v_sin_", InstClass::TRANS},
    {"v_cos_", InstClass::TRANS},
    {"s_branch", InstClass::BRANCH},
    {"s_cbranch_", InstClass::BRANCH},
    {"s_setpc_", InstClass::BRANCH},
    {"s_swappc_", InstClass::BRANCH},
    {"s_waitcnt", InstClass::WAIT},
    {"s_barrier", InstClass::WAIT},
    {"s_nop", InstClass::WAIT},
    {"s_delay_alu", InstClass::WAIT},
    {"s_clause", InstClass::WAIT},
    {"s_sendmsg", InstClass::WAIT},
    {"s_set_inst_prefetch_distance", InstClass::WAIT},
    {"s_setprio", InstClass::WAIT},
    {"s_sleep", InstClass::WAIT},
    {"s_icache_inv", InstClass::WAIT},
    {"s_dcache_inv", InstClass::WAIT},
    {"s_gl1_inv", InstClass::WAIT},
    {"s_wait_idle", InstClass::WAIT},
    {"buffer_gl", InstClass::WAIT},
};

}  // namespace

InstClass inst_class(const Fields& f, std::string_view name) {
  for (const auto& [prefix, cls] : kClassByPrefix)
    if (name.substr(0, prefix.size()) == prefix) return cls;
  switch (f.enc) {
    case Enc::SMEM:
      return InstClass::SMEM;
    case Enc::DS:
      return InstClass::LDS;
    case Enc::FLAT:
    case Enc::GLOBAL:
    case Enc::SCRATCH:
      return InstClass::VMEM;
    case Enc::MUBUF:
      return InstClass::WAIT;
    case Enc::VOP1:
    case Enc::VOP2:
    case Enc::VOPC:
    case Enc::VOP3:
    case Enc::VOP3P:
    case Enc::VOPDX:
      return name.find("_f64") != std::string_view::npos ? InstClass::VALU64 : InstClass::VALU;
    default:
      return InstClass::SALU;
  }
}

void Wave::fail(const Inst& in, std::string_view what) const {
  std::string name(in.name.empty() ? std::string_view("<unknown>") : in.name);
  throw Error(fmt::format("mockgpu: kernel {} pc 0x{:x}: {} ({}): {}",
                          dispatch ? dispatch->kernel : "?", in.pc, name, encoding_text(in), what));
}

void Wave::check_global(const Inst& in, uint64_t addr, uint64_t size, int lane) {
  if (addr >= last_range.first && addr + size <= last_range.second && addr + size > addr) return;
  auto r = dispatch->memory->range_of(addr);
  if (r.second != 0 && addr + size <= r.second) {
    last_range = r;
    return;
  }
  fail(in, fmt::format("out-of-bounds access: lane {} address 0x{:x} size {} is not inside a "
                       "live allocation ({})",
                       lane, addr, size, dispatch->memory->describe(addr)));
}

std::string canonical_mnemonic(std::string_view name) {
  std::string s(name);
  for (std::string_view suffix : {"_e32", "_e64"})
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
      s.resize(s.size() - suffix.size());
  if (s.rfind("v_dual_", 0) == 0) s = "v_" + s.substr(7);
  return s;
}

const Registry& op_registry() {
  static const Registry registry = [] {
    Registry r;
    register_salu(r);
    register_valu(r);
    register_valu_f16(r);
    register_vop3p(r);
    register_memory(r);
    return r;
  }();
  return registry;
}

Program build_program(const uint8_t* text, size_t size, uint64_t text_address) {
  Program p;
  p.text_address = text_address;
  const size_t nwords = size / 4;
  std::vector<uint32_t> words(nwords + 3, 0);
  std::memcpy(words.data(), text, nwords * 4);
  p.index_of_word.assign(nwords + 1, -1);
  const Registry& reg = op_registry();
  for (size_t wi = 0; wi < nwords;) {
    Inst in;
    static_cast<Fields&>(in) = decode(&words[wi], nwords - wi);
    in.pc = static_cast<uint32_t>(wi * 4);
    in.name = in.enc == Enc::UNKNOWN ? std::string_view() : opcode_name(in.enc, in.op);
    in.fn = unimplemented;
    in.cls = inst_class(in, in.name);
    if (in.enc == Enc::VOPDX) {
      if (vopd_supported(in.op, in.opy)) in.fn = exec_vopd;
    } else if (!in.name.empty()) {
      auto it = reg.find(canonical_mnemonic(in.name));
      if (it != reg.end()) {
        in.fn = it->second.fn;
        in.spec = it->second.spec;
      }
    }
    // Lane-mask operands: VCC in the 32-bit forms, the SGPR fields in VOP3.
    switch (in.enc) {
      case Enc::VOP2:
      case Enc::VOPC:
        in.mask_in = in.mask_out = kVcc;
        if (in.op == 44 || in.op == 55) {  // fmamk: D = S0 * K + S1
          in.src[2] = in.src[1];
          in.src[1] = kLit;
        } else if (in.op == 45 || in.op == 56) {  // fmaak: D = S0 * S1 + K
          in.src[2] = kLit;
        }
        break;
      case Enc::VOP3:
        in.mask_in = in.src[2];
        in.mask_out = in.op < 256 ? in.vdst : in.sdst;
        break;
      default:
        break;
    }
    // DPP/SDWA-style source codes are not modelled: trap rather than misread.
    if ((in.enc == Enc::VOP1 || in.enc == Enc::VOP2 || in.enc == Enc::VOPC) &&
        (in.src[0] == 250 || in.src[0] == 233 || in.src[0] == 234))
      in.fn = unimplemented;
    p.index_of_word[wi] = static_cast<int32_t>(p.insts.size());
    wi += in.size / 4;
    p.insts.push_back(in);
  }
  p.index_of_word[nwords] = -1;
  // Branch targets (SOPP simm16 is a signed dword offset from the next instruction).
  for (Inst& in : p.insts) {
    if (in.enc != Enc::SOPP) continue;
    int64_t t = int64_t{in.pc} + 4 + int64_t{static_cast<int16_t>(in.simm16)} * 4;
    int32_t idx = t >= 0 ? p.index_at(static_cast<uint64_t>(t)) : -1;
    in.target = idx >= 0 ? static_cast<uint32_t>(idx) : UINT32_MAX;
  }
  return p;
}

std::vector<std::string> unimplemented_mnemonics(const Program& program) {
  std::set<std::string> names;
  for (const Inst& in : program.insts) {
    if (in.fn != unimplemented) continue;
    if (in.enc == Enc::VOPDX) {
      names.insert(
          fmt::format("{} :: {}", opcode_name(Enc::VOPDX, in.op), opcode_name(Enc::VOPDY, in.opy)));
    } else if (in.name == "s_code_end" || in.name.empty()) {
      if (in.name.empty()) names.insert(fmt::format("<undecodable {:08x}>", in.w0));
    } else {
      names.insert(std::string(in.name));
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace ugrad::mockgpu
