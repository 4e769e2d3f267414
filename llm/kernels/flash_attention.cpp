#include "llm/kernels/flash_attention.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/kernel_cache.h"
#include "schedule/schedule.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kLanes = 32, kT = kFlashSplit;
constexpr int64_t kChunk = 8;    // halves per 16-byte load
constexpr int64_t kUnroll = 32;  // splits the combine reads per step

UOp f32(double v) { return UOp::cnst(dtypes::float32, v); }
UOp index(int64_t v) { return UOp::cnst_int(dtypes::index, v); }
int64_t max_splits(int64_t capacity) { return (capacity + kT - 1) / kT; }

// The number of splits the rows of a call read: up to the last row's position.
UOp splits_used(const UOp& sp, int64_t rows) { return (sp + (rows - 1)).idiv(kT) + 1; }

UOp build_split(int64_t rows, int64_t heads, int64_t kv_heads, int64_t hd, int64_t capacity,
                const UOp& sp, const std::string& name) {
  const int64_t group = heads / kv_heads, splits = max_splits(capacity);
  // LDS rows of keys and values padded by one word: lane p reads row p, and the rows' words
  // fall in different banks.
  const int64_t stride = hd + 2;
  KernelBuilder kb;
  UOp acc = kb.buffer(dtypes::float32, rows * heads * splits * hd);
  UOp ml = kb.buffer(dtypes::float32, rows * heads * splits * 2);
  UOp q = kb.buffer(dtypes::float32, rows * heads * hd);
  UOp k = kb.buffer(dtypes::float16, kv_heads * capacity * hd);
  UOp v = kb.buffer(dtypes::float16, kv_heads * capacity * hd);
  UOp split = kb.global(splits_used(sp, rows)), kvh = kb.global(kv_heads);
  UOp row = rows > 1 ? kb.global(rows) : index(0);
  UOp lane = kb.local(kLanes), wave = kb.local(group);
  const UOp tid = wave * kLanes + lane, last = sp + row;  // the row's last visible position
  // The tile: positions [split * 32, split * 32 + 32) of the head's keys and values, each
  // position past the row's last read as the last (finite; weighted 0 below).
  const auto clamp = [&](const UOp& pos) { return pos.lt(last).where(pos, last); };
  const int64_t chunks = kT * hd / kChunk, threads = kLanes * group;
  UOp tile = kb.lds(dtypes::float16, 2 * kT * stride);
  std::vector<UOp> stores;
  for (int64_t it = 0; it * threads < chunks; ++it) {
    const UOp c = tid + it * threads;
    const UOp gate = chunks % threads ? c.lt(chunks) : UOp();
    const UOp tile_row = c.idiv(hd / kChunk), col = (c % (hd / kChunk)) * kChunk;
    const UOp src = (kvh * capacity + clamp(split * kT + tile_row)) * hd + col;
    for (int64_t side = 0; side < 2; ++side)
      for (int64_t i = 0; i < kChunk; ++i)
        stores.push_back(KernelBuilder::lds_store(tile, (side * kT + tile_row) * stride + col + i,
                                                  kb.load(side ? v : k, src + i), gate));
  }
  UOp kv = KernelBuilder::barrier(tile, stores);
  // The group's queries of the row in LDS too: the score loop then waits on no global load.
  UOp queries = kb.lds(dtypes::float32, group * hd);
  std::vector<UOp> q_stores;
  for (int64_t it = 0; it * threads < group * hd; ++it) {
    const UOp c = tid + it * threads;
    q_stores.push_back(KernelBuilder::lds_store(queries, c,
                                                kb.load(q, (row * heads + kvh * group) * hd + c),
                                                (group * hd) % threads ? c.lt(group * hd) : UOp()));
  }
  UOp qs = KernelBuilder::barrier(queries, q_stores);
  // Scores: wave g is query head kvh * group + g, lane p position split * 32 + p; log2 units.
  const UOp head = kvh * group + wave, pos = split * kT + lane, visible = pos.lt(last + 1);
  UOp d = kb.reduce_range(hd);
  UOp dot = KernelBuilder::reduce(
      kb.load(qs, wave * hd + d) * kb.load(kv, lane * stride + d).cast(dtypes::float32), Op::ADD,
      {d});
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd)) / std::log(2.0);
  const UOp neg_inf = f32(-std::numeric_limits<double>::infinity());
  const UOp score = visible.where(dot * f32(scale), neg_inf);
  // The wave's 32 scores meet in LDS; every lane reads them all (broadcast reads).
  UOp scores = kb.lds(dtypes::float32, group * kLanes);
  UOp sc = KernelBuilder::barrier(scores,
                                  {KernelBuilder::lds_store(scores, wave * kLanes + lane, score)});
  UOp r = kb.reduce_range(kLanes);
  const UOp m = KernelBuilder::reduce(kb.load(sc, wave * kLanes + r), Op::MAX, {r});
  UOp r2 = kb.reduce_range(kLanes);
  // A split wholly past the row's last has m = -inf: its weights are 0, not exp2(-inf + inf).
  const UOp e = (split * kT + r2)
                    .lt(last + 1)
                    .where((kb.load(sc, wave * kLanes + r2) - m).alu(Op::EXP2), f32(0.0));
  const UOp at = (row * heads + head) * splits + split;
  for (int64_t j = 0; j * kLanes < hd; ++j) {
    const UOp dim = lane + j * kLanes;
    const UOp value = kb.load(kv, (kT + r2) * stride + dim).cast(dtypes::float32);
    kb.store(acc, at * hd + dim, KernelBuilder::reduce(e * value, Op::ADD, {r2}));
  }
  const UOp first = lane.eq(index(0));
  kb.store(ml, at * 2, m, first);
  kb.store(ml, at * 2 + 1, KernelBuilder::reduce(e, Op::ADD, {r2}), first);
  return kb.build(name);
}

