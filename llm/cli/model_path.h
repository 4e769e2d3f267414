// What a --model argument (or `llm pull` / `llm rm`'s NAME) names: a file path, an alias of the
// table in model_path.cpp, or REPO:FILE on the Hugging Face hub (REPO = ORG/NAME, FILE a path in
// it, optionally @REVISION). Aliases and REPO:FILE live in the hub's cache (llm/hub/hub.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "llm/hub/hub.h"

namespace ugrad::llm {

/// An alias: the hub file it means. `pinned`: its revision is a commit, so what it downloads
/// never changes; an unpinned one follows the repository's main branch.
struct ModelAlias {
  std::string alias;
  HubFile file;
  bool pinned = false;
};
const std::vector<ModelAlias>& model_aliases();

/// The hub file an alias or REPO:FILE[@REVISION] names; nullopt for anything else (a path).
std::optional<HubFile> hub_file_of(const std::string& name);

/// The GGUF path for a path, an alias or REPO:FILE: an alias or REPO:FILE the cache does not
/// hold yet is downloaded first (progress reported to `progress`). An Error names a missing
/// path or a failed download.
std::string resolve_model_path(const std::string& model, const ProgressFn& progress = {});

}  // namespace ugrad::llm
