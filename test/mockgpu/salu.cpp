// Scalar ALU semantics: SOP1, SOP2, SOPK, SOPC and SOPP (branches, barrier, end, and the
// scheduling hints that are no-ops for a functional emulator). Each op is a row: name, operand
// widths and a function of the sources and SCC; the executors read every source before writing.
#include <bit>

#include "test/mockgpu/emu.h"

namespace ugrad::mockgpu {

namespace {

using u32 = uint32_t;
using u64 = uint64_t;
using i32 = int32_t;
using i64 = int64_t;

// A scalar op: D = f(S0, S1, SCC in) with SCC out; widths of S0, S1 and D (32 or 64). SOP1 has no
// S1: its f gets D's old value there (the bit set and clear ops read it).
struct SopSpec {
  u64 (*f)(u64 a, u64 b, bool& scc);
  bool wide0, wide1, wided;
  bool writes_d = true;
};

void exec_sop(Wave& w, const Inst& in) {
  const SopSpec& sp = *static_cast<const SopSpec*>(in.spec);
  u64 a = scalar_operand(w, in, in.src[0], sp.wide0 ? Ty::B64 : Ty::B32);
  u64 b = in.enc != Enc::SOP1 ? scalar_operand(w, in, in.src[1], sp.wide1 ? Ty::B64 : Ty::B32)
          : in.sdst == kNull  ? 0
                              : w.s[in.sdst];
  bool scc = w.scc;
  u64 d = sp.f(a, b, scc);
  if (sp.writes_d && in.enc != Enc::SOPC) {
    if (sp.wided)
      write_sgpr64(w, in.sdst, d);
    else
      write_sgpr(w, in.sdst, static_cast<u32>(d));
  }
  w.scc = scc;
}

// SOPK: D = f(D or S, simm16) (the immediate is sign-extended unless the op says otherwise).
struct SopkSpec {
  u64 (*f)(u64 d, u64 k, bool& scc);
  bool writes_d;
};

void exec_sopk(Wave& w, const Inst& in) {
  const SopkSpec& sp = *static_cast<const SopkSpec*>(in.spec);
  bool scc = w.scc;
  u64 d = sp.f(in.sdst == kNull ? 0 : w.s[in.sdst], in.simm16, scc);
  if (sp.writes_d) write_sgpr(w, in.sdst, static_cast<u32>(d));
  w.scc = scc;
}

// s_*_saveexec: D = EXEC; EXEC = f(S0, EXEC); SCC = EXEC != 0.
template <u32 (*F)(u32 s, u32 exec)>
void exec_saveexec(Wave& w, const Inst& in) {
  u32 s0 = static_cast<u32>(scalar_operand(w, in, in.src[0], Ty::B32));
  u32 old = w.s[kExec];
  u32 e = F(s0, old);
  write_sgpr(w, in.sdst, old);
  w.s[kExec] = e;
  w.scc = e != 0;
}

template <bool (*Cond)(const Wave&)>
void exec_branch(Wave& w, const Inst& in) {
  if (!Cond(w)) return;
  if (in.target == UINT32_MAX) w.fail(in, "branch target outside the code object");
  w.next = in.target;
}

void exec_nop(Wave&, const Inst&) {}
void exec_endpgm(Wave& w, const Inst&) { w.done = true; }
void exec_barrier(Wave& w, const Inst&) { w.at_barrier = true; }

// Waits: every access completed at once, but a wait for a vector load issued after the wave's
// last round trip began is a memory round trip the wave could not hide (a counter for the cost
// model's latency term). Loads issued together travel together: once a wait has paid for one
// trip, every load issued before it has arrived, and waits for them (the oldest outstanding,
// `pending_vm - fresh_vm` of them) cost nothing more. A trip is far when one of its loads was the
// launch's first touch of a line (served from L2, Infinity Cache or DRAM), near otherwise (a
// re-read or a spill reload, served close to the CU). Scalar loads (kernel arguments, uniform
// values) are taken to hit the scalar cache.
void wait_for_vm(Wave& w, uint32_t allowed) {
  if (w.pending_vm <= allowed) return;
  w.pending_vm = allowed;
  if (w.fresh_vm <= allowed) return;
  w.fresh_vm = 0;
  ++w.round_trips;
  w.far_round_trips += w.fresh_far;
  w.fresh_far = false;
}
// s_waitcnt simm16 (gfx11): vmcnt [15:10], lgkmcnt [9:4], expcnt [2:0].
void exec_waitcnt(Wave& w, const Inst& in) { wait_for_vm(w, in.simm16 >> 10 & 0x3f); }
void exec_waitcnt_vmcnt(Wave& w, const Inst& in) { wait_for_vm(w, in.simm16); }

void exec_getpc(Wave& w, const Inst& in) {
  write_sgpr64(w, in.sdst, w.dispatch->program->text_address + in.pc + 4);
}

void exec_setpc(Wave& w, const Inst& in) {
  u64 target = scalar_operand(w, in, in.src[0], Ty::B64);
  int32_t idx = w.dispatch->program->index_at(target - w.dispatch->program->text_address);
  if (idx < 0) w.fail(in, "s_setpc target is not an instruction");
  w.next = static_cast<u32>(idx);
}

// s_denorm_mode / s_round_mode: only the defaults and f32 flushing are modelled.
void exec_denorm_mode(Wave& w, const Inst& in) { w.dispatch->ftz32 = (in.simm16 & 3) != 3; }
void exec_round_mode(Wave& w, const Inst& in) {
  if (in.simm16 != 0) w.fail(in, "only round-to-nearest-even is modelled");
}

#define SOP(name, w0, w1, wd, expr)         \
  {                                         \
    name, {                                 \
      +[](u64 a, u64 b, bool& scc) -> u64 { \
        (void)a, (void)b, (void)scc;        \
        expr;                               \
      },                                    \
          w0, w1, wd                        \
    }                                       \
  }

u32 lo(u64 x) { return static_cast<u32>(x); }
i32 slo(u64 x) { return static_cast<i32>(static_cast<u32>(x)); }
u64 bfe(u64 v, u64 spec, bool sign, int width) {
  u32 off = spec & (width - 1), len = (spec >> 16) & 0x7f;
  if (len == 0) return 0;
  if (len > static_cast<u32>(width) - off) len = width - off;
  u64 r = (v >> off) & (len >= 64 ? ~0ull : ((1ull << len) - 1));
  if (sign && len < 64 && (r >> (len - 1) & 1)) r |= ~0ull << len;
  return width == 32 ? lo(r) : r;
}

const std::vector<std::pair<const char*, SopSpec>> kSop = {
    // SOP2 arithmetic: SCC is the carry/borrow (unsigned) or the signed overflow.
    SOP("s_add_u32", 0, 0, 0, u64 r = u64{lo(a)} + lo(b); scc = r >> 32; return lo(r)),
    SOP("s_sub_u32", 0, 0, 0, scc = lo(b) > lo(a); return lo(lo(a) - lo(b))),
    SOP("s_addc_u32", 0, 0, 0, u64 r = u64{lo(a)} + lo(b) + scc; scc = r >> 32; return lo(r)),
    SOP("s_subb_u32", 0, 0, 0, u64 r = u64{lo(a)} - lo(b) - scc; scc = (r >> 32) != 0;
        return lo(r)),
    SOP("s_add_i32", 0, 0, 0, i64 r = i64{slo(a)} + slo(b); scc = r != static_cast<i32>(r);
        return lo(static_cast<u64>(r))),
    SOP("s_sub_i32", 0, 0, 0, i64 r = i64{slo(a)} - slo(b); scc = r != static_cast<i32>(r);
        return lo(static_cast<u64>(r))),
    SOP("s_absdiff_i32", 0, 0, 0, i64 r = i64{slo(a)} - slo(b); r = r < 0 ? -r : r; scc = r != 0;
        return lo(static_cast<u64>(r))),
    SOP("s_lshl_b32", 0, 0, 0, u32 r = lo(a) << (b & 31); scc = r != 0; return r),
    SOP("s_lshl_b64", 1, 0, 1, u64 r = a << (b & 63); scc = r != 0; return r),
    SOP("s_lshr_b32", 0, 0, 0, u32 r = lo(a) >> (b & 31); scc = r != 0; return r),
    SOP("s_lshr_b64", 1, 0, 1, u64 r = a >> (b & 63); scc = r != 0; return r),
    SOP("s_ashr_i32", 0, 0, 0, u32 r = static_cast<u32>(slo(a) >> (b & 31)); scc = r != 0;
        return r),
    SOP("s_ashr_i64", 1, 0, 1, u64 r = static_cast<u64>(static_cast<i64>(a) >> (b & 63));
        scc = r != 0; return r),
    SOP("s_lshl1_add_u32", 0, 0, 0, u64 r = (u64{lo(a)} << 1) + lo(b); scc = r >> 32; return lo(r)),
    SOP("s_lshl2_add_u32", 0, 0, 0, u64 r = (u64{lo(a)} << 2) + lo(b); scc = r >> 32; return lo(r)),
    SOP("s_lshl3_add_u32", 0, 0, 0, u64 r = (u64{lo(a)} << 3) + lo(b); scc = r >> 32; return lo(r)),
    SOP("s_lshl4_add_u32", 0, 0, 0, u64 r = (u64{lo(a)} << 4) + lo(b); scc = r >> 32; return lo(r)),
    SOP("s_min_i32", 0, 0, 0, scc = slo(a) < slo(b); return scc ? lo(a) : lo(b)),
    SOP("s_min_u32", 0, 0, 0, scc = lo(a) < lo(b); return scc ? lo(a) : lo(b)),
    SOP("s_max_i32", 0, 0, 0, scc = slo(a) > slo(b); return scc ? lo(a) : lo(b)),
    SOP("s_max_u32", 0, 0, 0, scc = lo(a) > lo(b); return scc ? lo(a) : lo(b)),
    // Bitwise: SCC = result != 0.
    SOP("s_and_b32", 0, 0, 0, u32 r = lo(a & b); scc = r != 0; return r),
    SOP("s_and_b64", 1, 1, 1, u64 r = a & b; scc = r != 0; return r),
    SOP("s_or_b32", 0, 0, 0, u32 r = lo(a | b); scc = r != 0; return r),
    SOP("s_or_b64", 1, 1, 1, u64 r = a | b; scc = r != 0; return r),
    SOP("s_xor_b32", 0, 0, 0, u32 r = lo(a ^ b); scc = r != 0; return r),
    SOP("s_xor_b64", 1, 1, 1, u64 r = a ^ b; scc = r != 0; return r),
    SOP("s_nand_b32", 0, 0, 0, u32 r = ~lo(a & b); scc = r != 0; return r),
    SOP("s_nor_b32", 0, 0, 0, u32 r = ~lo(a | b); scc = r != 0; return r),
    SOP("s_xnor_b32", 0, 0, 0, u32 r = ~lo(a ^ b); scc = r != 0; return r),
    SOP("s_and_not1_b32", 0, 0, 0, u32 r = lo(a & ~b); scc = r != 0; return r),
    SOP("s_and_not1_b64", 1, 1, 1, u64 r = a & ~b; scc = r != 0; return r),
    SOP("s_or_not1_b32", 0, 0, 0, u32 r = lo(a | ~b); scc = r != 0; return r),
    SOP("s_or_not1_b64", 1, 1, 1, u64 r = a | ~b; scc = r != 0; return r),
    SOP("s_bfe_u32", 0, 0, 0, u32 r = lo(bfe(lo(a), b, false, 32)); scc = r != 0; return r),
    SOP("s_bfe_i32", 0, 0, 0, u32 r = lo(bfe(lo(a), b, true, 32)); scc = r != 0; return r),
    SOP("s_bfe_u64", 1, 0, 1, u64 r = bfe(a, b, false, 64); scc = r != 0; return r),
    SOP("s_bfe_i64", 1, 0, 1, u64 r = bfe(a, b, true, 64); scc = r != 0; return r),
    SOP("s_bfm_b32", 0, 0, 0, return lo(((1ull << (a & 31)) - 1) << (b & 31))),
    SOP("s_mul_i32", 0, 0, 0, return lo(a) * lo(b)),
    SOP("s_mul_hi_u32", 0, 0, 0, return (u64{lo(a)} * lo(b)) >> 32),
    SOP("s_mul_hi_i32", 0, 0, 0, return lo(static_cast<u64>((i64{slo(a)} * slo(b)) >> 32))),
    SOP("s_cselect_b32", 0, 0, 0, return scc ? lo(a) : lo(b)),
    SOP("s_cselect_b64", 1, 1, 1, return scc ? a : b),
    SOP("s_pack_ll_b32_b16", 0, 0, 0, return (a & 0xffff) | (b & 0xffff) << 16),
    SOP("s_pack_lh_b32_b16", 0, 0, 0, return (a & 0xffff) | (b & 0xffff0000u)),
    SOP("s_pack_hh_b32_b16", 0, 0, 0, return (lo(a) >> 16) | (b & 0xffff0000u)),
    SOP("s_pack_hl_b32_b16", 0, 0, 0, return (lo(a) >> 16) | (b & 0xffff) << 16),
    // SOP1
    SOP("s_mov_b32", 0, 0, 0, return lo(a)),
    SOP("s_mov_b64", 1, 0, 1, return a),
    SOP("s_not_b32", 0, 0, 0, u32 r = ~lo(a); scc = r != 0; return r),
    SOP("s_not_b64", 1, 0, 1, u64 r = ~a; scc = r != 0; return r),
    SOP("s_brev_b32", 0, 0, 0, u32 x = lo(a); u32 r = 0;
        for (int i = 0; i < 32; ++i) r |= (x >> i & 1) << (31 - i); return r),
    SOP("s_ctz_i32_b32", 0, 0, 0, return lo(a) ? std::countr_zero(lo(a)) : 0xffffffffu),
    SOP("s_clz_i32_u32", 0, 0, 0, return lo(a) ? std::countl_zero(lo(a)) : 0xffffffffu),
    SOP("s_cls_i32", 0, 0, 0, u32 x = lo(a); if (x == 0 || x == ~0u) return 0xffffffffu;
        return static_cast<u32>(std::countl_zero(slo(a) < 0 ? ~x : x))),
    SOP("s_sext_i32_i8", 0, 0, 0, return lo(static_cast<u64>(static_cast<int8_t>(a)))),
    SOP("s_sext_i32_i16", 0, 0, 0, return lo(static_cast<u64>(static_cast<int16_t>(a)))),
    SOP("s_abs_i32", 0, 0, 0, i32 x = slo(a); u32 r = x < 0 ? 0u - lo(a) : lo(a); scc = r != 0;
        return r),
    SOP("s_bitset0_b32", 0, 0, 0, return lo(b) & ~(1u << (a & 31))),
    SOP("s_bitset1_b32", 0, 0, 0, return lo(b) | 1u << (a & 31)),
    SOP("s_bcnt0_i32_b32", 0, 0, 0, u32 r = 32 - std::popcount(lo(a)); scc = r != 0; return r),
    SOP("s_bcnt1_i32_b32", 0, 0, 0, u32 r = std::popcount(lo(a)); scc = r != 0; return r),
    SOP("s_bcnt1_i32_b64", 1, 0, 0, u32 r = std::popcount(a); scc = r != 0; return r),
    // SOPC: the result is SCC only.
    SOP("s_cmp_eq_i32", 0, 0, 0, scc = lo(a) == lo(b); return 0),
    SOP("s_cmp_lg_i32", 0, 0, 0, scc = lo(a) != lo(b); return 0),
    SOP("s_cmp_gt_i32", 0, 0, 0, scc = slo(a) > slo(b); return 0),
    SOP("s_cmp_ge_i32", 0, 0, 0, scc = slo(a) >= slo(b); return 0),
    SOP("s_cmp_lt_i32", 0, 0, 0, scc = slo(a) < slo(b); return 0),
    SOP("s_cmp_le_i32", 0, 0, 0, scc = slo(a) <= slo(b); return 0),
    SOP("s_cmp_eq_u32", 0, 0, 0, scc = lo(a) == lo(b); return 0),
    SOP("s_cmp_lg_u32", 0, 0, 0, scc = lo(a) != lo(b); return 0),
    SOP("s_cmp_gt_u32", 0, 0, 0, scc = lo(a) > lo(b); return 0),
    SOP("s_cmp_ge_u32", 0, 0, 0, scc = lo(a) >= lo(b); return 0),
    SOP("s_cmp_lt_u32", 0, 0, 0, scc = lo(a) < lo(b); return 0),
    SOP("s_cmp_le_u32", 0, 0, 0, scc = lo(a) <= lo(b); return 0),
    SOP("s_bitcmp0_b32", 0, 0, 0, scc = !(lo(a) >> (b & 31) & 1); return 0),
    SOP("s_bitcmp1_b32", 0, 0, 0, scc = lo(a) >> (b & 31) & 1; return 0),
    SOP("s_cmp_eq_u64", 1, 1, 0, scc = a == b; return 0),
    SOP("s_cmp_lg_u64", 1, 1, 0, scc = a != b; return 0),
};

// s_cmov: D = SCC ? S0 : D (D is left alone otherwise).
void exec_cmov(Wave& w, const Inst& in) {
  u32 a = static_cast<u32>(scalar_operand(w, in, in.src[0], Ty::B32));
  if (w.scc) write_sgpr(w, in.sdst, a);
}

#define SOPK(name, writes, expr)            \
  {                                         \
    name, {                                 \
      +[](u64 d, u64 k, bool& scc) -> u64 { \
        (void)d, (void)k, (void)scc;        \
        i32 sk = static_cast<int16_t>(k);   \
        (void)sk;                           \
        expr;                               \
      },                                    \
          writes                            \
    }                                       \
  }

const std::vector<std::pair<const char*, SopkSpec>> kSopk = {
    SOPK("s_movk_i32", true, return lo(static_cast<u64>(i64{sk}))),
    SOPK("s_cmovk_i32", true, return scc ? lo(static_cast<u64>(i64{sk})) : d),
    SOPK("s_addk_i32", true, i64 r = i64{slo(d)} + sk; scc = r != static_cast<i32>(r);
         return lo(static_cast<u64>(r))),
    SOPK("s_mulk_i32", true, return lo(static_cast<u64>(i64{slo(d)} * sk))),
    SOPK("s_cmpk_eq_i32", false, scc = slo(d) == sk; return 0),
    SOPK("s_cmpk_lg_i32", false, scc = slo(d) != sk; return 0),
    SOPK("s_cmpk_gt_i32", false, scc = slo(d) > sk; return 0),
    SOPK("s_cmpk_ge_i32", false, scc = slo(d) >= sk; return 0),
    SOPK("s_cmpk_lt_i32", false, scc = slo(d) < sk; return 0),
    SOPK("s_cmpk_le_i32", false, scc = slo(d) <= sk; return 0),
    SOPK("s_cmpk_eq_u32", false, scc = lo(d) == (k & 0xffff); return 0),
    SOPK("s_cmpk_lg_u32", false, scc = lo(d) != (k & 0xffff); return 0),
    SOPK("s_cmpk_gt_u32", false, scc = lo(d) > (k & 0xffff); return 0),
    SOPK("s_cmpk_ge_u32", false, scc = lo(d) >= (k & 0xffff); return 0),
    SOPK("s_cmpk_lt_u32", false, scc = lo(d) < (k & 0xffff); return 0),
    SOPK("s_cmpk_le_u32", false, scc = lo(d) <= (k & 0xffff); return 0),
    SOPK("s_waitcnt_vscnt", false, return 0),
    SOPK("s_waitcnt_expcnt", false, return 0),
    SOPK("s_waitcnt_lgkmcnt", false, return 0),
};

u32 exec_and_(u32 s, u32 e) { return s & e; }
u32 exec_or_(u32 s, u32 e) { return s | e; }
u32 exec_xor_(u32 s, u32 e) { return s ^ e; }
u32 exec_andn0(u32 s, u32 e) { return ~s & e; }
u32 exec_andn1(u32 s, u32 e) { return s & ~e; }
u32 exec_orn1(u32 s, u32 e) { return s | ~e; }
bool cond_always(const Wave&) { return true; }
bool cond_scc0(const Wave& w) { return !w.scc; }
bool cond_scc1(const Wave& w) { return w.scc; }
bool cond_vccz(const Wave& w) { return w.s[kVcc] == 0; }
bool cond_vccnz(const Wave& w) { return w.s[kVcc] != 0; }
bool cond_execz(const Wave& w) { return w.s[kExec] == 0; }
bool cond_execnz(const Wave& w) { return w.s[kExec] != 0; }

}  // namespace

void register_salu(Registry& r) {
  for (const auto& [name, spec] : kSop) r[name] = {exec_sop, &spec};
  for (const auto& [name, spec] : kSopk) r[name] = {exec_sopk, &spec};
  r["s_cmov_b32"] = {exec_cmov, nullptr};
  r["s_and_saveexec_b32"] = {exec_saveexec<exec_and_>, nullptr};
  r["s_or_saveexec_b32"] = {exec_saveexec<exec_or_>, nullptr};
  r["s_xor_saveexec_b32"] = {exec_saveexec<exec_xor_>, nullptr};
  r["s_and_not0_saveexec_b32"] = {exec_saveexec<exec_andn0>, nullptr};
  r["s_and_not1_saveexec_b32"] = {exec_saveexec<exec_andn1>, nullptr};
  r["s_or_not1_saveexec_b32"] = {exec_saveexec<exec_orn1>, nullptr};
  r["s_getpc_b64"] = {exec_getpc, nullptr};
  r["s_setpc_b64"] = {exec_setpc, nullptr};
  // SOPP
  r["s_branch"] = {exec_branch<cond_always>, nullptr};
  r["s_cbranch_scc0"] = {exec_branch<cond_scc0>, nullptr};
  r["s_cbranch_scc1"] = {exec_branch<cond_scc1>, nullptr};
  r["s_cbranch_vccz"] = {exec_branch<cond_vccz>, nullptr};
  r["s_cbranch_vccnz"] = {exec_branch<cond_vccnz>, nullptr};
  r["s_cbranch_execz"] = {exec_branch<cond_execz>, nullptr};
  r["s_cbranch_execnz"] = {exec_branch<cond_execnz>, nullptr};
  r["s_endpgm"] = {exec_endpgm, nullptr};
  r["s_barrier"] = {exec_barrier, nullptr};
  r["s_waitcnt"] = {exec_waitcnt, nullptr};
  r["s_waitcnt_vmcnt"] = {exec_waitcnt_vmcnt, nullptr};
  r["s_denorm_mode"] = {exec_denorm_mode, nullptr};
  r["s_round_mode"] = {exec_round_mode, nullptr};
  // Scheduling and cache hints: a functional emulator completes every access in order.
  for (const char* hint :
       {"s_nop", "s_delay_alu", "s_clause", "s_waitcnt_depctr", "s_sendmsg",
        "s_set_inst_prefetch_distance", "s_setprio", "s_sleep", "s_icache_inv", "s_dcache_inv",
        "s_gl1_inv", "buffer_gl0_inv", "buffer_gl1_inv", "s_wait_idle"})
    r[hint] = {exec_nop, nullptr};
}

}  // namespace ugrad::mockgpu
