#include "runtime/amd/amd_kernargs.h"

#include <bit>
#include <cstring>

#include "base/error.h"

namespace ugrad {

std::vector<uint8_t> pack_kernargs(const AmdKernelInfo& kernel, std::span<const uint64_t> buffers,
                                   std::span<const uint64_t> scalars) {
  validate_amd_kernel(kernel, buffers.size(), scalars.size());
  auto args = kernel.explicit_args();
  if (args.empty()) return {};
  std::vector<uint8_t> segment(kernel.kernarg_size, 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const AmdKernelArg& a = *args[i];
    uint64_t value = i < buffers.size() ? buffers[i] : scalars[i - buffers.size()];
    if (a.size < 8) {
      uint64_t high = value >> (8 * a.size);
      uint64_t sign_ext = (~uint64_t{0}) >> (8 * a.size);
      bool negative = (value >> (8 * a.size - 1)) & 1;
      if (high != 0 && !(negative && high == sign_ext))
        fail("amdgpu: kernel '{}': value 0x{:x} does not fit arg {} ('{}') of {} bytes",
             kernel.name, value, i, a.name, a.size);
    }
    // Little-endian target: the low `size` bytes of the host value are the argument.
    static_assert(std::endian::native == std::endian::little);
    std::memcpy(segment.data() + a.offset, &value, a.size);
  }
  return segment;
}

}  // namespace ugrad