UOp build_combine(int64_t rows, int64_t heads, int64_t hd, int64_t capacity, const UOp& sp,
                  const std::string& name) {
  const int64_t splits = max_splits(capacity);
  KernelBuilder kb;
  UOp out = kb.buffer(dtypes::float32, rows * heads * hd);
  UOp acc = kb.buffer(dtypes::float32, rows * heads * splits * hd);
  UOp ml = kb.buffer(dtypes::float32, rows * heads * splits * 2);
  UOp head = kb.global(heads);
  UOp row = rows > 1 ? kb.global(rows) : index(0);
  UOp d = kb.local(hd);
  // The splits in steps of kUnroll, whose loads are issued together (one wait per step); a
  // split past the row's last is read as its last and weighted 0.
  const UOp used = (sp + row).idiv(kT) + 1,
            steps = (splits_used(sp, rows) + (kUnroll - 1)).idiv(kUnroll);
  const auto splits_of = [&](const UOp& step) {
    std::vector<std::pair<UOp, UOp>> out;  // (split, whether the row uses it)
    for (int64_t u = 0; u < kUnroll; ++u) {
      const UOp s = step * kUnroll + u;
      out.emplace_back(s.lt(used).where(s, used - 1), s.lt(used));
    }
    return out;
  };
  const UOp base = (row * heads + head) * splits;
  UOp s = kb.reduce_range(steps);
  UOp step_max;
  for (const auto& [split, ok] : splits_of(s)) {
    const UOp m = kb.load(ml, (base + split) * 2);
    step_max = step_max ? step_max.max(m) : m;
  }
  const UOp m = KernelBuilder::reduce(step_max, Op::MAX, {s});
  UOp s2 = kb.reduce_range(steps);
  UOp num, den;
  for (const auto& [split, ok] : splits_of(s2)) {
    const UOp at = base + split;
    const UOp w = ok.where((kb.load(ml, at * 2) - m).alu(Op::EXP2), f32(0.0));
    const UOp n = w * kb.load(acc, at * hd + d), l = w * kb.load(ml, at * 2 + 1);
    num = num ? num + n : n;
    den = den ? den + l : l;
  }
  num = KernelBuilder::reduce(num, Op::ADD, {s2});
  den = KernelBuilder::reduce(den, Op::ADD, {s2});
  kb.store(out, (row * heads + head) * hd + d, num.alu(Op::FDIV, den));
  return kb.build(name);
}

}  // namespace

