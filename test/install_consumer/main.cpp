// Uses ugrad through its installed headers and CMake package: a small computation on the CPU.
#include <tensor/tensor.h>

#include <cstdio>

int main() {
  ugrad::Tensor a = ugrad::Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  ugrad::Tensor b = ugrad::Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2});
  std::vector<float> c = (a.matmul(b) + 1).to_vector<float>();
  bool ok = c == std::vector<float>{2, 3, 4, 5};
  std::printf("consumer: installed ugrad computed [%g %g %g %g]: %s\n", c[0], c[1], c[2], c[3],
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
