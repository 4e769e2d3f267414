#include "reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ref {

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k >= 0; --k) {
    c[k] = i % dims[k];
    i /= dims[k];
  }
  return c;
}

namespace {
int64_t ravel(const std::vector<int64_t>& c, const std::vector<int64_t>& dims) {
  int64_t i = 0;
  for (size_t k = 0; k < dims.size(); ++k) i = i * dims[k] + c[k];
  return i;
}
Array zeros(std::vector<int64_t> dims, double v = 0) {
  Array a{std::move(dims), {}};
  a.v.assign(a.numel(), v);
  return a;
}
int64_t norm(int64_t axis, size_t ndim) {
  return axis < 0 ? axis + static_cast<int64_t>(ndim) : axis;
}
}  // namespace

Array map(const Array& a, const Unary& f) {
  Array r = a;
  for (double& x : r.v) x = f(x);
  return r;
}

Array expand(const Array& a, const std::vector<int64_t>& dims) {
  Array r = zeros(dims);
  size_t lead = dims.size() - a.dims.size();
  for (int64_t i = 0; i < r.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, dims), ca;
    for (size_t k = 0; k < a.dims.size(); ++k) ca.push_back(a.dims[k] == 1 ? 0 : c[k + lead]);
    r.v[i] = a.v[ravel(ca, a.dims)];
  }
  return r;
}

namespace {
std::vector<int64_t> bshape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) throw std::runtime_error("ref: shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
}  // namespace

Array zip(const Array& a, const Array& b, const Binary& f) {
  std::vector<int64_t> s = bshape(a.dims, b.dims);
  Array x = expand(a, s), y = expand(b, s), r = zeros(s);
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = f(x.v[i], y.v[i]);
  return r;
}

Array where(const Array& c, const Array& a, const Array& b) {
  std::vector<int64_t> s = bshape(bshape(c.dims, a.dims), b.dims);
  Array cc = expand(c, s), x = expand(a, s), y = expand(b, s), r = zeros(s);
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = cc.v[i] != 0 ? x.v[i] : y.v[i];
  return r;
}

std::vector<int64_t> axes_of(std::vector<int64_t> axes, size_t ndim) {
  if (axes.empty())
    for (size_t i = 0; i < ndim; ++i) axes.push_back(static_cast<int64_t>(i));
  for (int64_t& a : axes) a = norm(a, ndim);
  return axes;
}

Array reduce(const Array& a, std::vector<int64_t> axes, bool keepdim, double init,
             const Binary& f) {
  axes = axes_of(axes, a.dims.size());
  std::vector<int64_t> kd = a.dims, out;
  for (int64_t ax : axes) kd[ax] = 1;
  Array r = zeros(kd, init);
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, a.dims);
    for (int64_t ax : axes) c[ax] = 0;
    double& acc = r.v[ravel(c, kd)];
    acc = f(acc, a.v[i]);
  }
  if (!keepdim) {
    for (size_t k = 0; k < a.dims.size(); ++k)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) == axes.end())
        out.push_back(a.dims[k]);
    r.dims = out;
  }
  return r;
}

Array mean(const Array& a, std::vector<int64_t> axes, bool keepdim) {
  int64_t n = 1;
  for (int64_t ax : axes_of(axes, a.dims.size())) n *= a.dims[ax];
  return map(reduce(a, axes, keepdim, 0, std::plus<>()), [n](double s) { return s / n; });
}

Array var(const Array& a, std::vector<int64_t> axes, bool keepdim, int64_t correction) {
  int64_t n = 1;
  for (int64_t ax : axes_of(axes, a.dims.size())) n *= a.dims[ax];
  Array m = mean(a, axes, true);
  Array d = zip(a, m, [](double x, double y) { return (x - y) * (x - y); });
  double denom = static_cast<double>(std::max<int64_t>(0, n - correction));
  return map(reduce(d, axes, keepdim, 0, std::plus<>()), [denom](double s) { return s / denom; });
}

Array argmax(const Array& a, int64_t axis, bool keepdim, bool min) {
  axis = norm(axis, a.dims.size());
  std::vector<int64_t> kd = a.dims;
  kd[axis] = 1;
  Array best = zeros(kd, min ? INFINITY : -INFINITY), idx = zeros(kd);
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, a.dims);
    int64_t pos = c[axis];
    c[axis] = 0;
    int64_t o = ravel(c, kd);
    bool better = min ? a.v[i] < best.v[o] : a.v[i] > best.v[o];
    if (pos == 0 || better) {  // the first element starts the search; later ones must beat it
      best.v[o] = a.v[i];
      idx.v[o] = static_cast<double>(pos);
    }
  }
  if (!keepdim) idx.dims.erase(idx.dims.begin() + axis);
  return idx;
}

Array softmax(const Array& a, int64_t axis, bool log) {
  Array m = reduce(a, {axis}, true, -INFINITY, [](double x, double y) { return std::max(x, y); });
  Array z = zip(a, m, std::minus<>());
  Array s = reduce(map(z, [](double x) { return std::exp(x); }), {axis}, true, 0, std::plus<>());
  if (log) return zip(z, s, [](double x, double y) { return x - std::log(y); });
  return zip(z, s, [](double x, double y) { return std::exp(x) / y; });
}

Array logsumexp(const Array& a, int64_t axis, bool keepdim) {
  Array m = reduce(a, {axis}, true, -INFINITY, [](double x, double y) { return std::max(x, y); });
  Array s = reduce(zip(a, m, [](double x, double y) { return std::exp(x - y); }), {axis}, true, 0,
                   std::plus<>());
  Array r = zip(s, m, [](double x, double y) { return std::log(x) + y; });
  if (!keepdim) r.dims.erase(r.dims.begin() + norm(axis, a.dims.size()));
  return r;
}

