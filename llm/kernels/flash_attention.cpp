#include "llm/kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "codegen/opt/tensor_cores.h"
#include "llm/kernels/chunk.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kT = kFlashSplit;
constexpr int64_t kChunk = 8;         // halves per 16-byte load
constexpr int64_t kCombineParts = 8;  // waves splitting the splits in the combine
constexpr int64_t kUnroll = 16;       // splits the combine reads per step
constexpr int64_t kMaxWmmaWaves = 4;  // query tiles per workgroup in the WMMA form

int64_t max_splits(int64_t capacity) { return (capacity + kT - 1) / kT; }

// The number of splits the rows of a call read: up to the last row's position.
UOp splits_used(const UOp& sp, int64_t rows) { return (sp + (rows - 1)).idiv(kT) + 1; }

// LDS rows of keys and values padded by one word: lane p reads row p, and the rows' words fall in
// different banks.
int64_t tile_stride(int64_t hd) { return hd + 2; }

// The tile in LDS after a barrier, [row][dim]: positions [split * 32, split * 32 + 32) of KV head
// kvh's keys (rows 0..31) and values (rows 32..63), read by `threads` work-items `tid` in 16-byte
// pieces (coalesced); a position past `last` is read as `last` (finite; the callers weight it 0).
View kv_tile(KernelBuilder& kb, const View& k, const View& v, const UOp& kvh, const UOp& split,
             const UOp& last, const UOp& tid, int64_t threads, int64_t hd) {
  View tile = kb.lds(dtypes::float16, {2 * kT, tile_stride(hd)});
  std::vector<UOp> stores;
  for_each_item(tid, threads, kT * hd / kChunk, [&](const UOp& c, const UOp& gate) {
    const UOp row = c.idiv(hd / kChunk), col = (c % (hd / kChunk)) * kChunk;
    const UOp pos = split * kT + row, at = pos.lt(last).where(pos, last);
    for (int64_t side = 0; side < 2; ++side)
      for (int64_t i = 0; i < kChunk; ++i)
        stores.push_back(
            lds_store(tile.at(side * kT + row, col + i), (side ? v : k)(kvh, at, col + i), gate));
  });
  return barrier(tile, stores);
}

// log2(e) / sqrt(hd): scores in log2 units, so the softmax is exp2.
UOp score_scale(int64_t hd) {
  return f32(1.0 / std::sqrt(static_cast<double>(hd)) / std::log(2.0));
}
const UOp kNegInf = f32(-std::numeric_limits<double>::infinity());

// The split kernels' parameters: partial sums [row][head][split][dim], max and sum per split
// [row][head][split][2]; q [row][head][dim]; the caches [KV head][position][dim]; and their first
// two launch dimensions (the splits the call reads, the KV heads).
struct SplitIo {
  View acc, ml, q, k, v;
  UOp split, kvh;
};
SplitIo split_io(KernelBuilder& kb, int64_t rows, int64_t heads, int64_t kv_heads, int64_t hd,
                 int64_t capacity, const UOp& sp, DType q_dtype) {
  const int64_t splits = max_splits(capacity);
  SplitIo io;
  io.acc = kb.buffer(dtypes::float32, {rows, heads, splits, hd});
  io.ml = kb.buffer(dtypes::float32, {rows, heads, splits, 2});
  io.q = kb.buffer(q_dtype, {rows, heads, hd});
  io.k = kb.buffer(dtypes::float16, {kv_heads, capacity, hd});
  io.v = kb.buffer(dtypes::float16, {kv_heads, capacity, hd});
  io.split = kb.global(splits_used(sp, rows));
  io.kvh = kb.global(kv_heads);
  return io;
}

