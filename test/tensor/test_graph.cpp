// Graph-level tests: shapes of every op, broadcasting, dtype promotion and error messages. Nothing
// here runs a kernel.
#include <doctest/doctest.h>

#include "base/error.h"
#include "tensor/tensor.h"

using namespace ugrad;

namespace {
using Dims = std::vector<int64_t>;
Tensor z(const Dims& d, DType t = dtypes::float32) { return Tensor::zeros(d, t); }
Tensor e(const Dims& d, DType t = dtypes::float32) { return Tensor::empty(d, t); }
}  // namespace

TEST_CASE("tensor: creation shapes and dtypes") {
  CHECK(z({2, 3}).dims() == Dims{2, 3});
  CHECK(Tensor::full({4}, 2.5).dtype() == dtypes::float32);
  CHECK(Tensor::full({4}, 7).dtype() == dtypes::int32);
  CHECK(Tensor::full({4}, true).dtype() == dtypes::bool_);
  CHECK(Tensor::scalar(3.0).ndim() == 0);
  CHECK(Tensor::ones({2, 0, 3}).numel() == 0);
  CHECK(Tensor::empty({5, 6}, dtypes::float16).dtype() == dtypes::float16);
  CHECK(Tensor::eye(3).dims() == Dims{3, 3});
  CHECK(Tensor::eye(2, 4).dims() == Dims{2, 4});
  CHECK(Tensor::arange(5).dims() == Dims{5});
  CHECK(Tensor::arange(0.0, 1.0, 0.25).dims() == Dims{4});
  CHECK(Tensor::arange(5.0, 0.0, 1.0).dims() == Dims{0});
  // A constant is one CONST node broadcast with RESHAPE + EXPAND: no buffer.
  UOp n = z({2, 3}).node();
  CHECK(n.op() == Op::EXPAND);
  CHECK(n.src(0).op() == Op::RESHAPE);
  CHECK(n.src(0).src(0).op() == Op::CONST);
}

TEST_CASE("tensor: broadcasting is explicit RESHAPE + EXPAND") {
  Tensor a = e({3, 1}), b = e({4});
  Tensor c = a + b;
  CHECK(c.dims() == Dims{3, 4});
  UOp add = c.node();
  CHECK(add.op() == Op::ADD);
  CHECK(add.src(0).op() == Op::EXPAND);
  CHECK(add.src(1).op() == Op::EXPAND);
  CHECK(add.src(1).src(0).op() == Op::RESHAPE);  // (4,) -> (1, 4) -> (3, 4)
  CHECK((e({2, 1, 5}) * e({7, 1})).dims() == Dims{2, 7, 5});
  CHECK((e({0, 3}) + e({3})).dims() == Dims{0, 3});
  CHECK((e({1}) + e({})).dims() == Dims{1});
  CHECK_THROWS_WITH_AS(e({2, 3}) + e({4, 3}),
                       doctest::Contains("+: shapes (2, 3) and (4, 3) do not broadcast"), Error);
  CHECK(where(e({3, 1}, dtypes::bool_), e({1, 4}), 0.0).dims() == Dims{3, 4});
}

