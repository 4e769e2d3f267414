// Golden modeled times of fixed kernels under the cost model's current version and hash: the
// calibration kernels' figures live in test_cost_model.cpp; these are kernels the models run
// (decode matvecs of the two most used formats, a one-row gated-delta scan step, a flash-decode
// attention), on DEV=AMD through the emulator. A change to a row, a rule or a counter changes
// them; so does a change to the kernels. Either way the values here are updated in the same
// commit, the version bumped when the model changed (docs/rdna3.md), and the closing note says why.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "base/env.h"
#include "llm/kernels/attention.h"
#include "llm/kernels/chunk.h"
#include "llm/kernels/delta_rule.h"
#include "llm/kernels/matvec_int8.h"
#include "llm/quant/formats.h"
#include "test/mockgpu/cost_model.h"
#include "test/mockgpu/launch_records.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// The model the values below were taken with.
constexpr const char* kGoldenModel = "cost model v3 #ea8d";

// The modeled middle-corner time (us) of every launch since the last clear, summed.
double modeled_us() {
  mockgpu::ModeledSum sum;
  for (const mockgpu::LaunchRecord& r : mockgpu::launch_records(UGRAD_MOCKHIP_LIB)) {
    const mockgpu::ModeledTime t = mockgpu::model_launch(r.counters);
    MESSAGE(mockgpu::describe_launch(r.kernel, r.counters, t));
    sum.add(t, r.counters);
  }
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  return sum.seconds * 1e6;
}

struct OnEmulator {
  ScopedKnob lib{Knob::HIP_LIB, UGRAD_MOCKHIP_LIB};
  ScopedKnob dev{Knob::DEV, "AMD"};
};

double matvec_us(GgmlType type, int64_t out, int64_t in) {
  const size_t bytes = row_bytes(type, in) * static_cast<size_t>(out);
  std::vector<uint32_t> words((bytes + 3) / 4);
  std::mt19937 rng(1);
  for (uint32_t& w : words) w = rng() & 0x3BFF3BFFu;  // finite fp16 halves wherever they land
  Tensor w = Tensor::from_vector(words, {static_cast<int64_t>(words.size())}, dtypes::uint32, "AMD")
                 .realize();
  Tensor x = Tensor::full({1, in}, 0.5, dtypes::float32, "AMD").contiguous().realize();
  Int8Rows q = quantize_rows_int8(x);
  q.words.realize();
  q.scale = q.scale.contiguous().realize();
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  setenv("MOCKGPU_SAMPLE", "4", 1);
  matvec_int8(q, w, type, out, in).realize();
  setenv("MOCKGPU_SAMPLE", "1", 1);
  return modeled_us();
}

void check_golden(const char* what, double got, double golden) {
  MESSAGE(fmt::format("{}: {:.3f} us MODELED ({}), golden {:.3f}", what, got, mockgpu::model_name(),
                      golden));
  CHECK(got == doctest::Approx(golden).epsilon(0.001));
}

}  // namespace

TEST_CASE(
    "golden: the model's version and the rows' hash are the ones the values were taken with") {
  CHECK(mockgpu::model_name() == kGoldenModel);
}

TEST_CASE("golden: decode kernels of the models") {
  OnEmulator on;
  // The units read their scales from the formats' layouts since a21bb04 (16.853 and 24.190 us
  // before).
  check_golden("matvec_int8 Q4_K 4096x4096", matvec_us(GgmlType::Q4_K, 4096, 4096), 16.828);
  check_golden("matvec_int8 IQ4_XS 5120x5120", matvec_us(GgmlType::IQ4_XS, 5120, 5120), 24.030);

  // One decode step of a gated-delta scan at the 27B's shape, past the first chunk.
  Tensor in[] = {Tensor::zeros({48, 128, 128}, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({1, 48, 128}, 0.05, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({1, 48, 128}, 0.05, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({1, 48, 128}, 0.5, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({1, 48}, 0.5, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({1, 48}, -0.1, dtypes::float32, "AMD").contiguous()};
  Tensor::realize_all(in);
  const UOp start_pos = make_chunk(1, 4096).bind(384, 1).start_pos;
  gated_delta_rule(in[0], in[1], in[2], in[3], in[4], in[5], start_pos).realize();
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  gated_delta_rule(in[0], in[1], in[2], in[3], in[4], in[5], start_pos).realize();
  check_golden("gated-delta scan, 48 heads of 128, one row", modeled_us(), 13.869);

  // Flash decode attention at the 8B's shape over 512 positions.
  const int64_t positions = 512, capacity = positions + 31;
  Tensor kv[] = {Tensor::full({8, capacity, 128}, 0.25, dtypes::float16, "AMD").contiguous(),
                 Tensor::full({8, capacity, 128}, 0.5, dtypes::float16, "AMD").contiguous(),
                 Tensor::full({1, 32, 128}, 0.1, dtypes::float32, "AMD").contiguous()};
  Tensor::realize_all(kv);
  Chunk chunk = make_chunk(1, positions).bind(positions - 1, 1);
  Tensor q = attention_query(kv[2], kv[0], chunk).contiguous();
  q.realize();
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  attention(q, kv[0], kv[1], chunk).realize();
  check_golden("flash decode attention, 32 heads over 8 of 128, 512 positions", modeled_us(),
               10.726);
}
