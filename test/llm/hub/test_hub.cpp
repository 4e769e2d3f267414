// llm/hub/hub.h against a local imitation of the Hugging Face hub: the resolve endpoint answers a
// HEAD with the commit, the LFS object id and size, and a redirect to the blob, which serves
// Range requests. Downloads land in the hub's cache layout; an interrupted one (a dropped
// connection, a write error) resumes with a Range request; a wrong SHA-256, a 404 and a 401 are
// clear errors; a file laid out by the Hugging Face tools is found without asking the hub;
// `llm pull/list/rm` run end to end.
#include <doctest/doctest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <thread>

#include "base/env.h"
#include "base/error.h"
#include "llm/hub/hub.h"

using namespace ugrad;
using namespace ugrad::llm;
namespace fs = std::filesystem;

namespace {

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// The imitation hub on 127.0.0.1, in a thread of its own.
struct FakeHub {
  std::map<std::string, std::string> files;  // "ORG/NAME/FILE" -> bytes
  std::string private_repo = "org/private", token = "secret";
  std::atomic<size_t> cut_after{SIZE_MAX};  // a blob transfer stops after this many bytes
  std::atomic<bool> wrong_sha{false};
  std::atomic<int> resolves{0};
  std::vector<std::string> ranges;  // Range headers of blob requests
  std::mutex mu;
  httplib::Server server;
  std::thread thread;
  int port = 0;

  FakeHub() {
    server.Get(R"(/([^/]+/[^/]+)/resolve/([^/]+)/(.+))", [this](const httplib::Request& req,
                                                                httplib::Response& res) {
      ++resolves;
      const std::string repo = req.matches[1], file = req.matches[3];
      if (repo == private_repo && req.get_header_value("Authorization") != "Bearer " + token) {
        res.status = 401;
        return;
      }
      auto it = files.find(repo + "/" + file);
      if (it == files.end()) {
        res.status = 404;
        return;
      }
      const std::string sha = sha256_hex(wrong_sha ? it->second + "x" : it->second);
      res.status = 302;
      res.set_header("X-Repo-Commit", kCommit);
      res.set_header("X-Linked-Etag", "\"" + sha + "\"");
      res.set_header("X-Linked-Size", std::to_string(it->second.size()));
      res.set_header("Location", "/blobs/" + repo + "/" + file);
    });
    server.Get(R"(/blobs/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu);
        ranges.push_back(req.get_header_value("Range"));
      }
      const std::string& bytes = files.at(req.matches[1]);
      const size_t cut = cut_after;
      res.set_content_provider(
          bytes.size(), "application/octet-stream",
          [&bytes, cut](size_t offset, size_t length, httplib::DataSink& sink) {
            const size_t end = std::min(offset + length, cut);
            if (offset >= end) return false;  // the connection drops mid-transfer
            sink.write(bytes.data() + offset, end - offset);
            return end == offset + length;
          });
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    server.stop();
    thread.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }
};

// A fresh cache directory and the hub, through the knobs.
struct Env {
  FakeHub hub;
  fs::path cache = fs::temp_directory_path() / ("ugrad_test_hub_" + std::to_string(::getpid()));
  ScopedKnob dir{Knob::HF_HUB_CACHE, cache.string()};
  ScopedKnob endpoint{Knob::HF_ENDPOINT, hub.endpoint()};
  Env() { fs::remove_all(cache); }
  ~Env() { fs::remove_all(cache); }
};

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace

TEST_CASE("hub: a download lands in the hub's cache layout, checked, and is found again") {
  Env env;
  const std::string bytes = random_bytes(3 << 20, 1);
  env.hub.files["org/model/sub/model.gguf"] = bytes;
  const HubFile f{"org/model", "sub/model.gguf"};
  CHECK_FALSE(find_cached(f));
  DownloadProgress last;
  const fs::path path = download(f, [&](const DownloadProgress& p) { last = p; });
  const fs::path repo = env.cache / "models--org--model";
  CHECK(path == repo / "snapshots" / kCommit / "sub" / "model.gguf");
  CHECK(fs::is_symlink(path));
  CHECK(fs::read_symlink(path) == fs::path("../../../blobs") / sha256_hex(bytes));
  CHECK(read_file(path) == bytes);
  CHECK(read_file(repo / "refs" / "main") == kCommit);
  CHECK_FALSE(fs::exists(repo / "blobs" / (sha256_hex(bytes) + ".incomplete")));
  CHECK(last.done == bytes.size());
  CHECK(last.total == bytes.size());
  // Found again without asking the hub.
  const int resolves = env.hub.resolves;
  REQUIRE(find_cached(f));
  CHECK(*find_cached(f) == path);
  CHECK(env.hub.resolves == resolves);
  // list and rm: the blob goes with its last link.
  const std::vector<CachedFile> listed = list_cached();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].repo == "org/model");
  CHECK(listed[0].file == "sub/model.gguf");
  CHECK(listed[0].commit == kCommit);
  CHECK(listed[0].bytes == bytes.size());
  CHECK(remove_cached("org/model", "sub/model.gguf") == bytes.size());
  CHECK_FALSE(find_cached(f));
  CHECK_FALSE(fs::exists(repo / "blobs" / sha256_hex(bytes)));
  CHECK(list_cached().empty());
  CHECK_THROWS_WITH_AS(remove_cached("org/model", "sub/model.gguf"), doctest::Contains("holds no"),
                       Error);
}

