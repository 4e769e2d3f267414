// Memory semantics: SMEM scalar loads, GLOBAL/FLAT/SCRATCH vector loads, stores and atomics, and
// DS (LDS) accesses. Global and flat addresses are host pointers into emulator-owned allocations
// and every access is bounds-checked; LDS and scratch accesses are checked against their sizes.
// Loads gather all lanes before writing any VGPR (the destination may overlap the address).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <deque>

#include "test/mockgpu/emu.h"

namespace ugrad::mockgpu {

namespace {

using u32 = uint32_t;
using u64 = uint64_t;
using i64 = int64_t;

enum class MKind : uint8_t { Load, Store, Atomic };

using AtomicFn = u64 (*)(u64 old, u64 data, u64 cmp);

struct MemSpec {
  MKind kind;
  uint8_t bytes;    // per element access
  bool sign;        // sign-extend sub-dword loads
  uint8_t d16;      // 0: whole dwords, 1: low half, 2: high half
  AtomicFn atomic;  // for Atomic
  bool rtn;         // DS atomics with _rtn return the old value
};

int64_t sext13(u32 v) { return static_cast<int16_t>(static_cast<uint16_t>(v << 3)) >> 3; }

// Reads `bytes` at p (sub-dword sign/zero extended) into dwords.
void load_elem(const uint8_t* p, const MemSpec& sp, u32* out) {
  if (sp.bytes >= 4) {
    std::memcpy(out, p, sp.bytes);
    return;
  }
  u32 v = 0;
  std::memcpy(&v, p, sp.bytes);
  if (sp.sign)
    v = sp.bytes == 1 ? static_cast<u32>(static_cast<int8_t>(v))
                      : static_cast<u32>(static_cast<int16_t>(v));
  out[0] = v;
}

// Writes a load result to the VGPRs of one lane (d16 forms merge into one half).
void write_loaded(Wave& w, unsigned vdst, int lane, const MemSpec& sp, const u32* vals) {
  if (sp.d16 == 1) {
    w.v[vdst][lane] = (w.v[vdst][lane] & 0xffff0000u) | (vals[0] & 0xffff);
  } else if (sp.d16 == 2) {
    w.v[vdst][lane] = (w.v[vdst][lane] & 0xffff) | vals[0] << 16;
  } else {
    const int n = sp.bytes < 4 ? 1 : sp.bytes / 4;
    for (int i = 0; i < n; ++i) w.v[(vdst + i) & 255][lane] = vals[i];
  }
}

// The bytes a store writes for one lane (d16_hi stores take the high half).
void store_bytes(const Wave& w, unsigned data, int lane, const MemSpec& sp, uint8_t* out) {
  u32 vals[4];
  const int n = sp.bytes < 4 ? 1 : sp.bytes / 4;
  for (int i = 0; i < n; ++i) vals[i] = w.v[(data + i) & 255][lane];
  if (sp.d16 == 2) vals[0] >>= 16;
  std::memcpy(out, vals, sp.bytes);
}

// Performs one lane's access at p; for atomics returns the old value in ret.
void access(Wave& w, const Inst& in, const MemSpec& sp, uint8_t* p, int lane, u32* ret) {
  if (sp.kind == MKind::Load) {
    load_elem(p, sp, ret);
  } else if (sp.kind == MKind::Store) {
    store_bytes(w, in.src[1], lane, sp, p);
  } else {
    u64 old = 0, data = w.v[in.src[1]][lane], cmp = 0;
    const bool wide = sp.bytes == 8;
    std::memcpy(&old, p, sp.bytes);
    if (wide) data |= u64{w.v[(in.src[1] + 1) & 255][lane]} << 32;
    // cmpswap: DATA = {src, cmp} (global), DS cmpstore: data0 = cmp, data1 = src
    if (in.enc == Enc::DS) {
      u64 d1 = w.v[in.src[2]][lane];
      if (wide) d1 |= u64{w.v[(in.src[2] + 1) & 255][lane]} << 32;
      cmp = d1;
    } else {
      const unsigned c = in.src[1] + (wide ? 2 : 1);
      cmp = w.v[c & 255][lane];
      if (wide) cmp |= u64{w.v[(c + 1) & 255][lane]} << 32;
    }
    u64 nv = sp.atomic(old, data, cmp);
    std::memcpy(p, &nv, sp.bytes);
    ret[0] = static_cast<u32>(old);
    ret[1] = static_cast<u32>(old >> 32);
  }
}

// ---- counters ----

// Global bytes, the 128-byte lines one vector memory instruction touches (each lane's access
// lies in at most two lines), the bytes its lanes access (their union) and which bytes of each
// line the launch uses. True when the instruction is the launch's first to touch one of its
// lines (its data comes from beyond the compute unit's caches).
bool count_global(Wave& w, const MemSpec& sp, const uint64_t* addrs, u32 exec) {
  uint64_t lines[2 * kLanes], starts[kLanes];
  int n = 0, lanes = 0;
  LineSet& used = w.dispatch->lines;
  const uint8_t access = (sp.kind != MKind::Store ? LineSet::kRead : 0) |
                         (sp.kind != MKind::Load ? LineSet::kWritten : 0);
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const uint64_t first = addrs[l] / kLineBytes, last = (addrs[l] + sp.bytes - 1) / kLineBytes;
    const auto offset = static_cast<unsigned>(addrs[l] % kLineBytes);
    lines[n++] = first;
    if (last != first) {
      lines[n++] = last;
      used.use(first, offset, static_cast<unsigned>(kLineBytes) - offset, access);
      used.use(last, 0, offset + sp.bytes - static_cast<unsigned>(kLineBytes), access);
    } else {
      used.use(first, offset, sp.bytes, access);
    }
    starts[lanes++] = addrs[l];
  }
  if (!std::is_sorted(lines, lines + n)) std::sort(lines, lines + n);  // lanes mostly ascend
  n = static_cast<int>(std::unique(lines, lines + n) - lines);
  if (!std::is_sorted(starts, starts + lanes)) std::sort(starts, starts + lanes);
  uint64_t request = 0, end = 0;  // the union of [start, start + bytes) over the lanes
  for (int i = 0; i < lanes; ++i) {
    request += starts[i] + sp.bytes - std::max(starts[i], std::min(end, starts[i] + sp.bytes));
    end = std::max(end, starts[i] + sp.bytes);
  }
  LaunchCounters& c = w.dispatch->counters;
  const uint64_t bytes = uint64_t{sp.bytes} * static_cast<uint64_t>(std::popcount(exec));
  if (sp.kind != MKind::Store) c.global_bytes_read += bytes;
  if (sp.kind != MKind::Load) c.global_bytes_written += bytes;
  c.vmem_line_requests += static_cast<uint64_t>(n);
  c.vmem_request_bytes += request;
  bool first = false;
  for (int i = 0; i < n; ++i) {
    const LineSet::FirstTouch t =
        used.request(lines[i], w.dispatch->group_serial, sp.kind != MKind::Store);
    first |= t.in_launch;
    c.vmem_group_read_lines += t.read_in_group;
  }
  return first;
}

// Bank cycles of one DS instruction from the dwords its lanes access: distinct dwords in one
// bank serialize, one dword read by many lanes is a broadcast (kLdsBanks 4-byte banks).
void count_lds(Wave& w, u32* dwords, int n) {
  std::sort(dwords, dwords + n);
  n = static_cast<int>(std::unique(dwords, dwords + n) - dwords);
  int per_bank[kLdsBanks] = {};
  int cycles = 1;
  for (int i = 0; i < n; ++i) cycles = std::max(cycles, ++per_bank[dwords[i] % kLdsBanks]);
  const int ideal = std::max(1, (n + kLdsBanks - 1) / kLdsBanks);
  w.dispatch->counters.lds_cycles += static_cast<uint64_t>(cycles);
  w.dispatch->counters.lds_conflict_cycles += static_cast<uint64_t>(cycles - ideal);
}

// The dwords of an LDS access [addr, addr + bytes), appended at out[n].
void lds_dwords(uint64_t addr, unsigned bytes, u32* out, int& n) {
  for (uint64_t a = addr / 4; a <= (addr + bytes - 1) / 4; ++a) out[n++] = static_cast<u32>(a);
}

// ---- GLOBAL / FLAT / SCRATCH ----

void exec_vmem(Wave& w, const Inst& in) {
  const MemSpec& sp = *static_cast<const MemSpec*>(in.spec);
  const u32 exec = w.exec();
  const int64_t offset = sext13(in.simm16);
  const bool returns = sp.kind == MKind::Load || (sp.kind == MKind::Atomic && (in.w0 >> 14 & 1));
  const uint64_t size = sp.bytes;
  u32 result[kLanes][4];
  uint64_t addrs[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p;
    if (in.enc == Enc::SCRATCH) {
      int64_t a = offset;
      if (in.src[2] != kNull) a += w.s[in.src[2]];
      if (in.sdst) a += w.v[in.src[0]][l];  // SVE: the VGPR offset is used
      const uint64_t per = w.dispatch->scratch_per_lane;
      if (a < 0 || static_cast<uint64_t>(a) + size > per)
        w.fail(in, fmt::format("scratch access out of bounds: lane {} offset {} size {} "
                               "(private segment {} bytes)",
                               l, a, size, per));
      p = w.scratch.data() + l * per + a;
    } else {
      uint64_t addr;
      if (in.enc == Enc::GLOBAL && in.src[2] != kNull)
        addr = (w.s[in.src[2]] | u64{w.s[in.src[2] + 1]} << 32) + w.v[in.src[0]][l];
      else
        addr = w.v[in.src[0]][l] | u64{w.v[(in.src[0] + 1) & 255][l]} << 32;
      addr += static_cast<uint64_t>(offset);
      w.check_global(in, addr, size, l);
      p = reinterpret_cast<uint8_t*>(addr);
      addrs[l] = addr;
    }
    access(w, in, sp, p, l, result[l]);
  }
  bool far = false;
  if (in.enc == Enc::SCRATCH) {  // private memory (register spills): counted apart
    const uint64_t bytes = size * static_cast<uint64_t>(std::popcount(exec));
    (sp.kind == MKind::Load ? w.dispatch->counters.scratch_bytes_read
                            : w.dispatch->counters.scratch_bytes_written) += bytes;
  } else if (exec) {
    far = count_global(w, sp, addrs, exec);
  }
  if (!returns) return;
  ++w.pending_vm;
  ++w.fresh_vm;
  w.fresh_far |= far;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    if (sp.kind == MKind::Atomic) {
      w.v[in.vdst][l] = result[l][0];
      if (sp.bytes == 8) w.v[(in.vdst + 1) & 255][l] = result[l][1];
    } else {
      write_loaded(w, in.vdst, l, sp, result[l]);
    }
  }
}

