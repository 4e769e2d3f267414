// The emulator's core state: a decoded program (instructions with pre-resolved handlers), waves
// (wave32 register files, EXEC/VCC/SCC), workgroups (LDS, barrier), the dispatch (memory map,
// kernarg, float mode) and the operand helpers every semantics file uses.
#pragma once
#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "test/mockgpu/counters.h"
#include "test/mockgpu/decode.h"

namespace ugrad::mockgpu {

constexpr int kLanes = 32;
constexpr uint16_t kVcc = 106, kNull = 124, kM0 = 125, kExec = 126, kScc = 253, kLit = 255;

struct Wave;
struct Inst;
using Handler = void (*)(Wave&, const Inst&);

/// One decoded instruction, ready to execute: fields, mnemonic, handler and its data.
struct Inst : Fields {
  uint32_t pc = 0;  // byte offset in .text
  std::string_view name;
  Handler fn = nullptr;
  const void* spec = nullptr;  // handler-specific data (e.g. a VALU op's operand types)
  uint16_t mask_in = 0;        // SGPR code of a lane-mask source (carry-in, cndmask)
  uint16_t mask_out = 0;       // SGPR code of a lane-mask destination (compare, carry-out)
  uint32_t target = 0;         // branch target instruction index
  InstClass cls = InstClass::SALU;
};

/// A code object's .text, decoded once; instruction index by byte offset.
struct Program {
  std::vector<Inst> insts;
  std::vector<int32_t> index_of_word;  // byte offset / 4 -> instruction index, -1 mid-instruction
  uint64_t text_address = 0;
  int32_t index_at(uint64_t byte_offset) const {
    size_t w = byte_offset / 4;
    return byte_offset % 4 == 0 && w < index_of_word.size() ? index_of_word[w] : -1;
  }
};

/// Decodes `text` (loaded at `text_address`) and resolves every instruction's handler; opcodes
/// without semantics get a handler that stops the run naming them.
Program build_program(const uint8_t* text, size_t size, uint64_t text_address);

/// The class a decoded instruction is counted in (mnemonic prefixes first, then encoding).
InstClass inst_class(const Fields& f, std::string_view name);

/// Mnemonics in `program` that the emulator has no semantics for (sorted, unique).
std::vector<std::string> unimplemented_mnemonics(const Program& program);

/// Device memory: every live allocation, for bounds checks of global/flat/SMEM accesses.
class MemoryMap {
 public:
  void add(uint64_t base, uint64_t size) { ranges_[base] = size; }
  void remove(uint64_t base) { ranges_.erase(base); }
  bool contains(uint64_t base) const { return ranges_.count(base) != 0; }
  /// True if [addr, addr+size) lies inside one live allocation.
  bool valid(uint64_t addr, uint64_t size) const {
    auto it = ranges_.upper_bound(addr);
    if (it == ranges_.begin()) return false;
    --it;
    return addr >= it->first && addr + size <= it->first + it->second && addr + size >= addr;
  }
  /// Where addr lies against the nearest allocation below it ("N bytes past the end of the
  /// allocation at 0x.. of S bytes"), for error messages.
  std::string describe(uint64_t addr) const {
    auto it = ranges_.upper_bound(addr);
    if (it == ranges_.begin()) return "below every allocation";
    --it;
    return fmt::format("{} bytes past the end of the allocation at 0x{:x} of {} bytes",
                       addr - (it->first + it->second), it->first, it->second);
  }
  /// The allocation holding addr, as [base, end) (0,0 if none).
  std::pair<uint64_t, uint64_t> range_of(uint64_t addr) const {
    auto it = ranges_.upper_bound(addr);
    if (it == ranges_.begin()) return {0, 0};
    --it;
    if (addr >= it->first + it->second) return {0, 0};
    return {it->first, it->first + it->second};
  }

