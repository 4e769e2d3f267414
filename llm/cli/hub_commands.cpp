#include "llm/cli/hub_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/quote.h"
#include "llm/cli/model_path.h"
#include "llm/gguf/gguf.h"
#include "llm/quant/formats.h"

namespace ugrad::llm {
namespace {

using Json = nlohmann::ordered_json;

std::string clock_time(double s) {
  const auto t = static_cast<long long>(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

// The tensor formats of a GGUF file by bytes, largest first ("Q4_K+Q6_K"); "unreadable" when it
// does not parse.
std::string file_format(const std::string& path) {
  try {
    const GgufFile f = GgufFile::open(path);
    std::map<std::string, uint64_t> bytes;
    for (const GgufTensor& t : f.tensors())
      if (t.dims.size() >= 2) bytes[std::string(format_of(t.type).name)] += t.nbytes;
    std::vector<std::pair<uint64_t, std::string>> by_size;
    for (const auto& [name, n] : bytes) by_size.emplace_back(n, name);
    std::sort(by_size.rbegin(), by_size.rend());
    std::string out;
    for (const auto& [n, name] : by_size) out += (out.empty() ? "" : "+") + name;
    return out.empty() ? "-" : out;
  } catch (const std::exception&) {
    return "unreadable";
  }
}

const ModelAlias* alias_of(const std::string& repo, const std::string& file) {
  for (const ModelAlias& a : model_aliases())
    if (a.file.repo == repo && a.file.file == file) return &a;
  return nullptr;
}

HubFile named(const std::string& command, const std::vector<std::string>& args) {
  if (args.empty() || args[0].rfind("--", 0) == 0)
    fail("llm {}: name a model: an alias (llm list shows them) or ORG/NAME:FILE", command);
  std::optional<HubFile> f = hub_file_of(args[0]);
  if (!f)
    fail("llm {}: {} is neither an alias (llm list shows them) nor ORG/NAME:FILE", command,
         quote(args[0]));
  return *f;
}

int pull(const std::vector<std::string>& args) {
  const HubFile f = named("pull", args);
  const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
  std::optional<std::filesystem::path> path = find_cached(f);
  const bool cached = path.has_value();
  if (!path) path = download(f, progress_display(f.file, json));
  if (json) {
    std::printf("%s\n", Json{{"repo", f.repo},
                             {"file", f.file},
                             {"revision", f.revision},
                             {"path", path->string()},
                             {"bytes", std::filesystem::file_size(*path)},
                             {"downloaded", !cached}}
                            .dump()
                            .c_str());
  } else {
    std::printf("%s %s\n", cached ? "cached" : "downloaded", path->string().c_str());
  }
  return 0;
}

int list(const std::vector<std::string>& args) {
  const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
  Json rows = Json::array();
  if (!json)
    std::printf("%-14s %-34s %-34s %10s  %s\n", "ALIAS", "REPOSITORY", "FILE", "SIZE", "FORMAT");
  for (const CachedFile& c : list_cached()) {
    const ModelAlias* a = alias_of(c.repo, c.file);
    const std::string alias = a ? a->alias + (a->pinned ? "" : "*") : "-";
    const std::string format = file_format(c.path.string());
    if (json)
      rows.push_back({{"alias", a ? Json(a->alias) : Json(nullptr)},
                      {"pinned", a ? Json(a->pinned) : Json(nullptr)},
                      {"repo", c.repo},
                      {"file", c.file},
                      {"commit", c.commit},
                      {"bytes", c.bytes},
                      {"format", format},
                      {"path", c.path.string()}});
    else
      std::printf("%-14s %-34s %-34s %10s  %s\n", alias.c_str(), c.repo.c_str(), c.file.c_str(),
                  human_bytes(static_cast<double>(c.bytes)).c_str(), format.c_str());
  }
  if (json) {
    std::printf("%s\n", rows.dump().c_str());
  } else {
    std::printf("\nin %s; * = an unpinned alias (follows its repository's main branch)\n",
                hub_cache_dir().string().c_str());
    std::printf("aliases:");
    for (const ModelAlias& a : model_aliases())
      std::printf(" %s%s", a.alias.c_str(), a.pinned ? "" : "*");
    std::printf("\n");
  }
  return 0;
}

int remove(const std::vector<std::string>& args) {
  const HubFile f = named("rm", args);
  const uint64_t freed = remove_cached(f.repo, f.file);
  std::printf("removed %s from %s (%s freed)\n", f.file.c_str(), f.repo.c_str(),
              human_bytes(static_cast<double>(freed)).c_str());
  return 0;
}

}  // namespace

bool is_hub_command(const std::string& word) {
  return word == "pull" || word == "list" || word == "rm";
}

int run_hub_command(const std::string& command, const std::vector<std::string>& args) {
  if (command == "pull") return pull(args);
  if (command == "list") return list(args);
  if (command == "rm") return remove(args);
  fail("llm: unknown command {}", quote(command));
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  return u ? fmt::format("{:.1f} {}", b, units[u]) : fmt::format("{:.0f} {}", b, units[u]);
}

ProgressFn progress_display(const std::string& what, bool quiet) {
  if (quiet) return {};
  const bool tty = isatty(STDERR_FILENO) != 0;
  double last = -1;
  return [what, tty, last](const DownloadProgress& p) mutable {
    const double every = tty ? 0.1 : 5.0;
    const bool done = p.total && p.done >= p.total;
    if (p.seconds - last < every && !done) return;
    if (done && last == -2) return;  // the final line is printed once
    last = done ? -2 : p.seconds;
    const double rate =
        p.seconds > 0 ? static_cast<double>(p.done - p.resumed_from) / p.seconds : 0;
    const double left = p.total > p.done ? static_cast<double>(p.total - p.done) : 0;
    const std::string eta = rate > 0 ? clock_time(left / rate) : "?";
    const double frac = p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0;
    const std::string amounts = fmt::format(
        "{} / {}  {}/s  ETA {}", human_bytes(static_cast<double>(p.done)),
        p.total ? human_bytes(static_cast<double>(p.total)) : "?", human_bytes(rate), eta);
    if (tty) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(frac * kWidth);
      std::fprintf(stderr, "\r%s [%s%s] %3.0f%%  %s\033[K%s", what.c_str(),
                   std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(), frac * 100,
                   amounts.c_str(), done ? "\n" : "");
    } else {
      std::fprintf(stderr, "downloading %s: %.0f%%, %s\n", what.c_str(), frac * 100,
                   amounts.c_str());
    }
  };
}

}  // namespace ugrad::llm
