#include "llm/hub/hub.h"

#include <curl/curl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>

#include "base/env.h"
#include "base/error.h"
#include "base/quote.h"
#include "base/sha256.h"

namespace ugrad::llm {
namespace fs = std::filesystem;

namespace {

fs::path repo_dir(const std::string& repo) {
  std::string name = "models--";
  for (char c : repo) name += c == '/' ? std::string("--") : std::string(1, c);
  return hub_cache_dir() / name;
}

bool is_commit(const std::string& rev) {
  return rev.size() == 40 && rev.find_first_not_of("0123456789abcdef") == std::string::npos;
}
bool is_sha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::trunc);
  out << s;
  if (!out.flush()) fail("hub: cannot write {}", quote(p.string()));
}

// One libcurl easy handle with the options every request shares.
class Request {
 public:
  explicit Request(const std::string& url) : curl_(curl_easy_init(), curl_easy_cleanup) {
    static const bool init = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    if (!init || !curl_) fail("hub: libcurl cannot start");
    set(CURLOPT_URL, url.c_str());
    set(CURLOPT_USERAGENT, "ugrad-llm");
    set(CURLOPT_CONNECTTIMEOUT, 30L);
    // A stalled transfer (under 1 byte/s for 60 s) fails instead of hanging.
    set(CURLOPT_LOW_SPEED_LIMIT, 1L);
    set(CURLOPT_LOW_SPEED_TIME, 60L);
    set(CURLOPT_ERRORBUFFER, error_);
  }
  ~Request() {
    if (headers_) curl_slist_free_all(headers_);
  }
  template <typename T>
  void set(CURLoption o, T v) {
    curl_easy_setopt(curl_.get(), o, v);
  }
  void header(const std::string& h) { headers_ = curl_slist_append(headers_, h.c_str()); }
  // Runs it: the libcurl result; status() and the headers after.
  CURLcode perform() {
    if (headers_) set(CURLOPT_HTTPHEADER, headers_);
    return curl_easy_perform(curl_.get());
  }
  long status() const {
    long code = 0;
    curl_easy_getinfo(curl_.get(), CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
  std::string redirect() const {
    char* url = nullptr;
    curl_easy_getinfo(curl_.get(), CURLINFO_REDIRECT_URL, &url);
    return url ? url : "";
  }
  // A response header's value, "" when absent: the last response's (after redirects), the name
  // in any case (libcurl's parsing).
  std::string received(const char* name) const {
    curl_header* h = nullptr;
    if (curl_easy_header(curl_.get(), name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK) return "";
    return h->value;
  }
  std::string error(CURLcode code) const { return error_[0] ? error_ : curl_easy_strerror(code); }

 private:
  std::unique_ptr<CURL, void (*)(CURL*)> curl_;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

std::string endpoint() {
  std::string e = knob_str(Knob::HF_ENDPOINT);
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

// An ETag header's value without W/ and quotes.
std::string unquote(std::string v) {
  if (v.rfind("W/", 0) == 0) v = v.substr(2);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

void check_status(long status, const HubFile& f, const std::string& what) {
  const std::string name = fmt::format("{} in {} at {}", quote(f.file), f.repo, f.revision);
  if (status == 401 || status == 403)
    fail("hub: {} refused {} (HTTP {}): a gated or private repository needs a token in HF_TOKEN",
         endpoint(), name, status);
  if (status == 404) fail("hub: {} has no {} (HTTP 404)", endpoint(), name);
  if (status >= 400 || status == 0) fail("hub: {} of {} failed: HTTP {}", what, name, status);
}

struct Remote {
  std::string commit, sha256, url;
  uint64_t size = 0;
};

// The file's commit, LFS object id, size and where its bytes are, from the resolve endpoint.
Remote resolve(const HubFile& f, const std::string& token) {
  const std::string url =
      fmt::format("{}/{}/resolve/{}/{}", endpoint(), f.repo, f.revision, f.file);
  Request r(url);
  r.set(CURLOPT_NOBODY, 1L);
  r.set(CURLOPT_FOLLOWLOCATION, 0L);
  if (!token.empty()) r.header("Authorization: Bearer " + token);
  if (CURLcode c = r.perform(); c != CURLE_OK)
    fail("hub: cannot reach {}: {}", endpoint(), r.error(c));
  check_status(r.status(), f, "resolving");
  Remote out;
  out.commit = r.received("x-repo-commit");
  out.sha256 = unquote(r.received("x-linked-etag"));
  const std::string size = r.received("x-linked-size");
  out.size = size.empty() ? 0 : std::stoull(size);
  out.url = r.status() >= 300 && r.status() < 400 ? r.redirect() : url;
  if (!is_commit(out.commit))
    fail("hub: {} gave no commit for {} (X-Repo-Commit {})", endpoint(), quote(f.file),
         quote(out.commit));
  if (!is_sha256(out.sha256))
    fail("hub: {} in {} is not a Git LFS object (X-Linked-Etag {}): no SHA-256 to check it by",
         quote(f.file), f.repo, quote(out.sha256));
  return out;
}

// Appends the bytes of `url` from `offset` to the file, hashing them; progress as they arrive.
struct Transfer {
  std::FILE* out;
  Sha256* sha;
  int write_errno = 0;
  uint64_t offset, total;
  const ProgressFn* progress;
  std::chrono::steady_clock::time_point start;
};

size_t on_body(char* data, size_t size, size_t n, void* p) {
  auto* t = static_cast<Transfer*>(p);
  const size_t bytes = size * n;
  if (std::fwrite(data, 1, bytes, t->out) != bytes) {
    t->write_errno = errno ? errno : EIO;
    return 0;  // aborts the transfer
  }
  t->sha->update(data, bytes);
  return bytes;
}

int on_progress(void* p, curl_off_t, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(p);
  if (*t->progress) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t->start).count();
    (*t->progress)({t->offset + static_cast<uint64_t>(now), t->total, t->offset, s});
  }
  return 0;
}

}  // namespace

fs::path hub_cache_dir() {
  if (std::string c = knob_str(Knob::HF_HUB_CACHE); !c.empty()) return c;
  if (std::string h = knob_str(Knob::HF_HOME); !h.empty()) return fs::path(h) / "hub";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "huggingface" / "hub";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "huggingface" / "hub";
  fail("hub: no cache directory (set HF_HOME or HOME)");
}

std::optional<fs::path> find_cached(const HubFile& f) {
  const fs::path dir = repo_dir(f.repo);
  std::string commit = f.revision;
  if (!is_commit(commit)) {
    const fs::path ref = dir / "refs" / f.revision;
    if (!fs::exists(ref)) return std::nullopt;
    commit = read_text(ref);
  }
  const fs::path p = dir / "snapshots" / commit / f.file;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;  // follows the link to its blob
  return p;
}

fs::path download(const HubFile& f, const ProgressFn& progress) {
  const std::string token = knob_str(Knob::HF_TOKEN);
  const Remote remote = resolve(f, token);
  const fs::path dir = repo_dir(f.repo), blob = dir / "blobs" / remote.sha256;
  const fs::path snapshot = dir / "snapshots" / remote.commit / f.file;
  if (!fs::exists(blob)) {
    const fs::path part = blob.string() + ".incomplete";
    fs::create_directories(part.parent_path());
    // The bytes already here: hashed again (they were written by an earlier call), then resumed.
    Sha256 sha;
    uint64_t have = 0;
    if (std::ifstream in{part, std::ios::binary}) {
      std::vector<char> buf(1 << 20);
      while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
        sha.update(buf.data(), static_cast<size_t>(in.gcount()));
        have += static_cast<uint64_t>(in.gcount());
      }
    }
    if (remote.size && have > remote.size) {  // not a prefix of this file: start over
      fs::remove(part);
      sha = Sha256();
      have = 0;
    }
    if (!remote.size || have < remote.size) {
      std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(part.c_str(), "ab"),
                                                          std::fclose);
      if (!out) fail("hub: cannot write {}: {}", quote(part.string()), std::strerror(errno));
      Transfer t{
          out.get(), &sha, 0, have, remote.size, &progress, std::chrono::steady_clock::now()};
      Request r(remote.url);
      r.set(CURLOPT_FOLLOWLOCATION, 1L);
      r.set(CURLOPT_WRITEFUNCTION, &on_body);
      r.set(CURLOPT_WRITEDATA, &t);
      r.set(CURLOPT_NOPROGRESS, 0L);
      r.set(CURLOPT_XFERINFOFUNCTION, &on_progress);
      r.set(CURLOPT_XFERINFODATA, &t);
      // The token goes to the hub only, not to the storage it redirects to.
      if (!token.empty() && remote.url.rfind(endpoint() + "/", 0) == 0)
        r.header("Authorization: Bearer " + token);
      if (have) r.header(fmt::format("Range: bytes={}-", have));
      const CURLcode c = r.perform();
      const int flushed = std::fflush(out.get());
      const int write_errno = t.write_errno ? t.write_errno : flushed ? errno : 0;
      if (write_errno)
        fail("hub: writing {}: {} (the partial download is kept; run again to resume)",
             quote(part.string()), std::strerror(write_errno));
      if (c != CURLE_OK)
        fail(
            "hub: downloading {} from {} stopped: {} (the partial download is kept; run again "
            "to resume)",
            quote(f.file), f.repo, r.error(c));
      if (have && r.status() == 200) {  // the server ignored the Range: the body is the whole file
        out.reset();
        fs::remove(part);
        return download(f, progress);
      }
      check_status(r.status(), f, "downloading");
    }
    const uint64_t got = fs::file_size(part);
    const std::string digest = to_hex(sha.finish());
    if ((remote.size && got != remote.size) || digest != remote.sha256) {
      fs::remove(part);
      fail(
          "hub: {} in {} arrived corrupt ({} bytes, SHA-256 {}; the hub says {} bytes, {}): "
          "discarded",
          quote(f.file), f.repo, got, digest, remote.size, remote.sha256);
    }
    fs::rename(part, blob);
  }
  fs::create_directories(snapshot.parent_path());
  std::error_code ec;
  fs::remove(snapshot, ec);
  fs::create_symlink(fs::relative(blob, snapshot.parent_path()), snapshot);
  if (!is_commit(f.revision)) write_text(dir / "refs" / f.revision, remote.commit);
  return snapshot;
}

std::vector<CachedFile> list_cached() {
  std::vector<CachedFile> out;
  const fs::path cache = hub_cache_dir();
  std::error_code ec;
  if (!fs::is_directory(cache, ec)) return out;
  for (const auto& repo : fs::directory_iterator(cache)) {
    const std::string name = repo.path().filename().string();
    if (name.rfind("models--", 0) != 0 || !fs::is_directory(repo.path() / "snapshots")) continue;
    // models--ORG--NAME: ORG/NAME.
    const std::string rest = name.substr(8);
    const size_t dash = rest.find("--");
    const std::string id =
        dash == std::string::npos ? rest : rest.substr(0, dash) + "/" + rest.substr(dash + 2);
    for (const auto& snap : fs::directory_iterator(repo.path() / "snapshots"))
      for (const auto& e : fs::recursive_directory_iterator(snap.path())) {
        if (e.path().extension() != ".gguf" || !fs::is_regular_file(e.path(), ec)) continue;
        out.push_back({id, e.path().lexically_relative(snap.path()).generic_string(),
                       snap.path().filename().string(), e.path(), fs::file_size(e.path())});
      }
  }
  std::sort(out.begin(), out.end(), [](const CachedFile& a, const CachedFile& b) {
    return std::tie(a.repo, a.file, a.commit) < std::tie(b.repo, b.file, b.commit);
  });
  return out;
}

uint64_t remove_cached(const std::string& repo, const std::string& file) {
  const fs::path dir = repo_dir(repo);
  // The blob a snapshot link points to.
  const auto target = [](const fs::path& link) {
    return fs::weakly_canonical(link.parent_path() / fs::read_symlink(link));
  };
  std::set<fs::path> blobs;
  std::error_code ec;
  if (fs::is_directory(dir / "snapshots", ec))
    for (const auto& snap : fs::directory_iterator(dir / "snapshots")) {
      const fs::path link = snap.path() / file;
      if (!fs::is_symlink(link, ec)) continue;
      blobs.insert(target(link));
      fs::remove(link);
    }
  if (blobs.empty()) fail("hub: the cache holds no {} of {}", quote(file), repo);
  // A blob another link still uses stays.
  for (const auto& e : fs::recursive_directory_iterator(dir / "snapshots"))
    if (fs::is_symlink(e.path(), ec)) blobs.erase(target(e.path()));
  uint64_t freed = 0;
  for (const fs::path& b : blobs) {
    freed += fs::exists(b, ec) ? fs::file_size(b) : 0;
    fs::remove(b, ec);
  }
  return freed;
}

}  // namespace ugrad::llm