 private:
  std::map<uint64_t, uint64_t> ranges_;
};

/// The 128-byte lines a launch's global accesses touch: per line, how many instruction requests
/// touched it and which of its bytes any access read or wrote; in pages of 4096 lines (512 KiB),
/// the last page used kept at hand (a wave's accesses mostly stay in one page).
class LineSet {
 public:
  /// Access kinds a line saw (bits).
  static constexpr uint8_t kRead = 1, kWritten = 2;
  /// What a request for a line was the first of: the launch's requests, the group's reads.
  struct FirstTouch {
    bool in_launch = false, read_in_group = false;
  };
  /// A request for `line` (once per instruction that touches it) by workgroup `group` (a serial
  /// number, never 0); `read`: by a load or an atomic.
  FirstTouch request(uint64_t line, uint32_t group, bool read) {
    Line& l = at(line);
    FirstTouch first;
    first.in_launch = l.requests++ == 0;
    count_ += first.in_launch;
    if (read) {
      first.read_in_group = l.last_group != group;
      l.last_group = group;
    }
    return first;
  }
  /// Bytes [first, first + n) of `line` accessed (within the line), read and/or written.
  void use(uint64_t line, unsigned first, unsigned n, uint8_t access) {
    Line& l = at(line);
    l.access |= access;
    for (unsigned b = first; b < first + n; ++b) l.used[b / 64] |= uint64_t{1} << (b % 64);
  }
  /// Calls f(line, access bits) for every line the launch touched.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [index, page] : pages_)
      for (size_t i = 0; i < page->size(); ++i)
        if ((*page)[i].requests) f(index << kPageBits | i, (*page)[i].access);
  }
  uint64_t size() const { return count_; }
  /// Sum over requests of the bytes of their line that the launch uses.
  uint64_t used_request_bytes() const { return used(true); }
  /// Distinct bytes the launch accesses.
  uint64_t used_bytes() const { return used(false); }

 private:
  struct Line {
    uint64_t used[2] = {};
    uint64_t requests = 0;
    uint32_t last_group = 0;  // the last workgroup that read the line
    uint8_t access = 0;
  };
  static constexpr int kPageBits = 12;
  using Page = std::array<Line, 1 << kPageBits>;
  uint64_t used(bool per_request) const;
  Line& at(uint64_t line) {
    const uint64_t page = line >> kPageBits;
    if (!last_ || page != last_page_) {
      std::unique_ptr<Page>& p = pages_[page];
      if (!p) p = std::make_unique<Page>();
      last_ = p.get();
      last_page_ = page;
    }
    return (*last_)[line & ((1 << kPageBits) - 1)];
  }
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  Page* last_ = nullptr;
  uint64_t last_page_ = 0;
  uint64_t count_ = 0;
};

inline uint64_t LineSet::used(bool per_request) const {
  uint64_t n = 0;
  for (const auto& [index, page] : pages_)
    for (const Line& l : *page)
      n += (per_request ? l.requests : 1) *
           static_cast<uint64_t>(std::popcount(l.used[0]) + std::popcount(l.used[1]));
  return n;
}

/// Everything one kernel launch shares.
struct Dispatch {
  std::string kernel;
  const Program* program = nullptr;
  const MemoryMap* memory = nullptr;
  uint32_t lds_size = 0;
  uint32_t scratch_per_lane = 0;
  bool ftz32 = false;  // FLOAT_MODE flushes f32 denormals
  LaunchCounters counters;
  LineSet lines;              // 128-byte lines touched by global/flat accesses
  uint32_t group_serial = 0;  // of the workgroup running (1, 2, ...)
};

struct Workgroup {
  std::vector<uint8_t> lds;
  std::vector<std::unique_ptr<Wave>> waves;
};

struct Wave {
  uint32_t v[256][kLanes];  // VGPRs, register-major
  uint32_t s[128];          // SGPRs by operand code (s0-s105, VCC 106/107, M0 125, EXEC 126/127)
  bool scc = false;
  uint32_t ip = 0;    // index of the current instruction
  uint32_t next = 0;  // index of the next one (branches overwrite)
  bool done = false, at_barrier = false;
  Dispatch* dispatch = nullptr;
  Workgroup* group = nullptr;
  std::vector<uint8_t> scratch;                    // per-lane private memory, lane-major
  std::pair<uint64_t, uint64_t> last_range{0, 0};  // last global allocation hit (fast path)
  // For the counters: vector loads not yet waited for, those of them issued since the last
  // memory round trip, and the round trips (salu.cpp, wait_for_vm).
  uint32_t pending_vm = 0, fresh_vm = 0;
  bool fresh_far = false;  // a load since the last round trip first-touched a line
  uint64_t round_trips = 0, far_round_trips = 0, instructions = 0;

  uint32_t exec() const { return s[kExec]; }

  /// Throws Error naming the kernel, pc and instruction.
  [[noreturn]] void fail(const Inst& in, std::string_view what) const;
  /// Checks [addr, addr+size) is inside a live allocation, else fails naming lane and address.
  void check_global(const Inst& in, uint64_t addr, uint64_t size, int lane);
};

// ---- operand helpers ----

/// f32 bit patterns of inline constants 240..248.
inline constexpr uint32_t kInlineF32[9] = {0x3f000000, 0xbf000000, 0x3f800000,
                                           0xbf800000, 0x40000000, 0xc0000000,
                                           0x40800000, 0xc0800000, 0x3e22f983};
