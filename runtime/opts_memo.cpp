#include "runtime/opts_memo.h"

#include <elf.h>
#include <link.h>

#include <cstring>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "base/env.h"

namespace ugrad {
namespace {

// The GNU build id (hex) of the loaded object containing `address`, or "" when it has none.
std::string build_id_of(const void* address) {
  struct Search {
    uintptr_t address;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        bool contains = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& p = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + p.p_vaddr;
          if (p.p_type == PT_LOAD && s->address >= start && s->address < start + p.p_memsz)
            contains = true;
        }
        if (!contains) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& p = info->dlpi_phdr[i];
          if (p.p_type != PT_NOTE) continue;
          const auto* at = reinterpret_cast<const uint8_t*>(info->dlpi_addr + p.p_vaddr);
          const uint8_t* end = at + p.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(at);
            const uint8_t* name = at + sizeof(ElfW(Nhdr));
            const uint8_t* desc = name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              for (uint32_t k = 0; k < n->n_descsz; ++k) s->id += fmt::format("{:02x}", desc[k]);
              return 1;
            }
            at = desc + ((n->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

const std::string& heuristics_build() {
  static const std::string id = build_id_of(reinterpret_cast<const void*>(&heuristic_opts));
  return id;
}

// The key's parts: what the AST is, the target's every field, and what else the choice reads.
std::string key_of(const UOp& ast, const CodegenTarget& t, int64_t max_threads) {
  const std::string target = fmt::format(
      "{} {} gpu={} simd={} half={} bf16={} wave={} lds={} wmma={} dot4={} prefetch={} "
      "permute={} vnni={} as={},{}",
      t.name, t.triple, t.is_gpu, t.simd_bytes, t.native_half, t.native_bfloat16, t.wave_size,
      t.max_local_bytes, t.has_wmma, t.has_dot4, t.prefetch_bytes, t.has_lane_permute, t.has_vnni,
      t.global_address_space, t.local_address_space);
  const std::string threads =
      fmt::format("threads {} knob {} cores {}", max_threads, knob_int(Knob::THREADS),
                  std::thread::hardware_concurrency());
  return ProgramCache::make_key(fmt::format("heuristic opts of kernel AST {:016x}", ast.hash()),
                                target, "build " + heuristics_build() + " " + threads);
}

}  // namespace

std::string serialize_opts(const ChosenOpts& c) {
  std::string s = "opts v1\n";
  for (const Opt& o : c.opts) s += fmt::format("o {} {} {}\n", int(o.type), o.axis, o.amount);
  for (const GpuOpt& o : c.gpu_opts)
    s += fmt::format("g {} {} {}\n", int(o.type), o.axis, o.amount);
  return s;
}

std::optional<ChosenOpts> parse_opts(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  if (!std::getline(in, line) || line != "opts v1") return std::nullopt;
  ChosenOpts c;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    char kind = 0;
    int type = -1;
    int64_t axis = 0, amount = 0;
    std::string rest;
    if (!(l >> kind >> type >> axis >> amount) || (l >> rest) || type < 0) return std::nullopt;
    if (kind == 'o' && type <= int(OptType::Split))
      c.opts.push_back({static_cast<OptType>(type), axis, amount});
    else if (kind == 'g' && type <= int(GpuOptType::Upcast))
      c.gpu_opts.push_back({static_cast<GpuOptType>(type), axis, amount});
    else
      return std::nullopt;
  }
  return c;
}

std::optional<ChosenOpts> remembered_opts(ProgramCache& cache, const UOp& ast,
                                          const CodegenTarget& target, int64_t max_threads) {
  if (heuristics_build().empty()) return std::nullopt;  // no build id: nothing tells builds apart
  std::optional<Bytes> bytes = cache.get(key_of(ast, target, max_threads));
  if (!bytes) return std::nullopt;
  return parse_opts(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
}

void remember_opts(ProgramCache& cache, const UOp& ast, const CodegenTarget& target,
                   int64_t max_threads, const ChosenOpts& chosen) {
  if (heuristics_build().empty()) return;
  const std::string text = serialize_opts(chosen);
  cache.put(key_of(ast, target, max_threads), Bytes(text.begin(), text.end()));
}

}  // namespace ugrad
