#include "llm/cli/model_path.h"

#include <filesystem>

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {

// The aliases, as published by the Qwen team (Qwen3), ggml-org and Unsloth (Qwen3.5/3.6). A
// revision that is a commit pins what the alias downloads; "main" follows the repository (unpinned:
// no commit hash for it could be checked from here; `llm list` says so). qwen3.6:27b is the IQ4_XS
// file: the format of the hand-written gfx1100 kernels' fast path.
const std::vector<ModelAlias>& model_aliases() {
  static const std::vector<ModelAlias> table = {
      {"qwen3:0.6b", {"Qwen/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q8_0.gguf"}},
      {"qwen3:1.7b", {"Qwen/Qwen3-1.7B-GGUF", "Qwen3-1.7B-Q8_0.gguf"}},
      {"qwen3:4b", {"Qwen/Qwen3-4B-GGUF", "Qwen3-4B-Q4_K_M.gguf"}},
      {"qwen3:8b", {"Qwen/Qwen3-8B-GGUF", "Qwen3-8B-Q4_K_M.gguf"}},
      {"qwen3:14b", {"Qwen/Qwen3-14B-GGUF", "Qwen3-14B-Q4_K_M.gguf"}},
      {"qwen3:32b", {"Qwen/Qwen3-32B-GGUF", "Qwen3-32B-Q4_K_M.gguf"}},
      {"qwen3:30b-a3b", {"Qwen/Qwen3-30B-A3B-GGUF", "Qwen3-30B-A3B-Q4_K_M.gguf"}},
      {"qwen3.5:0.8b",
       {"ggml-org/Qwen3.5-0.8B-GGUF", "Qwen3.5-0.8B-Q8_0.gguf",
        "8fea620810c4afa23dd6443f999a48574c1611a3"},
       true},
      {"qwen3.5:27b", {"unsloth/Qwen3.5-27B-GGUF", "Qwen3.5-27B-IQ4_XS.gguf"}},
      {"qwen3.6:27b", {"unsloth/Qwen3.6-27B-GGUF", "Qwen3.6-27B-IQ4_XS.gguf"}},
  };
  return table;
}

std::optional<HubFile> hub_file_of(const std::string& name) {
  for (const ModelAlias& a : model_aliases())
    if (a.alias == name) return a.file;
  // ORG/NAME:FILE[@REVISION], the repository with exactly one '/'.
  const size_t colon = name.find(':'), slash = name.find('/');
  if (colon == std::string::npos || slash == std::string::npos || slash > colon ||
      name.find('/', slash + 1) < colon || colon + 1 == name.size())
    return std::nullopt;
  HubFile f{name.substr(0, colon), name.substr(colon + 1)};
  if (const size_t at = f.file.rfind('@'); at != std::string::npos) {
    f.revision = f.file.substr(at + 1);
    f.file.resize(at);
  }
  if (f.file.empty() || f.revision.empty()) return std::nullopt;
  return f;
}

std::string resolve_model_path(const std::string& model, const ProgressFn& progress) {
  if (std::filesystem::exists(model)) return model;
  const std::optional<HubFile> f = hub_file_of(model);
  if (!f)
    fail(
        "model {} does not exist: it is neither a file nor an alias (llm list shows the aliases) "
        "nor ORG/NAME:FILE",
        quote(model));
  if (auto cached = find_cached(*f)) return cached->string();
  return download(*f, progress).string();
}

}  // namespace ugrad::llm