TEST_CASE("tensor: dtype promotion, weak C++ numbers") {
  CHECK((e({2}, dtypes::int32) * 2.5).dtype() == dtypes::float32);
  CHECK((e({2}, dtypes::float16) + 1.0).dtype() == dtypes::float16);
  CHECK((e({2}, dtypes::uint8) + 1).dtype() == dtypes::uint8);
  CHECK((e({2}, dtypes::int8) + e({2}, dtypes::uint8)).dtype() == dtypes::int16);
  CHECK((e({2}, dtypes::float16) + e({2}, dtypes::bfloat16)).dtype() == dtypes::float32);
  CHECK((e({2}, dtypes::int64) + e({2}, dtypes::float16)).dtype() == dtypes::float16);
  CHECK((e({2}, dtypes::bool_) + 1).dtype() == dtypes::int32);
  CHECK((e({2}, dtypes::int32) / 2).dtype() == dtypes::float32);
  CHECK((e({2}, dtypes::float16) / 2).dtype() == dtypes::float16);
  CHECK(idiv(e({2}, dtypes::int32), 2).dtype() == dtypes::int32);
  CHECK((e({2}) < 1).dtype() == dtypes::bool_);
  CHECK(e({2}, dtypes::int32).exp().dtype() == dtypes::float32);
  CHECK(e({2}, dtypes::float16).sqrt().dtype() == dtypes::float16);
  CHECK(e({2}, dtypes::int8).sum().dtype() == dtypes::int32);
  CHECK(e({2}, dtypes::uint8).sum().dtype() == dtypes::uint32);
  CHECK(e({2}, dtypes::float16).sum().dtype() == dtypes::float16);
  CHECK(e({2}, dtypes::int64).sum().dtype() == dtypes::int64);
  CHECK(e({2}, dtypes::int32).mean().dtype() == dtypes::float32);
  CHECK(e({2}, dtypes::int8).max().dtype() == dtypes::int8);
  CHECK(e({2, 3}).argmax(1).dtype() == dtypes::int32);
  CHECK(e({2}, dtypes::float16).matmul(e({2, 3})).dtype() == dtypes::float32);
}

TEST_CASE("tensor: reductions keep or drop dims") {
  Tensor x = e({2, 3, 4});
  CHECK(x.sum().dims() == Dims{});
  CHECK(x.sum({1}).dims() == Dims{2, 4});
  CHECK(x.sum({-1}, true).dims() == Dims{2, 3, 1});
  CHECK(x.max({0, 2}).dims() == Dims{3});
  CHECK(x.mean({0, -1}, true).dims() == Dims{1, 3, 1});
  CHECK(x.var({1}).dims() == Dims{2, 4});
  CHECK(x.argmax().dims() == Dims{});
  CHECK(x.argmax(1).dims() == Dims{2, 4});
  CHECK(x.argmax(1, true).dims() == Dims{2, 1, 4});
  CHECK(x.softmax().dims() == Dims{2, 3, 4});
  CHECK(x.logsumexp(1).dims() == Dims{2, 4});
  CHECK(x.cumsum(1).dims() == Dims{2, 3, 4});
  UOp r = x.sum({1}, true).node();
  CHECK(r.op() == Op::REDUCE_AXIS);
  CHECK(r.arg_as<ReduceArg>() == ReduceArg{Op::ADD, {1}});
  CHECK_THROWS_WITH_AS(x.sum({3}),
                       doctest::Contains("sum: axis 3 is out of range for shape (2, 3, 4)"), Error);
  CHECK_THROWS_WITH_AS(x.sum({1, -2}), doctest::Contains("repeated axis"), Error);
}

