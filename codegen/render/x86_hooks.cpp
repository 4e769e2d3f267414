// x86-64 (the host CPU): AVX-512 VNNI dot products, byte shuffles and AVX-512 lane permutes.
#include <vector>

#include "base/error.h"
#include "codegen/lower/lane_permute.h"
#include "codegen/render/llvm_types.h"
#include "codegen/render/target_hooks.h"

namespace ugrad {
namespace {

class X86Hooks : public TargetHooks {
 public:
  // vpdpbusd (uint8 x int8 bytes, accumulating) on 4, 8 or 16 words; decomp.h turns other forms
  // into byte products.
  std::string dot4(RenderContext& r, const UOp& u, int64_t words) const override {
    if (!r.target().has_vnni ||
        u.arg_as<Dot4Arg>() != Dot4Arg{.a_signed = false, .b_signed = true} ||
        (words != 4 && words != 8 && words != 16))
      return TargetHooks::dot4(r, u, words);
    const std::string a = r.val(u.src(0), true), b = r.val(u.src(1), true);
    const std::string acc = u.src(2).is_const(0) ? "zeroinitializer" : r.val(u.src(2), true);
    const std::string wt = fmt::format("<{} x i32>", words);
    const std::string fn = fmt::format("llvm.x86.avx512.vpdpbusd.{}", 32 * words);
    r.declare(fmt::format("declare {} @{}({}, {}, {})", wt, fn, wt, wt, wt));
    std::string v = r.fresh();
    r.emit("{} = call {} @{}({} {}, {} {}, {} {})", v, wt, fn, wt, acc, wt, a, wt, b);
    return v;
  }

  // vpshufb on 4 (SSSE3), 8 (AVX2) or 16 words (AVX-512BW): the table in each 16-byte lane, the
  // words' bytes masked to their low 4 bits (vpshufb zeroes a byte whose top bit is set).
  std::string byte_lut(RenderContext& r, const UOp& u, int64_t words) const override {
    const char* fn = words == 4    ? "llvm.x86.ssse3.pshuf.b.128"
                     : words == 8  ? "llvm.x86.avx2.pshuf.b"
                     : words == 16 ? "llvm.x86.avx512.pshuf.b.512"
                                   : nullptr;
    if (!fn || words > r.target().byte_shuffle_words) return TargetHooks::byte_lut(r, u, words);
    const auto& table = u.arg_as<std::vector<int64_t>>();
    const std::string bt = fmt::format("<{} x i8>", 4 * words),
                      wt = fmt::format("<{} x i32>", words);
    auto bytes = [&](auto value) {
      std::string v;
      for (int64_t i = 0; i < 4 * words; ++i)
        v += fmt::format("{}i8 {}", i ? ", " : "", static_cast<int8_t>(value(i)));
      return "<" + v + ">";
    };
    r.declare(fmt::format("declare {} @{}({}, {})", bt, fn, bt, bt));
    const std::string w = r.val(u.src(0), true), b = r.fresh(), m = r.fresh(), s = r.fresh(),
                      out = r.fresh();
    r.emit("{} = bitcast {} {} to {}", b, wt, w, bt);
    r.emit("{} = and {} {}, {}", m, bt, b, bytes([](int64_t) { return 15; }));
    r.emit("{} = call {} @{}({} {}, {} {})", s, bt, fn, bt,
           bytes([&](int64_t i) { return table[i % 16]; }), bt, m);
    r.emit("{} = bitcast {} {} to {}", out, bt, s, wt);
    return out;
  }

  Rendered instruction(RenderContext& r, const UOp& u) const override {
    if (u.op() != Op::CUSTOM || u.arg_as<std::string>() != kLanePermute)
      return TargetHooks::instruction(r, u);
    return {lane_permute(r, u), true};
  }

 private:
  // lane_permute(table, index): vpermps on each 16 lanes, from the table's first 16.
  static std::string lane_permute(RenderContext& r, const UOp& u) {
    const UOp &table = u.src(0), &index = u.src(1);
    const int64_t lanes = r.lanes();
    if (lanes % 16 != 0) internal_error("render_llvm: lane_permute on {} lanes", lanes);
    const std::string t = r.val(table, true);
    std::string i = r.val(index, true);
    const std::string it = ltype(index.dtype().base());
    if (it != "i32") {
      std::string w = r.fresh();
      r.emit("{} = {} <{} x {}> {} to <{} x i32>", w, bits(index.dtype()) < 32 ? "zext" : "trunc",
             lanes, it, i, lanes);
      i = w;
    }
    auto part = [&](const std::string& v, const std::string& ty, int64_t from) {
      if (lanes == 16) return v;
      std::string mask, p = r.fresh();
      for (int64_t j = 0; j < 16; ++j) mask += fmt::format("{}i32 {}", j ? ", " : "", from + j);
      r.emit("{} = shufflevector <{} x {}> {}, <{} x {}> poison, <16 x i32> <{}>", p, lanes, ty, v,
             lanes, ty, mask);
      return p;
    };
    const std::string fn = "llvm.x86.avx512.permvar.sf.512";
    r.declare(fmt::format("declare <16 x float> @{}(<16 x float>, <16 x i32>)", fn));
    const std::string low = part(t, "float", 0);
    std::vector<std::string> parts;
    for (int64_t c = 0; c < lanes; c += 16) {
      std::string p = r.fresh();
      r.emit("{} = call <16 x float> @{}(<16 x float> {}, <16 x i32> {})", p, fn, low,
             part(i, "i32", c));
      parts.push_back(p);
    }
    for (int64_t n = 16; parts.size() > 1; n *= 2) {  // concatenate pairwise
      std::vector<std::string> next;
      std::string mask;
      for (int64_t j = 0; j < 2 * n; ++j) mask += fmt::format("{}i32 {}", j ? ", " : "", j);
      for (size_t j = 0; j < parts.size(); j += 2) {
        std::string p = r.fresh();
        r.emit("{} = shufflevector <{} x float> {}, <{} x float> {}, <{} x i32> <{}>", p, n,
               parts[j], n, parts[j + 1], 2 * n, mask);
        next.push_back(p);
      }
      parts = std::move(next);
    }
    return parts[0];
  }
};

}  // namespace

const TargetHooks& x86_hooks() {
  static const X86Hooks hooks;
  return hooks;
}

}  // namespace ugrad