Array cumsum(const Array& a, int64_t axis) {
  axis = norm(axis, a.dims.size());
  Array r = a;
  std::vector<int64_t> st = strides(a.dims);
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, a.dims);
    if (c[axis] > 0) r.v[i] = r.v[i - st[axis]] + a.v[i];
  }
  return r;
}

Array reshape(const Array& a, std::vector<int64_t> dims) {
  Array r = a;
  r.dims = std::move(dims);
  return r;
}

Array permute(const Array& a, const std::vector<int64_t>& order) {
  std::vector<int64_t> d;
  for (int64_t o : order) d.push_back(a.dims[o]);
  Array r = zeros(d);
  for (int64_t i = 0; i < r.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, d), ca(d.size());
    for (size_t k = 0; k < order.size(); ++k) ca[order[k]] = c[k];
    r.v[i] = a.v[ravel(ca, a.dims)];
  }
  return r;
}

Array pad(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& pads, double value) {
  std::vector<int64_t> d = a.dims;
  for (size_t k = 0; k < d.size(); ++k) d[k] += pads[k].first + pads[k].second;
  Array r = zeros(d, value);
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, a.dims);
    for (size_t k = 0; k < d.size(); ++k) c[k] += pads[k].first;
    r.v[ravel(c, d)] = a.v[i];
  }
  return r;
}

Array shrink(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<int64_t> d;
  for (auto [s, e] : ranges) d.push_back(e - s);
  Array r = zeros(d);
  for (int64_t i = 0; i < r.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, d);
    for (size_t k = 0; k < d.size(); ++k) c[k] += ranges[k].first;
    r.v[i] = a.v[ravel(c, a.dims)];
  }
  return r;
}

Array flip(const Array& a, const std::vector<int64_t>& axes) {
  Array r = a;
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, a.dims);
    for (int64_t ax : axes_of(axes, a.dims.size())) c[ax] = a.dims[ax] - 1 - c[ax];
    r.v[i] = a.v[ravel(c, a.dims)];
  }
  return r;
}

Array cat(const std::vector<Array>& parts, int64_t axis) {
  axis = norm(axis, parts[0].dims.size());
  std::vector<int64_t> d = parts[0].dims;
  d[axis] = 0;
  for (const Array& p : parts) d[axis] += p.dims[axis];
  Array r = zeros(d);
  int64_t off = 0;
  for (const Array& p : parts) {
    for (int64_t i = 0; i < p.numel(); ++i) {
      std::vector<int64_t> c = unravel(i, p.dims);
      c[axis] += off;
      r.v[ravel(c, d)] = p.v[i];
    }
    off += p.dims[axis];
  }
  return r;
}

Array repeat(const Array& a, const std::vector<int64_t>& reps) {
  std::vector<int64_t> ad(reps.size() - a.dims.size(), 1);
  ad.insert(ad.end(), a.dims.begin(), a.dims.end());
  std::vector<int64_t> d(reps.size());
  for (size_t k = 0; k < d.size(); ++k) d[k] = ad[k] * reps[k];
  Array r = zeros(d);
  for (int64_t i = 0; i < r.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, d);
    for (size_t k = 0; k < d.size(); ++k) c[k] %= ad[k];
    r.v[i] = a.v[ravel(c, ad)];
  }
  return r;
}

Array gather(const Array& a, int64_t axis, const Array& index) {
  axis = norm(axis, a.dims.size());
  Array r = zeros(index.dims);
  for (int64_t i = 0; i < r.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, index.dims);
    c[axis] = static_cast<int64_t>(index.v[i]);
    r.v[i] = a.v[ravel(c, a.dims)];
  }
  return r;
}

Array triangle(const Array& a, int64_t k, bool upper) {
  Array r = a;
  size_t n = a.dims.size();
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, a.dims);
    int64_t diff = c[n - 1] - c[n - 2];
    if (upper ? diff < k : diff > k) r.v[i] = 0;
  }
  return r;
}

Array matmul(const Array& a0, const Array& b0) {
  Array a = a0.dims.size() == 1 ? reshape(a0, {1, a0.dims[0]}) : a0;
  Array b = b0.dims.size() == 1 ? reshape(b0, {b0.dims[0], 1}) : b0;
  size_t ra = a.dims.size(), rb = b.dims.size();
  int64_t n = a.dims[ra - 2], k = a.dims[ra - 1], m = b.dims[rb - 1];
  std::vector<int64_t> batch = bshape(std::vector<int64_t>(a.dims.begin(), a.dims.end() - 2),
                                      std::vector<int64_t>(b.dims.begin(), b.dims.end() - 2));
  std::vector<int64_t> ad = batch, bd = batch, od = batch;
  ad.insert(ad.end(), {n, k});
  bd.insert(bd.end(), {k, m});
  od.insert(od.end(), {n, m});
  Array x = expand(a, ad), y = expand(b, bd), r = zeros(od);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  for (int64_t p = 0; p < nb; ++p)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t t = 0; t < k; ++t) s += x.v[(p * n + i) * k + t] * y.v[(p * k + t) * m + j];
        r.v[(p * n + i) * m + j] = s;
      }
  if (a0.dims.size() == 1) r.dims.erase(r.dims.end() - 2);
  if (b0.dims.size() == 1) r.dims.erase(r.dims.end() - 1);
  return r;
}

}  // namespace ref