inline constexpr uint16_t kInlineF16[9] = {0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000,
                                           0xc000, 0x4400, 0xc400, 0x3118};
inline constexpr uint64_t kInlineF64[9] = {
    0x3fe0000000000000, 0xbfe0000000000000, 0x3ff0000000000000,
    0xbff0000000000000, 0x4000000000000000, 0xc000000000000000,
    0x4010000000000000, 0xc010000000000000, 0x3fc45f306dc9c882};

/// Operand kinds for inline-constant interpretation.
enum class Ty : uint8_t { B32, F32, F16, B16, B64, F64 };

/// A scalar (non-VGPR) operand's value: SGPRs, constants, literal, SCC. 64-bit types read a
/// register pair; f64 literals supply the high dword.
inline uint64_t scalar_operand(const Wave& w, const Inst& in, uint16_t code, Ty ty) {
  const bool wide = ty == Ty::B64 || ty == Ty::F64;
  if (code < 128) {
    if (code == kNull) return 0;
    uint64_t lo = w.s[code];
    return wide ? lo | uint64_t{w.s[code + 1]} << 32 : lo;
  }
  if (code <= 192) return code - 128;
  if (code <= 208) {
    int64_t v = 192 - static_cast<int64_t>(code);
    return wide                             ? static_cast<uint64_t>(v)
           : ty == Ty::F16 || ty == Ty::B16 ? static_cast<uint16_t>(v)
                                            : static_cast<uint32_t>(v);
  }
  if (code >= 240 && code <= 248) {
    int i = code - 240;
    if (ty == Ty::F16) return kInlineF16[i];
    if (ty == Ty::F64) return kInlineF64[i];
    return kInlineF32[i];
  }
  if (code == kScc) return w.scc;
  if (code == kLit) return ty == Ty::F64 ? uint64_t{in.lit} << 32 : in.lit;
  w.fail(in, "unsupported operand code " + std::to_string(code));
}

/// Writes a scalar destination (NULL is discarded).
inline void write_sgpr(Wave& w, uint16_t code, uint32_t value) {
  if (code != kNull && code < 128) w.s[code] = value;
}
inline void write_sgpr64(Wave& w, uint16_t code, uint64_t value) {
  write_sgpr(w, code, static_cast<uint32_t>(value));
  write_sgpr(w, code + 1, static_cast<uint32_t>(value >> 32));
}

/// Reads a 32-bit source operand for all lanes into out[32].
inline void read_lanes(const Wave& w, const Inst& in, uint16_t code, Ty ty, uint32_t* out) {
  if (code >= 256) {
    std::memcpy(out, w.v[code - 256], sizeof(uint32_t) * kLanes);
  } else {
    uint32_t v = static_cast<uint32_t>(scalar_operand(w, in, code, ty));
    for (int l = 0; l < kLanes; ++l) out[l] = v;
  }
}

/// Reads a 64-bit source operand (VGPR pair or scalar) for all lanes.
inline void read_lanes64(const Wave& w, const Inst& in, uint16_t code, Ty ty, uint64_t* out) {
  if (code >= 256) {
    const uint32_t* lo = w.v[code - 256];
    const uint32_t* hi = w.v[(code - 256 + 1) & 255];
    for (int l = 0; l < kLanes; ++l) out[l] = lo[l] | uint64_t{hi[l]} << 32;
  } else {
    uint64_t v = scalar_operand(w, in, code, ty);
    for (int l = 0; l < kLanes; ++l) out[l] = v;
  }
}

inline float as_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline double as_f64(uint64_t b) {
  double f;
  std::memcpy(&f, &b, 8);
  return f;
}
inline uint64_t f64_bits(double f) {
  uint64_t b;
  std::memcpy(&b, &f, 8);
  return b;
}

// ---- handler registry: canonical mnemonic -> handler + data ----

struct OpEntry {
  Handler fn = nullptr;
  const void* spec = nullptr;
};

/// Canonical name: "_e32"/"_e64" suffix dropped, "v_dual_" -> "v_".
std::string canonical_mnemonic(std::string_view name);

/// The registry all semantics files fill (register_* below), built once.
const std::map<std::string, OpEntry, std::less<>>& op_registry();

using Registry = std::map<std::string, OpEntry, std::less<>>;
void register_salu(Registry& r);
void register_valu(Registry& r);
void register_valu_f16(Registry& r);
void register_vop3p(Registry& r);
void register_memory(Registry& r);

/// Runs VOPD (dual issue): both halves read before either writes.
void exec_vopd(Wave& w, const Inst& in);
/// True if both halves of a VOPD instruction have semantics.
bool vopd_supported(unsigned opx, unsigned opy);

}  // namespace ugrad::mockgpu