// ---- DS ----

uint8_t* lds_at(Wave& w, const Inst& in, uint64_t addr, uint64_t size, int lane) {
  std::vector<uint8_t>& lds = w.group->lds;
  if (addr + size > lds.size())
    w.fail(in, fmt::format("LDS access out of bounds: lane {} address 0x{:x} size {} (LDS {} "
                           "bytes)",
                           lane, addr, size, lds.size()));
  return lds.data() + addr;
}

void exec_ds(Wave& w, const Inst& in) {
  const MemSpec& sp = *static_cast<const MemSpec*>(in.spec);
  const u32 exec = w.exec();
  const bool returns = sp.kind == MKind::Load || (sp.kind == MKind::Atomic && sp.rtn);
  u32 result[kLanes][4];
  u32 dwords[kLanes * 6];  // an unaligned access may span one dword more
  int n = 0;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint64_t addr = uint64_t{w.v[in.src[0]][l]} + in.simm16;
    access(w, in, sp, lds_at(w, in, addr, sp.bytes, l), l, result[l]);
    lds_dwords(addr, sp.bytes, dwords, n);
  }
  count_lds(w, dwords, n);
  if (!returns) return;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    if (sp.kind == MKind::Atomic) {
      w.v[in.vdst][l] = result[l][0];
      if (sp.bytes == 8) w.v[(in.vdst + 1) & 255][l] = result[l][1];
    } else {
      write_loaded(w, in.vdst, l, sp, result[l]);
    }
  }
}