TEST_CASE("hub: SHA-256 of a known vector (FIPS 180-2 \"abc\")") {
  Env env;
  env.hub.files["org/abc/abc.gguf"] = "abc";
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(read_file(download({"org/abc", "abc.gguf"})) == "abc");
}

TEST_CASE("hub: an interrupted download keeps its bytes and resumes with a Range request") {
  Env env;
  const std::string bytes = random_bytes(2 << 20, 2);
  env.hub.files["org/model/m.gguf"] = bytes;
  env.hub.cut_after = 700000;
  const HubFile f{"org/model", "m.gguf"};
  CHECK_THROWS_WITH_AS(download(f), doctest::Contains("the partial download is kept"), Error);
  const fs::path part =
      env.cache / "models--org--model" / "blobs" / (sha256_hex(bytes) + ".incomplete");
  REQUIRE(fs::exists(part));
  const uint64_t kept = fs::file_size(part);
  CHECK(kept > 0);
  CHECK(kept <= 700000);
  CHECK(read_file(part) == bytes.substr(0, kept));
  env.hub.cut_after = SIZE_MAX;
  DownloadProgress last;
  const fs::path path = download(f, [&](const DownloadProgress& p) { last = p; });
  CHECK(read_file(path) == bytes);
  CHECK(env.hub.ranges.back() == "bytes=" + std::to_string(kept) + "-");
  CHECK(last.resumed_from == kept);
  CHECK_FALSE(fs::exists(part));
}

TEST_CASE("hub: a write error (here a file size limit) is reported, the bytes kept to resume") {
  Env env;
  const std::string bytes = random_bytes(600000, 5);
  env.hub.files["org/model/m.gguf"] = bytes;
  const HubFile f{"org/model", "m.gguf"};
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);  // a failed write, not a signal
  rlimit small = old;
  small.rlim_cur = 200000;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string error;
  try {
    download(f);
  } catch (const Error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK(error.find("hub: writing") != std::string::npos);
  CHECK(error.find("File too large") != std::string::npos);
  CHECK(error.find("the partial download is kept") != std::string::npos);
  const fs::path part =
      env.cache / "models--org--model" / "blobs" / (sha256_hex(bytes) + ".incomplete");
  REQUIRE(fs::exists(part));
  CHECK(fs::file_size(part) <= 200000);
  CHECK(read_file(download(f)) == bytes);
}

