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

constexpr int64_t kLanes = 32, kT = kFlashSplit;
constexpr int64_t kChunk = 8;             // halves per 16-byte load
constexpr int64_t kCombineParts = 8;      // waves splitting the splits in the combine
constexpr int64_t kUnroll = 16;           // splits the combine reads per step
constexpr int64_t kMaxWmmaWaves = 4;      // query tiles per workgroup in the WMMA form
constexpr int64_t kLdsBytes = 64 * 1024;  // a workgroup's LDS on gfx11

UOp f32(double v) { return UOp::cnst(dtypes::float32, v); }
UOp index(int64_t v) { return UOp::cnst_int(dtypes::index, v); }
int64_t max_splits(int64_t capacity) { return (capacity + kT - 1) / kT; }

// The number of splits the rows of a call read: up to the last row's position.
UOp splits_used(const UOp& sp, int64_t rows) { return (sp + (rows - 1)).idiv(kT) + 1; }

// LDS rows of keys and values padded by one word: lane p reads row p, and the rows' words fall in
// different banks.
int64_t tile_stride(int64_t hd) { return hd + 2; }

// The tile in LDS after a barrier: positions [split * 32, split * 32 + 32) of KV head kvh's keys
// (rows 0..31) and values (rows 32..63), read by `threads` work-items `tid` in 16-byte pieces
// (coalesced); a position past `last` is read as `last` (finite; the callers weight it 0).
UOp kv_tile(KernelBuilder& kb, const UOp& k, const UOp& v, const UOp& kvh, const UOp& split,
            const UOp& last, const UOp& tid, int64_t threads, int64_t capacity, int64_t hd) {
  const int64_t stride = tile_stride(hd), chunks = kT * hd / kChunk;
  UOp tile = kb.lds(dtypes::float16, 2 * kT * stride);
  std::vector<UOp> stores;
  for (int64_t it = 0; it * threads < chunks; ++it) {
    const UOp c = tid + it * threads;
    const UOp gate = chunks % threads ? c.lt(chunks) : UOp();
    const UOp tile_row = c.idiv(hd / kChunk), col = (c % (hd / kChunk)) * kChunk;
    const UOp pos = split * kT + tile_row;
    const UOp src = (kvh * capacity + pos.lt(last).where(pos, last)) * hd + col;
    for (int64_t side = 0; side < 2; ++side)
      for (int64_t i = 0; i < kChunk; ++i)
        stores.push_back(KernelBuilder::lds_store(tile, (side * kT + tile_row) * stride + col + i,
                                                  kb.load(side ? v : k, src + i), gate));
  }
  return KernelBuilder::barrier(tile, stores);
}

// log2(e) / sqrt(hd): scores in log2 units, so the softmax is exp2.
UOp score_scale(int64_t hd) {
  return f32(1.0 / std::sqrt(static_cast<double>(hd)) / std::log(2.0));
}
const UOp kNegInf = f32(-std::numeric_limits<double>::infinity());

// The split kernels' parameters (partial sums, max and sum per split; q; the caches) and their
// first two launch dimensions (the splits the call reads, the KV heads).
struct SplitIo {
  UOp acc, ml, q, k, v, split, kvh;
};
SplitIo split_io(KernelBuilder& kb, int64_t rows, int64_t heads, int64_t kv_heads, int64_t hd,
                 int64_t capacity, const UOp& sp, DType q_dtype) {
  const int64_t splits = max_splits(capacity);
  SplitIo io;
  io.acc = kb.buffer(dtypes::float32, rows * heads * splits * hd);
  io.ml = kb.buffer(dtypes::float32, rows * heads * splits * 2);
  io.q = kb.buffer(q_dtype, rows * heads * hd);
  io.k = kb.buffer(dtypes::float16, kv_heads * capacity * hd);
  io.v = kb.buffer(dtypes::float16, kv_heads * capacity * hd);
  io.split = kb.global(splits_used(sp, rows));
  io.kvh = kb.global(kv_heads);
  return io;
}