bool flash_attention_supports(int64_t heads, int64_t kv_heads, int64_t head_dim) {
  // Whole waves of value dims (lane + 32 j) and a group of at most 8 waves.
  return kv_heads > 0 && heads % kv_heads == 0 && heads / kv_heads <= 8 && head_dim > 0 &&
         head_dim % kLanes == 0 && head_dim <= 512;
}

namespace {

UOp start_pos_variable(int64_t rows, int64_t capacity, int64_t max_pos) {
  if (rows < 1 || max_pos < 0 || max_pos + rows > capacity)
    fail("flash_attention: {} rows at positions up to {} in a cache of {}", rows, max_pos,
         capacity);
  return UOp::make(Op::PARAM, dtypes::index, {}, ParamArg{-1, "start_pos", 0, max_pos});
}

}  // namespace

UOp flash_attention_split_kernel(int64_t rows, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                 int64_t capacity, int64_t max_pos) {
  if (!flash_attention_supports(heads, kv_heads, head_dim))
    fail("flash_attention: no kernel for {} heads over {} KV heads of {}", heads, kv_heads,
         head_dim);
  const UOp sp = start_pos_variable(rows, capacity, max_pos);
  const std::string name = fmt::format("flash_attention_split_{}x{}x{}x{}_cap{}_max{}", rows, heads,
                                       kv_heads, head_dim, capacity, max_pos);
  return cached_kernel(
      name, [&] { return build_split(rows, heads, kv_heads, head_dim, capacity, sp, name); });
}

UOp flash_attention_combine_kernel(int64_t rows, int64_t heads, int64_t head_dim, int64_t capacity,
                                   int64_t max_pos) {
  const UOp sp = start_pos_variable(rows, capacity, max_pos);
  const std::string name = fmt::format("flash_attention_combine_{}x{}x{}_cap{}_max{}", rows, heads,
                                       head_dim, capacity, max_pos);
  return cached_kernel(name,
                       [&] { return build_combine(rows, heads, head_dim, capacity, sp, name); });
}

Tensor flash_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                       const UOp& start_pos) {
  const int64_t rows = q.size(0), heads = q.size(1), kv_heads = k_cache.size(0),
                capacity = k_cache.size(1), hd = k_cache.size(2);
  const std::string& device = q.device();
  const int64_t splits = max_splits(capacity);
  const UOp var = unbind_variable(start_pos).first;
  if (var.op() != Op::PARAM || var.arg_as<ParamArg>().name != "start_pos")
    fail("flash_attention: start_pos must be the bound variable 'start_pos'");
  const int64_t max_pos = var.arg_as<ParamArg>().hi;
  UOp split = flash_attention_split_kernel(rows, heads, kv_heads, hd, capacity, max_pos);
  // The caches and q as they are (realized buffers are passed without a copy).
  const int64_t partials = rows * heads * splits;
  std::vector<Tensor> partial =
      custom_kernel(split,
                    {Tensor::empty({partials * hd}, dtypes::float32, device),
                     Tensor::empty({partials * 2}, dtypes::float32, device), q, k_cache, v_cache},
                    {start_pos});
  UOp combine = flash_attention_combine_kernel(rows, heads, hd, capacity, max_pos);
  return custom_kernel(
      combine, {Tensor::empty({rows, heads * hd}, dtypes::float32, device), partial[0], partial[1]},
      {start_pos})[0];
}

}  // namespace ugrad::llm