TEST_CASE("tensor: movement shapes") {
  Tensor x = e({2, 3, 4});
  CHECK(x.reshape({6, -1}).dims() == Dims{6, 4});
  CHECK(x.reshape({-1}).dims() == Dims{24});
  CHECK(x.permute({2, 0, 1}).dims() == Dims{4, 2, 3});
  CHECK(x.transpose().dims() == Dims{2, 4, 3});
  CHECK(x.transpose(0, 2).dims() == Dims{4, 3, 2});
  CHECK(e({3, 1}).expand({2, 3, 5}).dims() == Dims{2, 3, 5});
  CHECK(e({3, 1}).expand({-1, 4}).dims() == Dims{3, 4});
  CHECK(x.pad({{1, 0}, {0, 2}, {3, 3}}).dims() == Dims{3, 5, 10});
  CHECK(x.pad({{1, 1}, {0, 0}, {0, 0}}, 5.0).dims() == Dims{4, 3, 4});
  CHECK(x.shrink({{0, 1}, {1, 3}, {0, 4}}).dims() == Dims{1, 2, 4});
  CHECK(x.slice({{1}, {-2}}).dims() == Dims{1, 2, 4});
  CHECK(x.slice({{0, 1}, {0, -1}, {-3, -1}}).dims() == Dims{1, 2, 2});
  CHECK(x.slice({{5, 9}}).dims() == Dims{0, 3, 4});
  CHECK(x.flip({0, 2}).dims() == Dims{2, 3, 4});
  CHECK(x.flatten().dims() == Dims{24});
  CHECK(x.flatten(1).dims() == Dims{2, 12});
  CHECK(e({1, 3, 1}).squeeze().dims() == Dims{3});
  CHECK(e({1, 3, 1}).squeeze({0}).dims() == Dims{3, 1});
  CHECK(x.unsqueeze(0).dims() == Dims{1, 2, 3, 4});
  CHECK(x.unsqueeze(-1).dims() == Dims{2, 3, 4, 1});
  CHECK(e({2, 3}).repeat({2, 1, 3}).dims() == Dims{2, 2, 9});
  CHECK(e({2, 3}).repeat_interleave(2, 0).dims() == Dims{4, 3});
  CHECK(cat({e({2, 3}), e({4, 3})}).dims() == Dims{6, 3});
  CHECK(cat({e({2, 3}), e({2, 1})}, -1).dims() == Dims{2, 4});
  CHECK(stack({e({2, 3}), e({2, 3}), e({2, 3})}, 1).dims() == Dims{2, 3, 3});
  CHECK(e({5, 3}).triu().dims() == Dims{5, 3});
  CHECK(e({3, 4}, dtypes::int32).one_hot(7).dims() == Dims{3, 4, 7});
  CHECK(e({10, 8}).embedding(e({2, 3}, dtypes::int32)).dims() == Dims{2, 3, 8});
  CHECK(e({4, 5}).gather(1, e({4, 2}, dtypes::int32)).dims() == Dims{4, 2});
  CHECK(e({4, 5}).index_select(0, e({3}, dtypes::int32)).dims() == Dims{3, 5});
  // A permute is one PERMUTE node; identity movement ops add no node.
  CHECK(x.permute({1, 0, 2}).node().op() == Op::PERMUTE);
  CHECK(x.permute({0, 1, 2}).node() == x.node());
  CHECK(x.reshape({2, 3, 4}).node() == x.node());
  CHECK(x.pad({{0, 0}, {0, 0}, {0, 0}}).node() == x.node());
}

TEST_CASE("tensor: matmul shapes") {
  CHECK(e({2, 3}).matmul(e({3, 5})).dims() == Dims{2, 5});
  CHECK(e({3}).matmul(e({3, 5})).dims() == Dims{5});
  CHECK(e({2, 3}).matmul(e({3})).dims() == Dims{2});
  CHECK(e({3}).matmul(e({3})).dims() == Dims{});
  CHECK(e({7, 2, 3}).matmul(e({3, 4})).dims() == Dims{7, 2, 4});
  CHECK(e({7, 1, 2, 3}).matmul(e({5, 3, 4})).dims() == Dims{7, 5, 2, 4});
  CHECK(e({4, 3}).linear(e({6, 3}), e({6})).dims() == Dims{4, 6});
  CHECK_THROWS_WITH_AS(e({2, 3}).matmul(e({4, 5})),
                       doctest::Contains("matmul: (2, 3) @ (4, 5): inner dims 3 and 4 differ"),
                       Error);
  CHECK_THROWS_WITH_AS(e({2, 3}).matmul(Tensor::scalar(1.0)), doctest::Contains("matmul"), Error);
  CHECK_THROWS_AS(e({2, 2, 3}).matmul(e({3, 3, 4})), Error);  // batch dims 2 and 3
}