// Decode (and chunks on shapes the WMMA form does not take): one workgroup per (split, KV head,
// row), one wave per query head of the group, one lane per position.
UOp build_split(int64_t rows, int64_t heads, int64_t kv_heads, int64_t hd, int64_t capacity,
                const UOp& sp, const std::string& name) {
  const int64_t group = heads / kv_heads, splits = max_splits(capacity), stride = tile_stride(hd);
  KernelBuilder kb;
  const auto [acc, ml, q, k, v, split, kvh] =
      split_io(kb, rows, heads, kv_heads, hd, capacity, sp, dtypes::float32);
  UOp row = rows > 1 ? kb.global(rows) : index(0);
  UOp lane = kb.local(kLanes), wave = kb.local(group);
  const UOp tid = wave * kLanes + lane, last = sp + row;  // the row's last visible position
  const int64_t threads = kLanes * group;
  UOp kv = kv_tile(kb, k, v, kvh, split, last, tid, threads, capacity, hd);
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
  const UOp score = visible.where(dot * score_scale(hd), kNegInf);
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
  const int64_t group = heads / kv_heads, splits = max_splits(capacity), stride = tile_stride(hd);
  const int64_t qrows = rows * group, steps = hd / kWmmaTile;
  const auto [tiles, blocks, waves] = wmma_tiles(rows, group);
  KernelBuilder kb;
  const auto [acc, ml, q, k, v, split, kvh] =
      split_io(kb, rows, heads, kv_heads, hd, capacity, sp, dtypes::float16);
  UOp block = blocks > 1 ? kb.global(blocks) : index(0);
  UOp lane = kb.local(kLanes), wave = kb.local(waves);
  UOp kv = kv_tile(kb, k, v, kvh, split, sp + (rows - 1), wave * kLanes + lane, kLanes * waves,
                   capacity, hd);
  const UOp qt = block * waves + wave, col = lane % kWmmaTile, half = lane.idiv(kWmmaTile);
  // A query row of this wave's tile: its row of q (a row past the last reads the last; its
  // results are not stored).
  const auto q_row = [&](const UOp& m) {
    const UOp mc = m.lt(qrows).where(m, index(qrows - 1));
    return (mc.idiv(group) * heads + kvh * group + mc % group) * hd;
  };
  const auto halves = [](std::vector<UOp> xs) {
    for (UOp& x : xs) x = x.cast(dtypes::float16);
    return KernelBuilder::vectorize(xs);
  };
  const UOp zero = KernelBuilder::vectorize(std::vector<UOp>(8, f32(0.0)));
  // S: tile t holds positions 16 t + col; element i row 2 i + half of the wave's tile; a reduce
  // over the head dim's 16-wide steps (LLVM unrolls it: q in half precision keeps all the steps'
  // loads inside the register file).
  const UOp a_row = q_row(qt * kWmmaTile + col);
  UOp kk = kb.reduce_range(steps);
  std::vector<UOp> qa, kb0, kb1;
  for (int64_t j = 0; j < kWmmaTile; ++j) {
    qa.push_back(kb.load(q, a_row + kk * kWmmaTile + j));
    kb0.push_back(kb.load(kv, col * stride + kk * kWmmaTile + j));
    kb1.push_back(kb.load(kv, (col + kWmmaTile) * stride + kk * kWmmaTile + j));
  }
  const UOp a = KernelBuilder::vectorize(qa);
  const UOp d[2] = {KernelBuilder::wmma(a, KernelBuilder::vectorize(kb0), zero),
                    KernelBuilder::wmma(a, KernelBuilder::vectorize(kb1), zero)};
  const int64_t srow = kT + 1;
  UOp scores = kb.lds(dtypes::float32, waves * kWmmaTile * srow);
  std::vector<UOp> s_stores;
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < 8; ++i) {
      const UOp r = half + 2 * i, m = qt * kWmmaTile + r, pos = split * kT + t * kWmmaTile + col;
      const UOp score =
          KernelBuilder::reduce(KernelBuilder::gep(d[t], i), Op::ADD, {kk}) * score_scale(hd);
      s_stores.push_back(
          KernelBuilder::lds_store(scores, (wave * kWmmaTile + r) * srow + t * kWmmaTile + col,
                                   pos.lt(sp + m.idiv(group) + 1).where(score, kNegInf)));
    }
  UOp sc = KernelBuilder::barrier(scores, s_stores);
  // This lane's row (col) of the tile: max, weights (0 past the row's last: a split wholly past
  // it has m = -inf, and exp2(-inf + inf) would be NaN), their sum, P as two A fragments.
  const UOp m_row = qt * kWmmaTile + col, last = sp + m_row.idiv(group);
  std::vector<UOp> row_scores;
  UOp mx;
  for (int64_t j = 0; j < kT; ++j) {
    row_scores.push_back(kb.load(sc, (wave * kWmmaTile + col) * srow + j));
    mx = mx ? mx.max(row_scores.back()) : row_scores.back();
  }
  std::vector<UOp> p;
  UOp l;
  for (int64_t j = 0; j < kT; ++j) {
    p.push_back((split * kT + j).lt(last + 1).where((row_scores[j] - mx).alu(Op::EXP2), f32(0.0)));
    l = l ? l + p.back() : p.back();
  }
  const UOp pa[2] = {halves({p.begin(), p.begin() + kWmmaTile}),
                     halves({p.begin() + kWmmaTile, p.end()})};
  const auto at = [&](const UOp& m) {  // the partial of query row m
    return (m.idiv(group) * heads + kvh * group + m % group) * splits + split;
  };
  const UOp own = m_row.lt(qrows), first_half = half.eq(index(0));
  const UOp writes_ml = own.alu(Op::AND, first_half);
  kb.store(ml, at(m_row) * 2, mx, writes_ml);
  kb.store(ml, at(m_row) * 2 + 1, l, writes_ml);
  for (int64_t n0 = 0; n0 < steps; ++n0) {  // the value dims' 16-wide tiles
    UOp o = zero;
    for (int64_t t = 0; t < 2; ++t) {
      std::vector<UOp> vb;
      for (int64_t j = 0; j < kWmmaTile; ++j)
        vb.push_back(kb.load(kv, (kT + t * kWmmaTile + j) * stride + n0 * kWmmaTile + col));
      o = KernelBuilder::wmma(pa[t], KernelBuilder::vectorize(vb), o);
    }
    for (int64_t i = 0; i < 8; ++i) {
      const UOp m = qt * kWmmaTile + half + 2 * i;
      kb.store(acc, at(m) * hd + n0 * kWmmaTile + col, KernelBuilder::gep(o, i),
               (qrows % kWmmaTile || blocks * waves > tiles) ? m.lt(qrows) : UOp());
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
  UOp out = kb.buffer(dtypes::float32, rows * heads * hd);
  UOp acc = kb.buffer(dtypes::float32, rows * heads * splits * hd);
  UOp ml = kb.buffer(dtypes::float32, rows * heads * splits * 2);
  UOp head = kb.global(heads);
  UOp row = rows > 1 ? kb.global(rows) : index(0);
  // A workgroup per 32 value dims, a wave per part: the small launch spreads over the CUs.
  UOp dims = kb.global(hd / kLanes), lane = kb.local(kLanes), part = kb.local(parts);
  const UOp d = dims * kLanes + lane;
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
  const UOp base = (row * heads + head) * splits;
  UOp s = kb.reduce_range(steps);
  UOp step_max;
  for (const auto& [split, ok] : splits_of(s)) {
    const UOp m = kb.load(ml, (base + split) * 2);
    step_max = step_max ? step_max.max(m) : m;
  }
  // Finite: every part reads at least one split the row uses (a clamped one).
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
  // The parts meet in LDS, [part][num for each lane | max | sum]; part 0 rescales and adds them.
  const int64_t width = kLanes + 2;
  UOp lds = kb.lds(dtypes::float32, parts * width);
  const UOp first_lane = lane.eq(index(0));
  UOp all = KernelBuilder::barrier(
      lds, {KernelBuilder::lds_store(lds, part * width + lane, num),
            KernelBuilder::lds_store(lds, part * width + kLanes, m, first_lane),
            KernelBuilder::lds_store(lds, part * width + kLanes + 1, den, first_lane)});
  const auto at = [&](int64_t p, int64_t i) { return kb.load(all, index(p * width) + i); };
  UOp top;
  for (int64_t p = 0; p < parts; ++p) top = top ? top.max(at(p, kLanes)) : at(p, kLanes);
  UOp total, sum;
  for (int64_t p = 0; p < parts; ++p) {
    const UOp w = (at(p, kLanes) - top).alu(Op::EXP2);
    const UOp n = w * kb.load(all, index(p * width) + lane), l = w * at(p, kLanes + 1);
    total = total ? total + n : n;
    sum = sum ? sum + l : l;
  }
  kb.store(out, (row * heads + head) * hd + d, total.alu(Op::FDIV, sum), part.eq(index(0)));
  return kb.build(name);
}

}  // namespace