// Decode (and chunks on shapes the WMMA form does not take): one workgroup per (split, KV head,
// row), one wave per query head of the group, one lane per position.
UOp build_split(int64_t rows, int64_t heads, int64_t kv_heads, int64_t hd, int64_t capacity,
                const UOp& sp, const std::string& name) {
  const int64_t group = heads / kv_heads;
  KernelBuilder kb;
  const auto [acc, ml, q, k, v, split, kvh] =
      split_io(kb, rows, heads, kv_heads, hd, capacity, sp, dtypes::float32);
  UOp row = rows > 1 ? kb.global(rows) : idx(0);
  UOp lane = kb.local(kWave), wave = kb.local(group);
  const UOp tid = wave * kWave + lane, last = sp + row;  // the row's last visible position
  const int64_t threads = kWave * group;
  View kv = kv_tile(kb, k, v, kvh, split, last, tid, threads, hd);
  // The group's queries of the row in LDS too: the score loop then waits on no global load.
  View qs =
      copy_to_lds(kb, dtypes::float32, group * hd, tid, threads, [&](const UOp& c, const UOp&) {
        return q(row, kvh * group, c);
      }).reshape({group, hd});
  // Scores: wave g is query head kvh * group + g, lane p position split * 32 + p; log2 units.
  const UOp head = kvh * group + wave, pos = split * kT + lane, visible = pos.lt(last + 1);
  UOp d = kb.reduce_range(hd);
  const UOp dot = sum_over(qs(wave, d) * kv(lane, d).cast(dtypes::float32), {d});
  const UOp score = visible.where(dot * score_scale(hd), kNegInf);
  // The wave's 32 scores meet in LDS; every lane reads them all (broadcast reads).
  View scores = kb.lds(dtypes::float32, {group, kWave});
  View sc = barrier(scores, {lds_store(scores.at(wave, lane), score)});
  UOp r = kb.reduce_range(kWave);
  const UOp m = max_over(sc(wave, r), {r});
  UOp r2 = kb.reduce_range(kWave);
  // A split wholly past the row's last has m = -inf: its weights are 0, not exp2(-inf + inf).
  const UOp e = (split * kT + r2).lt(last + 1).where((sc(wave, r2) - m).alu(Op::EXP2), f32(0.0));
  for (int64_t j = 0; j * kWave < hd; ++j) {
    const UOp dim = lane + j * kWave;
    kb.store(acc.at(row, head, split, dim),
             sum_over(e * kv(kT + r2, dim).cast(dtypes::float32), {r2}));
  }
  const UOp first = lane.eq(idx(0));
  kb.store(ml.at(row, head, split, 0), m, first);
  kb.store(ml.at(row, head, split, 1), sum_over(e, {r2}), first);
  return kb.build(name);
}

// The WMMA form's workgroup: query tiles (16 of the rows x group query rows) per workgroup.
struct WmmaTiles {
  int64_t tiles, blocks, waves;  // query tiles, workgroups per (split, KV head), waves each
};
WmmaTiles wmma_tiles(int64_t rows, int64_t group) {
  const int64_t tiles = (rows * group + kWmmaTile - 1) / kWmmaTile;
  const int64_t blocks = (tiles + kMaxWmmaWaves - 1) / kMaxWmmaWaves;
  return {tiles, blocks, (tiles + blocks - 1) / blocks};
}
// LDS bytes of the WMMA form: the tile and each wave's scores (16 rows of 32, padded by a word).
int64_t wmma_lds_bytes(int64_t hd, int64_t waves) {
  return 2 * kT * tile_stride(hd) * 2 + waves * kWmmaTile * (kT + 1) * 4;
}

