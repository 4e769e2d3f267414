#include "llm/models/model.h"

#include "base/error.h"
#include "base/quote.h"
#include "llm/models/qwen3.h"
#include "llm/models/qwen35.h"

namespace ugrad::llm {

std::unique_ptr<LanguageModel> load_model(const GgufFile& file, int64_t max_context,
                                          const std::string& device) {
  ModelConfig config = ModelConfig::from_gguf(file);
  switch (config.arch) {
    case ModelArch::kQwen3:
    case ModelArch::kQwen3Moe:
      return std::make_unique<Qwen3Model>(file, max_context, device);
    case ModelArch::kQwen35:
    case ModelArch::kQwen35Moe:
      return std::make_unique<Qwen35Model>(file, max_context, device);
  }
  fail("model: architecture {} is not supported yet", quote(arch_name(config.arch)));
}

}  // namespace ugrad::llm