// ds_{load,store}_2addr[_stride64]_b{32,64}: two elements at addr + offset0/1 * size (* 64).
template <bool Load, int Bytes, bool Stride64>
void exec_ds_2addr(Wave& w, const Inst& in) {
  const u32 exec = w.exec();
  const uint64_t scale = Bytes * (Stride64 ? 64 : 1);
  const int dw = Bytes / 4;
  u32 result[kLanes][4];
  u32 dwords[kLanes * 6];  // an unaligned access may span one dword more
  int n = 0;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    for (int k = 0; k < 2; ++k) {
      const uint64_t off = (k ? in.simm16 >> 8 : in.simm16 & 0xff) * scale;
      uint8_t* p = lds_at(w, in, uint64_t{w.v[in.src[0]][l]} + off, Bytes, l);
      lds_dwords(uint64_t{w.v[in.src[0]][l]} + off, Bytes, dwords, n);
      if (Load) {
        std::memcpy(&result[l][k * dw], p, Bytes);
      } else {
        const unsigned data = k ? in.src[2] : in.src[1];
        u32 vals[2] = {w.v[data][l], w.v[(data + 1) & 255][l]};
        std::memcpy(p, vals, Bytes);
      }
    }
  }
  count_lds(w, dwords, n);
  if (!Load) return;
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1)
      for (int i = 0; i < 2 * dw; ++i) w.v[(in.vdst + i) & 255][l] = result[l][i];
}

