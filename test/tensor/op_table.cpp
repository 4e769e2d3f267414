// Running one op case: random inputs (seeded by the case name), built in the requested layout,
// then the ugrad result compared with the reference.
#include "op_table.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "base/float16.h"

using namespace ugrad;

namespace optable {

const char* layout_name(Layout l) {
  static const char* names[] = {"contiguous", "permuted", "padded",
                                "shrunk",     "flipped",  "expanded"};
  return names[static_cast<int>(l)];
}

Tolerance tolerance_for(DType t) {
  switch (t.scalar) {
    case Scalar::Float64:
      return {1e-9, 1e-12};
    case Scalar::Float32:
      return {2e-5, 2e-5};
    case Scalar::Float16:
      return {6e-3, 6e-3};
    case Scalar::BFloat16:
      return {3e-2, 3e-2};
    default:
      return {0, 0};  // ints and bool are exact
  }
}

namespace {

uint64_t name_seed(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// A value as the dtype stores it (what the reference must see).
double representable(double v, DType t) {
  if (t == dtypes::float16) return half_to_float(float_to_half(static_cast<float>(v)));
  if (t == dtypes::bfloat16) return bf16_to_float(float_to_bf16(static_cast<float>(v)));
  if (t == dtypes::float32) return static_cast<float>(v);
  return v;
}

ref::Array random_array(const std::vector<int64_t>& dims, const InputSpec& s,
                        std::mt19937_64& rng) {
  ref::Array a{dims, {}};
  std::uniform_real_distribution<double> uni(s.lo, s.hi);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v;
    if (is_bool(s.dtype))
      v = static_cast<double>(rng() & 1);
    else if (!is_float(s.dtype) || s.integral)
      v = std::floor(uni(rng) + 0.5);
    else
      v = uni(rng);
    a.v.push_back(representable(v, s.dtype));
  }
  return a;
}

// Integer results wrap to the dtype's width, as the reference's doubles do not.
double wrap_to(double v, DType t) {
  if (!is_int(t) || itemsize(t) >= 8 || std::isnan(v)) return v;
  double span = std::ldexp(1.0, static_cast<int>(itemsize(t) * 8));
  double w = std::fmod(v, span);
  if (w < 0) w += span;
  if (!is_unsigned(t) && w >= span / 2) w -= span;
  return w;
}

Tensor upload(const ref::Array& a, DType t, const std::string& device) {
  return Tensor::from_doubles(a.v, a.dims, t, device);
}

// The input as a tensor in the requested layout, and its logical values.
std::pair<Tensor, ref::Array> make_input(const InputSpec& s, std::mt19937_64& rng,
                                         const std::string& device) {
  InputStorage in = input_storage(s, rng);
  return {in.view(upload(in.storage, s.dtype, device)), in.values};
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(d[i]);
  }
  return s + ")";
}

}  // namespace

InputStorage input_storage(const InputSpec& s, std::mt19937_64& rng) {
  size_t rank = s.dims.size();
  Layout l = s.layout;
  if (rank == 0 || (l == Layout::Permuted && rank < 2) || (l == Layout::Padded && s.dims[0] < 2))
    l = Layout::Contiguous;
  std::vector<int64_t> all(rank);
  for (size_t i = 0; i < rank; ++i) all[i] = static_cast<int64_t>(i);
  switch (l) {
    case Layout::Contiguous: {
      ref::Array a = random_array(s.dims, s, rng);
      return {a, [](const Tensor& t) { return t; }, a};
    }
    case Layout::Permuted: {  // storage holds the transpose; the view permutes it back
      ref::Array a = random_array(s.dims, s, rng);
      std::vector<int64_t> rev(all.rbegin(), all.rend());
      return {ref::permute(a, rev), [rev](const Tensor& t) { return t.permute(rev); }, a};
    }
    case Layout::Flipped: {
      ref::Array a = random_array(s.dims, s, rng);
      return {ref::flip(a, all), [all](const Tensor& t) { return t.flip(all); }, a};
    }
    case Layout::Shrunk: {  // storage has a border of other values around the view
      ref::Array a = random_array(s.dims, s, rng);
      std::vector<std::pair<int64_t, int64_t>> border(rank, {1, 1}), keep;
      for (int64_t d : s.dims) keep.emplace_back(1, d + 1);
      double junk = is_bool(s.dtype) ? 1 : 99;
      return {ref::pad(a, border, junk), [keep](const Tensor& t) { return t.shrink(keep); }, a};
    }
    case Layout::Padded: {  // zero rows on both ends of axis 0, made by PAD
      std::vector<int64_t> inner = s.dims;
      inner[0] -= 2;
      ref::Array a = random_array(inner, s, rng);
      std::vector<std::pair<int64_t, int64_t>> pads(rank, {0, 0});
      pads[0] = {1, 1};
      return {a, [pads](const Tensor& t) { return t.pad(pads); }, ref::pad(a, pads, 0)};
    }
    case Layout::Expanded: {  // axis 0 broadcast from size 1
      std::vector<int64_t> inner = s.dims;
      inner[0] = 1;
      ref::Array a = random_array(inner, s, rng);
      std::vector<int64_t> dims = s.dims;
      return {a, [dims](const Tensor& t) { return t.expand(dims); }, ref::expand(a, s.dims)};
    }
  }
  return {};
}

uint64_t case_seed(const OpCase& c) { return name_seed(c.name); }

CaseResult run_op_case(const OpCase& c, const std::string& device) {
  CaseResult r;
  std::mt19937_64 rng(case_seed(c));
  std::vector<Tensor> inputs;
  std::vector<ref::Array> ref_inputs;
  try {
    for (const InputSpec& s : c.inputs) {
      auto [t, a] = make_input(s, rng, device);
      inputs.push_back(t);
      ref_inputs.push_back(std::move(a));
    }
    r.output = c.op(inputs);
    if (c.out_dtype && r.output.dtype() != *c.out_dtype) {
      r.detail = fmt::format("dtype {}, expected {}", to_string(r.output.dtype()),
                             to_string(*c.out_dtype));
      return r;
    }
    // A NULL device schedules and compiles but runs nothing: realizing is the whole check.
    if (r.output.device().rfind("NULL", 0) == 0) {
      r.output.realize();
      r.ok = true;
      r.detail = "compiled only (NULL device)";
      return r;
    }
    ref::Array want = c.ref(ref_inputs);
    std::vector<int64_t> got_dims = r.output.dims();
    if (got_dims != want.dims) {
      r.detail = fmt::format("shape {}, expected {}", dims_text(got_dims), dims_text(want.dims));
      return r;
    }
    std::vector<double> got = r.output.to_doubles();
    Tolerance tol = c.tol.value_or(tolerance_for(r.output.dtype()));
    for (size_t i = 0; i < got.size(); ++i) {
      double g = got[i], w = wrap_to(want.v[i], r.output.dtype());
      bool same = (std::isnan(g) && std::isnan(w)) || g == w ||
                  std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
      if (!same) {
        r.detail = fmt::format("element {} {}: got {}, expected {} (rtol {}, atol {})", i,
                               dims_text(ref::unravel(static_cast<int64_t>(i), want.dims)), g, w,
                               tol.rtol, tol.atol);
        return r;
      }
    }
    r.ok = true;
  } catch (const std::exception& e) {
    r.detail = std::string("threw: ") + e.what();
  }
  return r;
}

const OpCase* find_case(const std::string& name) {
  for (const OpCase& c : op_table())
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace optable
