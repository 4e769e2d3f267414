// Realization, reading values, printing, slice assignment and the random generator.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <span>

#include "base/error.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"

using namespace ugrad;

TEST_CASE("tensor: from_vector round trip and item") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.dtype() == dtypes::float32);
  CHECK(a.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(Tensor::from_vector<int64_t>({-5, 7}, {2}).to_vector<int64_t>() ==
        std::vector<int64_t>{-5, 7});
  CHECK(Tensor::from_vector<double>({0.5, 1.5}, {2}, dtypes::float16).to_vector<float>() ==
        std::vector<float>{0.5f, 1.5f});
  CHECK(Tensor::from_vector<bool>({true, false}, {2}).to_vector<bool>() ==
        std::vector<bool>{true, false});
  CHECK(Tensor::from_vector<uint64_t>({~uint64_t(0)}, {1}).item<uint64_t>() == ~uint64_t(0));
  CHECK(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}).sum().item<float>() == 10);
  CHECK_THROWS_WITH_AS(a.item<float>(), doctest::Contains("item: tensor of shape (2, 3)"), Error);
}

// Weights of a mapped file: on the CPU the tensor is the host bytes themselves (a later change to
// them shows), it keeps their owner alive, and writing into it is an Error; other devices copy.
TEST_CASE("tensor: from_host_memory wraps host bytes without copying on the CPU") {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  std::weak_ptr<std::vector<float>> watch = owner;
  auto bytes = std::as_bytes(std::span(*owner));
  Tensor t = Tensor::from_host_memory(bytes, {2, 2}, dtypes::float32, "CPU", owner);
  Tensor copy = Tensor::from_host_memory(bytes, {2, 2}, dtypes::float32, "NULL", owner);
  owner.reset();
  CHECK(!watch.expired());
  CHECK((t * 2).sum().item<float>() == 20);
  (*watch.lock())[0] = 11;  // the CPU tensor reads the same memory
  CHECK((t * 2).sum().item<float>() == 40);
  CHECK_THROWS_WITH_AS(t.assign(Tensor::zeros({2, 2})).realize(), doctest::Contains("read-only"),
                       Error);
  CHECK_THROWS_WITH_AS(
      Tensor::from_host_memory(bytes.first(12), {2, 2}, dtypes::float32, "CPU", nullptr),
      doctest::Contains("12 bytes for shape (2, 2)"), Error);
  t = Tensor();
  copy = Tensor();
  CHECK(watch.expired());
}

// Regression: a graph of constants names no device, and realizing it ran on the default device
// (a KV cache made with zeros(..., "NULL:gfx1100") landed on the CPU).
TEST_CASE("tensor: a realized constant lives on the tensor's device") {
  Tensor z = Tensor::zeros({4, 8}, dtypes::float16, "NULL").contiguous();
  z.realize();
  CHECK(z.is_realized());
  UOp buf = z.node();
  while (buf.op() != Op::BUFFER) buf = buf.src(0);
  CHECK(buf.arg_as<BufferArg>().device == "NULL");
}

TEST_CASE("tensor: realize replaces the graph in every copy") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor b = a * 2 + 1;
  Tensor c = b;  // shares b's state
  CHECK_FALSE(b.is_realized());
  b.realize();
  CHECK(b.is_realized());
  CHECK(c.is_realized());
  CHECK(c.to_vector<float>() == std::vector<float>{3, 5, 7});
  Tensor x = Tensor::ones({2, 2}), y = x + x;
  std::vector<Tensor> both{x, y};
  Tensor::realize_all(both);
  CHECK(both[1].to_vector<int>() == std::vector<int>{2, 2, 2, 2});
}

TEST_CASE("tensor: a non-contiguous view reads back in logical order") {
  Tensor a = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  CHECK(a.transpose().to_vector<int>() == std::vector<int>{0, 3, 1, 4, 2, 5});
  CHECK(a.slice({{1}}).to_vector<int>() == std::vector<int>{3, 4, 5});
  CHECK(a.flip({1}).to_vector<int>() == std::vector<int>{2, 1, 0, 5, 4, 3});
}

TEST_CASE("tensor: to_string is numpy-like") {
  Tensor a = Tensor::from_vector<float>({1, 2.5, -3, 4}, {2, 2});
  CHECK(a.to_string() == "Tensor(shape=(2, 2), dtype=float32, device=CPU)\n[[1, 2.5],\n [-3, 4]]");
  CHECK(Tensor::arange(3).to_string() == "Tensor(shape=(3,), dtype=int32, device=CPU)\n[0, 1, 2]");
  CHECK(Tensor::full({}, true).to_string() == "Tensor(shape=(), dtype=bool, device=CPU)\ntrue");
  std::string big = Tensor::arange(2000).to_string();
  CHECK(big.find("[0, 1, 2, ..., 1997, 1998, 1999]") != std::string::npos);
  std::string cube = Tensor::zeros({2, 2, 2}, dtypes::int8).to_string();
  CHECK(cube.find("[[[0, 0],\n  [0, 0]],\n\n [[0, 0],\n  [0, 0]]]") != std::string::npos);
}