// ds_bpermute_b32: D[lane] = data0[(addr[lane] / 4) % 32] (reads only active source lanes'
// registers as they are now); ds_permute_b32: D[(addr/4)%32] = data0[lane].
template <bool Backward>
void exec_ds_permute(Wave& w, const Inst& in) {
  const u32 exec = w.exec();
  u32 out[kLanes];
  for (int l = 0; l < kLanes; ++l) out[l] = 0;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const u32 idx = ((w.v[in.src[0]][l] + in.simm16) / 4) % kLanes;
    if (Backward)
      out[l] = w.v[in.src[1]][idx];
    else
      out[idx] = w.v[in.src[1]][l];
  }
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[in.vdst][l] = out[l];
  ++w.dispatch->counters.lds_cycles;  // a crossbar permute, no bank conflicts
}

// ---- SMEM ----

void exec_smem(Wave& w, const Inst& in) {
  const int dwords = 1 << (in.op & 7);
  const int64_t imm = static_cast<int32_t>((in.w1 & 0x1fffff) << 11) >> 11;
  uint64_t addr = (w.s[in.src[0]] | u64{w.s[in.src[0] + 1]} << 32) + static_cast<uint64_t>(imm);
  if (in.src[1] != kNull) addr += w.s[in.src[1]];
  w.check_global(in, addr, dwords * 4ull, -1);
  u32 vals[16];
  std::memcpy(vals, reinterpret_cast<const void*>(addr), dwords * 4);
  w.dispatch->counters.smem_bytes_read += dwords * 4ull;
  for (int i = 0; i < dwords; ++i) write_sgpr(w, static_cast<uint16_t>(in.vdst + i), vals[i]);
}

const MemSpec* keep(MemSpec s) {
  static std::deque<MemSpec> specs;
  specs.push_back(s);
  return &specs.back();
}

#define ATOM(expr)                         \
  +[](u64 old, u64 data, u64 cmp) -> u64 { \
    (void)old, (void)data, (void)cmp;      \
    return expr;                           \
  }

float f32(u64 x) { return as_f32(static_cast<u32>(x)); }
u64 b32(float f) { return f32_bits(f); }

struct AtomicOp {
  const char* name;  // the part after "atomic_" / "ds_"
  AtomicFn f32bit, f64bit;
};

const AtomicOp kAtomics[] = {
    {"swap", ATOM(data), ATOM(data)},
    {"cmpswap", ATOM(static_cast<u32>(old) == static_cast<u32>(cmp) ? data : old),
     ATOM(old == cmp ? data : old)},
    {"add", ATOM(static_cast<u32>(old + data)), ATOM(old + data)},
    {"sub", ATOM(static_cast<u32>(old - data)), ATOM(old - data)},
    {"rsub", ATOM(static_cast<u32>(data - old)), ATOM(data - old)},
    {"min_i", ATOM(static_cast<int32_t>(old) < static_cast<int32_t>(data) ? old : data),
     ATOM(static_cast<i64>(old) < static_cast<i64>(data) ? old : data)},
    {"max_i", ATOM(static_cast<int32_t>(old) > static_cast<int32_t>(data) ? old : data),
     ATOM(static_cast<i64>(old) > static_cast<i64>(data) ? old : data)},
    {"min_u", ATOM(static_cast<u32>(old) < static_cast<u32>(data) ? old : data),
     ATOM(old < data ? old : data)},
    {"max_u", ATOM(static_cast<u32>(old) > static_cast<u32>(data) ? old : data),
     ATOM(old > data ? old : data)},
    {"and", ATOM(old& data), ATOM(old& data)},
    {"or", ATOM(old | data), ATOM(old | data)},
    {"xor", ATOM(old ^ data), ATOM(old ^ data)},
    {"inc", ATOM(static_cast<u32>(old) >= static_cast<u32>(data) ? 0 : static_cast<u32>(old) + 1),
     ATOM(old >= data ? 0 : old + 1)},
    {"dec",
     ATOM(static_cast<u32>(old) == 0 || static_cast<u32>(old) > static_cast<u32>(data)
              ? data
              : static_cast<u32>(old) - 1),
     ATOM(old == 0 || old > data ? data : old - 1)},
    {"add_f", ATOM(b32(f32(old) + f32(data))), nullptr},
    {"min_f", ATOM(b32(std::fmin(f32(old), f32(data)))), nullptr},
    {"max_f", ATOM(b32(std::fmax(f32(old), f32(data)))), nullptr},
};