bool flash_attention_supports(int64_t heads, int64_t kv_heads, int64_t head_dim) {
  // Whole waves of value dims (lane + 32 j), a group of at most 8 waves, and the per-row form's
  // tile, queries and scores in LDS.
  if (kv_heads < 1 || heads % kv_heads != 0 || heads / kv_heads > 8 || head_dim < 1 ||
      head_dim % kLanes != 0)
    return false;
  const int64_t group = heads / kv_heads;
  return 2 * kT * tile_stride(head_dim) * 2 + group * (head_dim + kLanes) * 4 <= kLdsBytes;
}

namespace {

// Chunks of rows take the WMMA form where its LDS fits.
bool wmma_form(int64_t rows, int64_t group, int64_t hd) {
  return rows > 1 && wmma_lds_bytes(hd, wmma_tiles(rows, group).waves) <= kLdsBytes;
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
                                 int64_t capacity, int64_t max_pos) {
  if (!flash_attention_supports(heads, kv_heads, head_dim))
    fail("flash_attention: no kernel for {} heads over {} KV heads of {}", heads, kv_heads,
         head_dim);
  const UOp sp = start_pos_variable(rows, capacity, max_pos);
  const bool wmma = wmma_form(rows, heads / kv_heads, head_dim);
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

bool flash_attention_half_query(int64_t rows, int64_t heads, int64_t kv_heads, int64_t head_dim) {
  return flash_attention_supports(heads, kv_heads, head_dim) &&
         wmma_form(rows, heads / kv_heads, head_dim);
}

Tensor flash_attention(const Tensor& q_in, const Tensor& k_cache, const Tensor& v_cache,
                       const UOp& start_pos) {
  const int64_t rows = q_in.size(0), heads = q_in.size(1), kv_heads = k_cache.size(0),
                capacity = k_cache.size(1), hd = k_cache.size(2);
  const Tensor q = q_in.cast(
      flash_attention_half_query(rows, heads, kv_heads, hd) ? dtypes::float16 : dtypes::float32);
  const std::string& device = q.device();
  const int64_t splits = max_splits(capacity);
  const int64_t max_pos = start_pos_variable(start_pos, "flash_attention").arg_as<ParamArg>().hi;
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