// A chunk of rows: one workgroup per (split, KV head, block of query tiles), the query rows
// m = row * group + g of the KV head in tiles of 16, one wave each. Per wave: S = Q K^T on WMMA
// tiles (q in f16, two 16-position tiles, head_dim / 16 steps), the scores scaled and masked
// (row m sees positions <= start_pos + m / group) meet in LDS, each lane takes its row's 32:
// max, exp2, sum, and P as f16 A fragments; then P V on WMMA tiles, one per 16 value dims.
UOp build_split_wmma(int64_t rows, int64_t heads, int64_t kv_heads, int64_t hd, int64_t capacity,
                     const UOp& sp, const std::string& name) {
  const int64_t group = heads / kv_heads, qrows = rows * group, steps = hd / kWmmaTile;
  const auto [tiles, blocks, waves] = wmma_tiles(rows, group);
  KernelBuilder kb;
  const auto [acc, ml, q, k, v, split, kvh] =
      split_io(kb, rows, heads, kv_heads, hd, capacity, sp, dtypes::float16);
  UOp block = blocks > 1 ? kb.global(blocks) : idx(0);
  const WmmaLane lane{kb.local(kWave)};
  UOp wave = kb.local(waves);
  View kv =
      kv_tile(kb, k, v, kvh, split, sp + (rows - 1), wave * kWave + lane.lane, kWave * waves, hd);
  const UOp qt = block * waves + wave, col = lane.col();
  // Query row m of the KV head is row m / group, head kvh * group + m % group (a row past the
  // last reads the last; its results are not stored).
  const auto q_of = [&](const UOp& m, const UOp& d) {
    const UOp mc = m.lt(qrows).where(m, idx(qrows - 1));
    return q(mc.idiv(group), kvh * group + mc % group, d);
  };
  // S: tile t holds positions 16 t + col; a reduce over the head dim's 16-wide steps (LLVM
  // unrolls it: q in half precision keeps all the steps' loads inside the register file).
  UOp kk = kb.reduce_range(steps);
  const UOp a =
      WmmaLane::fragment([&](int64_t j) { return q_of(qt * kWmmaTile + col, kk * kWmmaTile + j); });
  UOp d[2];
  for (int64_t t = 0; t < 2; ++t)
    d[t] = wmma(a, WmmaLane::fragment([&](int64_t j) {
                  return kv(col + t * kWmmaTile, kk * kWmmaTile + j);
                }),
                WmmaLane::zero());
  View scores = kb.lds(dtypes::float32, {waves, kWmmaTile, kT + 1});
  std::vector<UOp> s_stores;
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < WmmaLane::kAcc; ++i) {
      const UOp r = lane.row(i), m = qt * kWmmaTile + r, pos = split * kT + t * kWmmaTile + col;
      const UOp score = sum_over(gep(d[t], i), {kk}) * score_scale(hd);
      s_stores.push_back(lds_store(scores.at(wave, r, t * kWmmaTile + col),
                                   pos.lt(sp + m.idiv(group) + 1).where(score, kNegInf)));
    }
  View sc = barrier(scores, s_stores);
  // This lane's row (col) of the tile: max, weights (0 past the row's last: a split wholly past
  // it has m = -inf, and exp2(-inf + inf) would be NaN), their sum, P as two A fragments.
  const UOp m_row = qt * kWmmaTile + col, last = sp + m_row.idiv(group);
  const std::vector<UOp> row_scores = generate(kT, [&](int64_t j) { return sc(wave, col, j); });
  const UOp mx = maximum(row_scores);
  const std::vector<UOp> p = generate(kT, [&](int64_t j) {
    return (split * kT + j).lt(last + 1).where((row_scores[j] - mx).alu(Op::EXP2), f32(0.0));
  });
  const UOp pa[2] = {WmmaLane::fragment([&](int64_t j) { return p[j]; }),
                     WmmaLane::fragment([&](int64_t j) { return p[kWmmaTile + j]; })};
  const auto at = [&](const View& out, const UOp& m, const Ix& d) {  // query row m's partial
    return out.at(m.idiv(group), kvh * group + m % group, split, d);
  };
  const UOp own = m_row.lt(qrows), first_half = lane.half().eq(idx(0));
  kb.store(at(ml, m_row, 0), mx, own & first_half);
  kb.store(at(ml, m_row, 1), sum(p), own & first_half);
  const bool ragged = qrows % kWmmaTile || blocks * waves > tiles;
  for (int64_t n0 = 0; n0 < steps; ++n0) {  // the value dims' 16-wide tiles
    UOp o = WmmaLane::zero();
    for (int64_t t = 0; t < 2; ++t)
      o = wmma(pa[t], WmmaLane::fragment([&](int64_t j) {
                 return kv(kT + t * kWmmaTile + j, n0 * kWmmaTile + col);
               }),
               o);
    for (int64_t i = 0; i < WmmaLane::kAcc; ++i) {
      const UOp m = qt * kWmmaTile + lane.row(i);
      kb.store(at(acc, m, n0 * kWmmaTile + col), gep(o, i), ragged ? m.lt(qrows) : UOp());
    }
  }
  return kb.build(name);
}