TEST_CASE("hub: bytes whose SHA-256 is not the object id are discarded, not used") {
  Env env;
  env.hub.files["org/model/m.gguf"] = random_bytes(100000, 3);
  env.hub.wrong_sha = true;
  const HubFile f{"org/model", "m.gguf"};
  CHECK_THROWS_WITH_AS(download(f), doctest::Contains("arrived corrupt"), Error);
  CHECK_FALSE(find_cached(f));
  const fs::path blobs = env.cache / "models--org--model" / "blobs";
  CHECK(fs::is_empty(blobs));  // neither a blob nor a partial download left
}

TEST_CASE("hub: a missing file is a 404, a private repository without a token a 401") {
  Env env;
  env.hub.files["org/private/m.gguf"] = "gguf";
  CHECK_THROWS_WITH_AS(download({"org/model", "nope.gguf"}),
                       doctest::Contains("has no 'nope.gguf' in org/model at main (HTTP 404)"),
                       Error);
  CHECK_THROWS_WITH_AS(download({"org/private", "m.gguf"}), doctest::Contains("HF_TOKEN"), Error);
  ScopedKnob token(Knob::HF_TOKEN, "secret");
  CHECK(read_file(download({"org/private", "m.gguf"})) == "gguf");
}

TEST_CASE("hub: a file the Hugging Face tools downloaded is found without asking the hub") {
  Env env;
  const fs::path repo = env.cache / "models--Qwen--Qwen3-0.6B-GGUF";
  const std::string sha(64, 'a');
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / kCommit);
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "blobs" / sha) << "weights";
  fs::create_symlink(fs::path("../../blobs") / sha, repo / "snapshots" / kCommit / "q.gguf");
  std::ofstream(repo / "refs" / "main") << kCommit;
  const std::optional<fs::path> found = find_cached({"Qwen/Qwen3-0.6B-GGUF", "q.gguf"});
  REQUIRE(found);
  CHECK(read_file(*found) == "weights");
  CHECK(find_cached({"Qwen/Qwen3-0.6B-GGUF", "q.gguf", kCommit}));
  CHECK_FALSE(find_cached({"Qwen/Qwen3-0.6B-GGUF", "q.gguf", "v2"}));
  CHECK(env.hub.resolves == 0);
}

TEST_CASE("llm pull, list and rm against the imitation hub") {
  Env env;
  const std::string bytes = random_bytes(50000, 4);
  env.hub.files["org/model/m.gguf"] = bytes;
  const auto run = [&](const std::string& args) {
    const std::string cmd =
        fmt::format("HF_HUB_CACHE={} HF_ENDPOINT={} {} {} 2>&1", env.cache.string(),
                    env.hub.endpoint(), UGRAD_LLM_BINARY, args);
    FILE* pipe = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    const int st = pclose(pipe);
    return std::pair{WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
  };
  auto [rc, out] = run("pull org/model:m.gguf --json");
  REQUIRE(rc == 0);
  nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j.at("downloaded") == true);
  CHECK(j.at("bytes") == bytes.size());
  CHECK(read_file(j.at("path").get<std::string>()) == bytes);
  std::tie(rc, out) = run("pull org/model:m.gguf");  // cached: no download, no progress
  CHECK(rc == 0);
  CHECK(out.starts_with("cached "));
  std::tie(rc, out) = run("list --json");
  REQUIRE(rc == 0);
  j = nlohmann::json::parse(out);
  REQUIRE(j.size() == 1);
  CHECK(j[0].at("file") == "m.gguf");
  CHECK(j[0].at("format") == "unreadable");  // random bytes are not a GGUF
  std::tie(rc, out) = run("rm org/model:m.gguf");
  CHECK(rc == 0);
  CHECK(out.find("removed m.gguf") != std::string::npos);
  std::tie(rc, out) = run("pull org/model:none.gguf");
  CHECK(rc == 1);
  CHECK(out.find("HTTP 404") != std::string::npos);
  std::tie(rc, out) = run("pull");
  CHECK(rc == 1);
  CHECK(out.find("name a model") != std::string::npos);
}
