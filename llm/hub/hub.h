// Files of model repositories on the Hugging Face hub, downloaded into the hub's own cache layout
// so that the Hugging Face tools and ugrad find each other's downloads:
//   CACHE/models--ORG--NAME/blobs/SHA256               the file's bytes (its LFS object id)
//   CACHE/models--ORG--NAME/blobs/SHA256.incomplete    a download under way: resumed, never
//   restarted CACHE/models--ORG--NAME/snapshots/COMMIT/FILE  ->  ../../blobs/SHA256
//   CACHE/models--ORG--NAME/refs/REVISION              the commit a branch or tag resolved to
// CACHE is HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub. The hub is HF_ENDPOINT
// (default https://huggingface.co; tests point it at a local imitation), with the token HF_TOKEN
// when set. A download asks `ENDPOINT/REPO/resolve/REVISION/FILE` for the commit, the object id
// and the size without following its redirect, then reads the redirect's target (with a Range
// request for the bytes a partial download lacks), computing the SHA-256 as the bytes arrive;
// the blob is used only when its SHA-256 is the object id.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ugrad::llm {

/// A file of a model repository at a revision (a branch, a tag or a commit).
struct HubFile {
  std::string repo;  // "ORG/NAME"
  std::string file;  // path inside the repository
  std::string revision = "main";
};

/// The cache directory (see above).
std::filesystem::path hub_cache_dir();

/// The cached file (its snapshot link) when the revision's snapshot holds it, without asking the
/// hub.
std::optional<std::filesystem::path> find_cached(const HubFile& f);

/// Bytes of a download so far and in all (0: unknown), and seconds since it started.
struct DownloadProgress {
  uint64_t done = 0, total = 0, resumed_from = 0;
  double seconds = 0;
};
using ProgressFn = std::function<void(const DownloadProgress&)>;

/// Downloads `f` into the cache and returns its snapshot path. Errors name the problem: a
/// repository or file the hub does not have (404), one it refuses (401/403: set HF_TOKEN), a
/// network failure or a write error (the partial download is kept and the next call resumes
/// it), a SHA-256 that is not the hub's object id (the bytes are discarded).
std::filesystem::path download(const HubFile& f, const ProgressFn& progress = {});

/// A GGUF file in the cache.
struct CachedFile {
  std::string repo, file, commit;
  std::filesystem::path path;
  uint64_t bytes = 0;
};
/// Every .gguf file of every model repository in the cache, by repository and file.
std::vector<CachedFile> list_cached();

/// Removes the file's snapshot links (every commit's) and the blobs no other link uses; returns
/// the bytes freed. An Error when the cache does not hold it.
uint64_t remove_cached(const std::string& repo, const std::string& file);

}  // namespace ugrad::llm