UOp build_combine(int64_t rows, int64_t heads, int64_t hd, int64_t capacity, const UOp& sp,
                  const std::string& name) {
  // Decode: few workgroups (one per head and 32 dims), each splitting a long context's splits
  // over its waves. A chunk of rows has workgroups enough, and its splits are few.
  const int64_t splits = max_splits(capacity), parts = rows == 1 ? kCombineParts : 1;
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {rows, heads, hd});
  View acc = kb.buffer(dtypes::float32, {rows, heads, splits, hd});
  View ml = kb.buffer(dtypes::float32, {rows, heads, splits, 2});
  UOp head = kb.global(heads);
  UOp row = rows > 1 ? kb.global(rows) : idx(0);
  // A workgroup per 32 value dims, a wave per part: the small launch spreads over the CUs.
  UOp dims = kb.global(hd / kWave), lane = kb.local(kWave), part = kb.local(parts);
  const UOp d = dims * kWave + lane;
  // Part p takes splits p, p + parts, ... in steps of kUnroll, whose loads are issued together
  // (one wait per step); a split past the row's last is read as its last and weighted 0.
  const UOp used = (sp + row).idiv(kT) + 1,
            steps = (splits_used(sp, rows) + (kUnroll * parts - 1)).idiv(kUnroll * parts);
  const auto splits_of = [&](const UOp& step) {
    std::vector<std::pair<UOp, UOp>> out;  // (split, whether the row uses it)
    for (int64_t u = 0; u < kUnroll; ++u) {
      const UOp s = (step * kUnroll + u) * parts + part;
      out.emplace_back(s.lt(used).where(s, used - 1), s.lt(used));
    }
    return out;
  };
  const View acc_r = acc[row][head], ml_r = ml[row][head];
  UOp s = kb.reduce_range(steps);
  std::vector<UOp> maxes;
  for (const auto& [split, ok] : splits_of(s)) maxes.push_back(ml_r(split, 0));
  // Finite: every part reads at least one split the row uses (a clamped one).
  const UOp m = max_over(maximum(maxes), {s});
  UOp s2 = kb.reduce_range(steps);
  std::vector<UOp> nums, dens;
  for (const auto& [split, ok] : splits_of(s2)) {
    const UOp w = ok.where((ml_r(split, 0) - m).alu(Op::EXP2), f32(0.0));
    nums.push_back(w * acc_r(split, d));
    dens.push_back(w * ml_r(split, 1));
  }
  const UOp num = sum_over(sum(nums), {s2}), den = sum_over(sum(dens), {s2});
  // The parts meet in LDS, [part][num for each lane | max | sum]; part 0 rescales and adds them.
  View lds = kb.lds(dtypes::float32, {parts, kWave + 2});
  const UOp first_lane = lane.eq(idx(0));
  View all = barrier(
      lds, {lds_store(lds.at(part, lane), num), lds_store(lds.at(part, kWave), m, first_lane),
            lds_store(lds.at(part, kWave + 1), den, first_lane)});
  const UOp top = maximum(generate(parts, [&](int64_t p) { return all(p, kWave); }));
  std::vector<UOp> totals, sums;
  for (int64_t p = 0; p < parts; ++p) {
    const UOp w = (all(p, kWave) - top).alu(Op::EXP2);
    totals.push_back(w * all(p, lane));
    sums.push_back(w * all(p, kWave + 1));
  }
  kb.store(out.at(row, head, d), sum(totals).alu(Op::FDIV, sum(sums)), part.eq(idx(0)));
  return kb.build(name);
}

}  // namespace

