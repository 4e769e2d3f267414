#include "llm/cli/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/env.h"
#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {
namespace {

// alias -> the file name under which the GGUF is published
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table = {
      {"qwen3:0.6b", "Qwen3-0.6B-Q8_0.gguf"},         {"qwen3:1.7b", "Qwen3-1.7B-Q4_K_M.gguf"},
      {"qwen3:4b", "Qwen3-4B-Q4_K_M.gguf"},           {"qwen3:8b", "Qwen3-8B-Q4_K_M.gguf"},
      {"qwen3:14b", "Qwen3-14B-Q4_K_M.gguf"},         {"qwen3:32b", "Qwen3-32B-Q4_K_M.gguf"},
      {"qwen3:30b-a3b", "Qwen3-30B-A3B-Q4_K_M.gguf"}, {"qwen3.5:0.8b", "Qwen3.5-0.8B-Q8_0.gguf"},
      {"qwen3.6:27b", "Qwen3.6-27B-Q4_K_M.gguf"},
  };
  return table;
}

std::filesystem::path models_dir() {
  std::string dir = knob_str(Knob::MODELS_DIR);
  if (!dir.empty()) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "ugrad" / "models";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "ugrad" / "models";
  return "models";
}

}  // namespace

std::string resolve_model_path(const std::string& model) {
  auto it = aliases().find(model);
  if (it == aliases().end()) {
    if (!std::filesystem::exists(model)) fail("model file {} does not exist", quote(model));
    return model;
  }
  std::filesystem::path p = models_dir() / it->second;
  if (!std::filesystem::exists(p))
    fail(
        "model {} is {} and is not in {}; download that GGUF file and put it there (or set "
        "MODELS_DIR)",
        quote(model), it->second, models_dir().string());
  return p.string();
}

}  // namespace ugrad::llm