TEST_CASE("tensor: assign into a slice of a realized tensor (KV cache update)") {
  Tensor cache = Tensor::zeros({4, 3}).contiguous();
  cache.realize();
  Tensor row = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  cache.slice({{1, 2}}).assign(row).realize();
  cache.slice({{3, 4}, {1, 3}}).assign(7.0).realize();
  CHECK(cache.to_vector<float>() == std::vector<float>{0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 7, 7});
  // The write is lazy: nothing changes until the ASSIGN is realized.
  Tensor pending = cache.slice({{0, 1}}).assign(Tensor::ones({1, 3}));
  CHECK(cache.to_vector<float>()[0] == 0);
  pending.realize();
  CHECK(cache.to_vector<float>()[0] == 1);
}

TEST_CASE("tensor: rand is reproducible and counter-based") {
  Tensor::manual_seed(42);
  std::vector<float> a = Tensor::rand({1000}).to_vector<float>();
  std::vector<float> b = Tensor::rand({1000}).to_vector<float>();
  Tensor::manual_seed(42);
  CHECK(Tensor::rand({1000}).to_vector<float>() == a);  // same seed, same call number
  CHECK(a != b);                                        // the next call draws a new stream
  double mean = 0;
  for (float x : a) {
    CHECK(x >= 0);
    CHECK(x < 1);
    mean += x / 1000.0;
  }
  CHECK(mean == doctest::Approx(0.5).epsilon(0.05));
  Tensor::manual_seed(7);
  std::vector<float> n = Tensor::randn({20000}).to_vector<float>();
  double m = 0, v = 0;
  for (float x : n) m += x / n.size();
  for (float x : n) v += (x - m) * (x - m) / n.size();
  CHECK(std::fabs(m) < 0.03);
  CHECK(v == doctest::Approx(1.0).epsilon(0.05));
  std::vector<float> u = Tensor::uniform({100}, -2, 3).to_vector<float>();
  for (float x : u) CHECK((x >= -2 && x < 3));
  // A fixed vector: Philox-4x32-10 of seed 0, call 0, block 0 (bits >> 8 scaled by 2^-24).
  Tensor::manual_seed(0);
  std::vector<float> first = Tensor::rand({2}).to_vector<float>();
  Tensor::manual_seed(0);
  CHECK(Tensor::rand({2}).to_vector<float>() == first);
  CHECK_THROWS_WITH_AS(Tensor::rand({2}, dtypes::int32), doctest::Contains("not a float dtype"),
                       Error);
}

// Regression: a graph of constants realized through a CONTIGUOUS onto a device other than the
// default one was computed into a buffer of the default device, which a kernel of the other
// device then read (on the emulated GPU: a host address, out of bounds; a KV cache of zeros).
TEST_CASE("a materialized graph of constants lives on its reader's device, not the default") {
  Tensor zeros = Tensor::zeros({4, 8}, dtypes::float16, "NULL").contiguous();
  Tensor root = Tensor::empty({4, 8}, dtypes::float16, "NULL").assign(zeros);
  Schedule s = create_schedule({root.node()});
  REQUIRE(s.items.size() >= 1);
  for (const ScheduleItem& item : s.items)
    for (const UOp& b : item.buffers) CHECK(b.arg_as<BufferArg>().device == "NULL");
}

// Regression (Q6_K, Q3_K and Q2_K linears on DEV=AMD read host memory): a graph of constants that
// gets a buffer inside a graph whose root is not an assignment took the default device, since
// only buffers and assignments passed their device on to what they read; the kernel on the other
// device then read a host address. Every buffer now lives where the kernel that reads it runs.
TEST_CASE("a graph of constants given a buffer inside any kernel lives on that kernel's device") {
  Tensor weight = Tensor::empty({4, 8}, dtypes::float32, "NULL");
  // A materialized mask of constants (a CONTIGUOUS), and a reduce over constants that two kernels
  // read (the scheduler's shared-reduce rule gives it a buffer).
  Tensor mask = Tensor::full({4, 8}, true, dtypes::bool_, "NULL")
                    .pad({{0, 0}, {2, 0}})
                    .shrink({{0, 4}, {0, 8}})
                    .contiguous();
  Tensor sums = Tensor::ones({4, 8}, dtypes::float32, "NULL").sum({1});
  Tensor a = mask.where(weight, 0.0f).sum({1}) * sums;
  Tensor b = (weight * 2).sum({1}) + sums;
  Schedule s = create_schedule({a.node(), b.node()});
  REQUIRE(s.items.size() >= 3);
  for (const ScheduleItem& item : s.items)
    for (const UOp& buf : item.buffers) CHECK(buf.arg_as<BufferArg>().device == "NULL");
}