std::optional<KernelNeeds> flash_attention_needs(int64_t heads, int64_t kv_heads,
                                                 int64_t head_dim) {
  // Whole waves of value dims (lane + 32 j), a group of at most 8 waves; the per-row form's tile,
  // queries and scores in LDS.
  if (kv_heads < 1 || heads % kv_heads != 0 || heads / kv_heads > 8 || head_dim < 1 ||
      head_dim % kWave != 0)
    return std::nullopt;
  const int64_t group = heads / kv_heads;
  return KernelNeeds{.lds_bytes =
                         2 * kT * tile_stride(head_dim) * 2 + group * (head_dim + kWave) * 4};
}

namespace {

// Chunks of rows take the WMMA form where the device has WMMA and its LDS fits.
bool wmma_form(int64_t rows, int64_t group, int64_t hd, const DeviceFeatures& f) {
  return rows > 1 && f.wmma && wmma_lds_bytes(hd, wmma_tiles(rows, group).waves) <= f.lds_bytes;
}

}  // namespace

namespace {

UOp start_pos_variable(int64_t rows, int64_t capacity, int64_t max_pos) {
  if (rows < 1 || max_pos < 0 || max_pos + rows > capacity)
    fail("flash_attention: {} rows at positions up to {} in a cache of {}", rows, max_pos,
         capacity);
  return UOp::make(Op::PARAM, dtypes::index, {}, ParamArg{-1, "start_pos", 0, max_pos});
}

}  // namespace

UOp flash_attention_split_kernel(int64_t rows, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                 int64_t capacity, int64_t max_pos, const DeviceFeatures& f) {
  if (!flash_attention_needs(heads, kv_heads, head_dim))
    fail("flash_attention: no kernel for {} heads over {} KV heads of {}", heads, kv_heads,
         head_dim);
  const UOp sp = start_pos_variable(rows, capacity, max_pos);
  const bool wmma = wmma_form(rows, heads / kv_heads, head_dim, f);
  const std::string name =
      fmt::format("flash_attention_split{}_{}x{}x{}x{}_cap{}_max{}", wmma ? "_wmma" : "", rows,
                  heads, kv_heads, head_dim, capacity, max_pos);
  return cached_kernel(name, [&] {
    return (wmma ? build_split_wmma : build_split)(rows, heads, kv_heads, head_dim, capacity, sp,
                                                   name);
  });
}

UOp flash_attention_combine_kernel(int64_t rows, int64_t heads, int64_t head_dim, int64_t capacity,
                                   int64_t max_pos) {
  const UOp sp = start_pos_variable(rows, capacity, max_pos);
  const std::string name = fmt::format("flash_attention_combine_{}x{}x{}_cap{}_max{}", rows, heads,
                                       head_dim, capacity, max_pos);
  return cached_kernel(name,
                       [&] { return build_combine(rows, heads, head_dim, capacity, sp, name); });
}

bool flash_attention_half_query(int64_t rows, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                const DeviceFeatures& f) {
  return flash_attention_needs(heads, kv_heads, head_dim) &&
         wmma_form(rows, heads / kv_heads, head_dim, f);
}

Tensor flash_attention(const Tensor& q_in, const Tensor& k_cache, const Tensor& v_cache,
                       const UOp& start_pos) {
  const int64_t rows = q_in.size(0), heads = q_in.size(1), kv_heads = k_cache.size(0),
                capacity = k_cache.size(1), hd = k_cache.size(2);
  const DeviceFeatures f = device_features(q_in.device());
  const Tensor q = q_in.cast(
      flash_attention_half_query(rows, heads, kv_heads, hd, f) ? dtypes::float16 : dtypes::float32);
  const std::string& device = q.device();
  const int64_t splits = max_splits(capacity);
  const int64_t max_pos = start_pos_variable(start_pos, "flash_attention").arg_as<ParamArg>().hi;
  UOp split = flash_attention_split_kernel(rows, heads, kv_heads, hd, capacity, max_pos, f);
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
