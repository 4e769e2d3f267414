// Indexing by data: gather, index_select, embedding and one_hot compare indices with an arange and
// sum the selected values (where(arange == idx, x, 0).sum()), as tinygrad does; the code generator
// may turn the pattern into a direct load. Out-of-range indices select nothing (give 0).
// Triangles are masks from two aranges.
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

void need_index(const Tensor& idx, std::string_view op) {
  if (!is_int(idx.dtype()))
    fail("{}: indices must be an int tensor, got {}", op, to_string(idx.dtype()));
}

// arange(n) shaped to broadcast along the last axis of a rank-`rank` tensor.
Tensor arange_last(int64_t n, int64_t rank, const std::string& device) {
  std::vector<int64_t> s(rank, 1);
  s.back() = n;
  return index_range(n, device).reshape(s);
}

// Keeps x where mask(row, col) holds for the last two axes (row i, col j: the predicate on j - i).
Tensor triangle(const Tensor& x, int64_t k, bool upper, std::string_view op) {
  if (x.ndim() < 2) fail("{}: needs at least 2 dims, got shape {}", op, shape_str(x.shape()));
  int64_t rows = x.size(-2), cols = x.size(-1);
  Tensor i = index_range(rows, x.device()).reshape({rows, 1});
  Tensor j = index_range(cols, x.device()).reshape({1, cols});
  Tensor diff = j - i;  // column minus row
  Tensor mask = upper ? diff.ge(k) : diff.le(k);
  return mask.where(x, 0).cast(x.dtype());
}

}  // namespace

Tensor Tensor::gather(int64_t axis, const Tensor& index) const {
  need_index(index, "gather");
  int64_t a = norm_axis(axis, ndim(), "gather", shape());
  if (index.ndim() != ndim())
    fail("gather: index of shape {} and input of shape {} differ in rank", shape_str(index.shape()),
         shape_str(shape()));
  std::vector<int64_t> xd = dims(), id = index.dims();
  std::vector<std::pair<int64_t, int64_t>> keep;
  for (int64_t i = 0; i < ndim(); ++i) {
    if (i != a && id[i] > xd[i])
      fail("gather: index shape {} exceeds input shape {} on axis {}", dims_str(id), dims_str(xd),
           i);
    keep.emplace_back(0, i == a ? xd[i] : id[i]);
  }
  int64_t n = xd[a];
  // x: (..., n at a, ...) -> (..., 1 at a, ..., n) expanded to index.shape + (n,)
  std::vector<int64_t> order;
  for (int64_t i = 0; i <= ndim(); ++i)
    if (i != a + 1) order.push_back(i);
  order.push_back(a + 1);
  std::vector<int64_t> big = id;
  big.push_back(n);
  Tensor xs = shrink(keep).unsqueeze(a).permute(order).expand(big);
  Tensor hit = index.unsqueeze(-1).eq(arange_last(n, ndim() + 1, device()));
  return hit.where(xs, 0).sum({-1}).cast(dtype());
}

Tensor Tensor::index_select(int64_t axis, const Tensor& index) const {
  need_index(index, "index_select");
  if (index.ndim() != 1)
    fail("index_select: index must be 1-D, got shape {}", shape_str(index.shape()));
  int64_t a = norm_axis(axis, ndim(), "index_select", shape());
  std::vector<int64_t> s(ndim(), 1), full = dims();
  s[a] = index.size(0);
  full[a] = index.size(0);
  return gather(a, index.reshape(s).expand(full));
}

Tensor Tensor::embedding(const Tensor& ids) const {
  need_index(ids, "embedding");
  if (ndim() != 2) fail("embedding: the table must be (vocab, dim), got {}", shape_str(shape()));
  int64_t vocab = size(0), width = size(1);
  // (..., vocab, 1) one-hot against the (vocab, dim) table, summed over vocab.
  Tensor hit = ids.unsqueeze(-1).eq(arange_last(vocab, ids.ndim() + 1, device())).unsqueeze(-1);
  std::vector<int64_t> table_shape(ids.ndim(), 1);
  table_shape.insert(table_shape.end(), {vocab, width});
  return hit.where(reshape(table_shape), 0).sum({-2}).cast(dtype());
}

Tensor Tensor::one_hot(int64_t num_classes) const {
  need_index(*this, "one_hot");
  if (num_classes < 0) fail("one_hot: negative class count {}", num_classes);
  return unsqueeze(-1).eq(arange_last(num_classes, ndim() + 1, device())).cast(dtypes::int32);
}

Tensor Tensor::triu(int64_t k) const { return triangle(*this, k, true, "triu"); }
Tensor Tensor::tril(int64_t k) const { return triangle(*this, k, false, "tril"); }

}  // namespace ugrad