// The atomic row for a mnemonic stem like "add_u32", "cmpswap_b64", "max_f32", "cmpstore_b32".
const AtomicOp* find_atomic(const std::string& stem, bool& wide) {
  wide = stem.size() > 3 && stem.compare(stem.size() - 2, 2, "64") == 0;
  std::string op = stem.substr(0, stem.rfind('_'));
  const char kind = stem[stem.rfind('_') + 1];  // u, i, b, f
  if (op == "cmpstore") op = "cmpswap";
  if (op == "storexchg") op = "swap";
  if (op == "min" || op == "max") op += std::string("_") + (kind == 'b' ? 'u' : kind);
  if (op == "add" && kind == 'f') op = "add_f";
  for (const AtomicOp& a : kAtomics)
    if (op == a.name) return &a;
  return nullptr;
}

}  // namespace

void register_memory(Registry& r) {
  r["s_load_b32"] = r["s_load_b64"] = r["s_load_b128"] = r["s_load_b256"] =
      r["s_load_b512"] = {exec_smem, nullptr};
  struct Ld {
    const char* suffix;
    uint8_t bytes;
    bool sign;
    uint8_t d16;
  };
  const Ld loads[] = {{"load_u8", 1, false, 0},       {"load_i8", 1, true, 0},
                      {"load_u16", 2, false, 0},      {"load_i16", 2, true, 0},
                      {"load_b32", 4, false, 0},      {"load_b64", 8, false, 0},
                      {"load_b96", 12, false, 0},     {"load_b128", 16, false, 0},
                      {"load_d16_u8", 1, false, 1},   {"load_d16_i8", 1, true, 1},
                      {"load_d16_b16", 2, false, 1},  {"load_d16_hi_u8", 1, false, 2},
                      {"load_d16_hi_i8", 1, true, 2}, {"load_d16_hi_b16", 2, false, 2}};
  const Ld stores[] = {{"store_b8", 1, false, 0},        {"store_b16", 2, false, 0},
                       {"store_b32", 4, false, 0},       {"store_b64", 8, false, 0},
                       {"store_b96", 12, false, 0},      {"store_b128", 16, false, 0},
                       {"store_d16_hi_b8", 1, false, 2}, {"store_d16_hi_b16", 2, false, 2}};
  for (const char* seg : {"global_", "flat_", "scratch_"}) {
    for (const Ld& l : loads)
      r[std::string(seg) + l.suffix] = {exec_vmem,
                                        keep({MKind::Load, l.bytes, l.sign, l.d16, nullptr, 0})};
    for (const Ld& s : stores)
      r[std::string(seg) + s.suffix] = {exec_vmem,
                                        keep({MKind::Store, s.bytes, false, s.d16, nullptr, 0})};
  }
  // Global/flat atomics: every name in the generated table whose stem we know.
  for (const char* seg : {"global_atomic_", "flat_atomic_"}) {
    for (const char* stem :
         {"swap_b32", "cmpswap_b32", "add_u32",     "sub_u32", "min_i32", "min_u32",
          "max_i32",  "max_u32",     "and_b32",     "or_b32",  "xor_b32", "inc_u32",
          "dec_u32",  "swap_b64",    "cmpswap_b64", "add_u64", "sub_u64", "min_i64",
          "min_u64",  "max_i64",     "max_u64",     "and_b64", "or_b64",  "xor_b64",
          "inc_u64",  "dec_u64",     "add_f32",     "min_f32", "max_f32"}) {
      bool wide;
      const AtomicOp* a = find_atomic(stem, wide);
      r[std::string(seg) + stem] = {
          exec_vmem, keep({MKind::Atomic, static_cast<uint8_t>(wide ? 8 : 4), false, 0,
                           wide ? a->f64bit : a->f32bit, false})};
    }
  }
  // DS
  const Ld ds_loads[] = {{"ds_load_u8", 1, false, 0},       {"ds_load_i8", 1, true, 0},
                         {"ds_load_u16", 2, false, 0},      {"ds_load_i16", 2, true, 0},
                         {"ds_load_b32", 4, false, 0},      {"ds_load_b64", 8, false, 0},
                         {"ds_load_b96", 12, false, 0},     {"ds_load_b128", 16, false, 0},
                         {"ds_load_u8_d16", 1, false, 1},   {"ds_load_i8_d16", 1, true, 1},
                         {"ds_load_u16_d16", 2, false, 1},  {"ds_load_u8_d16_hi", 1, false, 2},
                         {"ds_load_i8_d16_hi", 1, true, 2}, {"ds_load_u16_d16_hi", 2, false, 2}};
  const Ld ds_stores[] = {
      {"ds_store_b8", 1, false, 0},        {"ds_store_b16", 2, false, 0},
      {"ds_store_b32", 4, false, 0},       {"ds_store_b64", 8, false, 0},
      {"ds_store_b96", 12, false, 0},      {"ds_store_b128", 16, false, 0},
      {"ds_store_b8_d16_hi", 1, false, 2}, {"ds_store_b16_d16_hi", 2, false, 2}};
  for (const Ld& l : ds_loads)
    r[l.suffix] = {exec_ds, keep({MKind::Load, l.bytes, l.sign, l.d16, nullptr, 0})};
  for (const Ld& s : ds_stores)
    r[s.suffix] = {exec_ds, keep({MKind::Store, s.bytes, false, s.d16, nullptr, 0})};
  for (const char* stem :
       {"add_u32",      "sub_u32", "rsub_u32", "inc_u32", "dec_u32",      "min_i32",
        "max_i32",      "min_u32", "max_u32",  "and_b32", "or_b32",       "xor_b32",
        "cmpstore_b32", "min_f32", "max_f32",  "add_f32", "add_u64",      "sub_u64",
        "rsub_u64",     "inc_u64", "dec_u64",  "min_i64", "max_i64",      "min_u64",
        "max_u64",      "and_b64", "or_b64",   "xor_b64", "cmpstore_b64", "storexchg_b32",
        "storexchg_b64"}) {
    bool wide;
    const AtomicOp* a = find_atomic(stem, wide);
    AtomicFn fn = wide ? a->f64bit : a->f32bit;
    const uint8_t bytes = wide ? 8 : 4;
    std::string s(stem);
    std::string rtn = s.substr(0, s.rfind('_')) + "_rtn" + s.substr(s.rfind('_'));
    if (s.rfind("storexchg", 0) != 0)
      r["ds_" + s] = {exec_ds, keep({MKind::Atomic, bytes, false, 0, fn, false})};
    r["ds_" + rtn] = {exec_ds, keep({MKind::Atomic, bytes, false, 0, fn, true})};
  }
  r["ds_load_2addr_b32"] = {exec_ds_2addr<true, 4, false>, nullptr};
  r["ds_load_2addr_b64"] = {exec_ds_2addr<true, 8, false>, nullptr};
  r["ds_load_2addr_stride64_b32"] = {exec_ds_2addr<true, 4, true>, nullptr};
  r["ds_load_2addr_stride64_b64"] = {exec_ds_2addr<true, 8, true>, nullptr};
  r["ds_store_2addr_b32"] = {exec_ds_2addr<false, 4, false>, nullptr};
  r["ds_store_2addr_b64"] = {exec_ds_2addr<false, 8, false>, nullptr};
  r["ds_store_2addr_stride64_b32"] = {exec_ds_2addr<false, 4, true>, nullptr};
  r["ds_store_2addr_stride64_b64"] = {exec_ds_2addr<false, 8, true>, nullptr};
  r["ds_bpermute_b32"] = {exec_ds_permute<true>, nullptr};
  r["ds_permute_b32"] = {exec_ds_permute<false>, nullptr};
}

}  // namespace ugrad::mockgpu
