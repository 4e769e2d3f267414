// libFuzzer target for the GGUF reader: parses any byte string in memory and touches every
// metadata value and tensor byte. Bad input must end in ugrad::Error; anything else (a crash, a
// sanitizer report, another exception) is a finding. Built and run by scripts/fuzz_gguf.sh.
#include <cstddef>
#include <cstdint>

#include "test/llm/gguf/gguf_test_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ugrad::llm::test::touch_gguf({data, size});
  return 0;
}