TEST_CASE("tensor: errors name the op and the values") {
  Tensor x = e({2, 3});
  CHECK_THROWS_WITH_AS(
      x.reshape({4, 2}),
      doctest::Contains("reshape: (2, 3) to (4, 2): element counts 6 and 8 differ"), Error);
  CHECK_THROWS_WITH_AS(x.reshape({-1, -1}), doctest::Contains("more than one -1"), Error);
  CHECK_THROWS_WITH_AS(x.reshape({-1, 4}), doctest::Contains("cannot infer"), Error);
  CHECK_THROWS_WITH_AS(x.permute({0, 0}), doctest::Contains("permute: (0, 0)"), Error);
  CHECK_THROWS_WITH_AS(x.permute({0}), doctest::Contains("permute"), Error);
  CHECK_THROWS_WITH_AS(x.expand({4, 3}),
                       doctest::Contains("expand: cannot broadcast (2, 3) to (4, 3)"), Error);
  CHECK_THROWS_WITH_AS(x.shrink({{0, 3}, {0, 3}}),
                       doctest::Contains("[0, 3) is out of bounds for axis 0"), Error);
  CHECK_THROWS_WITH_AS(x.pad({{-1, 0}, {0, 0}}), doctest::Contains("pad: negative pad"), Error);
  CHECK_THROWS_WITH_AS(x.squeeze({0}), doctest::Contains("squeeze: axis 0 of (2, 3) is not 1"),
                       Error);
  CHECK_THROWS_WITH_AS(x.transpose(0, 5), doctest::Contains("transpose: axis 5"), Error);
  CHECK_THROWS_WITH_AS(cat({x, e({2, 4})}),
                       doctest::Contains("cat: shapes (2, 3) and (2, 4) differ"), Error);
  CHECK_THROWS_WITH_AS(x.bitcast(dtypes::float16), doctest::Contains("sizes differ"), Error);
  CHECK_THROWS_WITH_AS(x & x, doctest::Contains("&: needs int or bool tensors, got float32"),
                       Error);
  CHECK_THROWS_WITH_AS(idiv(x, 2), doctest::Contains("idiv"), Error);
  CHECK_THROWS_WITH_AS(e({2}, dtypes::bool_) - e({2}, dtypes::bool_), doctest::Contains("bool"),
                       Error);
  CHECK_THROWS_WITH_AS(x.gather(1, e({2, 2})), doctest::Contains("indices must be an int tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(x.cast(dtypes::weakint), doctest::Contains("not a tensor element dtype"),
                       Error);
  CHECK_THROWS_WITH_AS(Tensor().shape(), doctest::Contains("empty Tensor"), Error);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2, 3}).assign(x),
                       doctest::Contains("not a view of a realized buffer"), Error);
  CHECK_THROWS_WITH_AS(Tensor::from_vector<float>({1, 2, 3}, {2, 2}),
                       doctest::Contains("3 values for shape (2, 2) of 4 elements"), Error);
}

TEST_CASE("tensor: absurd shapes are errors, not crashes") {
  CHECK_THROWS_WITH_AS(Tensor::zeros({-1, 3}), doctest::Contains("negative dim"), Error);
  CHECK_THROWS_WITH_AS(Tensor::empty({int64_t(1) << 40, int64_t(1) << 40}),
                       doctest::Contains("more elements than fit in int64"), Error);
  CHECK_THROWS_AS(Tensor::zeros({2}).reshape({-2}), Error);
  CHECK_THROWS_AS(Tensor::zeros({2}).expand({int64_t(1) << 40, int64_t(1) << 40, 2}), Error);
  CHECK_THROWS_AS(Tensor::zeros({2, 2}).repeat({int64_t(1) << 40, int64_t(1) << 40}), Error);
  CHECK_THROWS_AS(Tensor::arange(0.0, 1e300, 1.0), Error);
  CHECK_THROWS_AS(Tensor::arange(0.0, 1.0, 0.0), Error);
}
