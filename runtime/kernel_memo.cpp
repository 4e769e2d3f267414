#include "runtime/kernel_memo.h"

#include <elf.h>
#include <link.h>

#include <cstring>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "base/env.h"
#include "base/error.h"
#include "base/sha256.h"

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

const std::string& codegen_build() {
  static const std::string id = build_id_of(reinterpret_cast<const void*>(&heuristic_opts));
  return id;
}

// SHA-256 over the AST's nodes in toposort order: each node's structural hash and the positions
// of its sources, so equal digests mean equal structures (not just one 64-bit hash).
std::string digest_of(const UOp& ast) {
  const std::vector<UOp> nodes = ast.toposort();
  std::unordered_map<const UOpNode*, uint64_t> position;
  Sha256 h;
  for (const UOp& u : nodes) {
    const uint64_t hash = u.hash(), n = u.src().size();
    h.update(&hash, sizeof(hash));
    h.update(&n, sizeof(n));
    for (const UOp& s : u.src()) {
      const uint64_t at = position.at(s.node());
      h.update(&at, sizeof(at));
    }
    position.emplace(u.node(), position.size());
  }
  std::string hex;
  for (uint8_t b : h.finish()) hex += fmt::format("{:02x}", b);
  return hex;
}

// The key's parts: what the AST is, the target's every field, and what else codegen reads.
std::string key_of(const UOp& ast, const CodegenTarget& t, int64_t max_threads) {
  const std::string target = fmt::format(
      "{} {} gpu={} simd={} half={} bf16={} wave={} lds={} wmma={} dot4={} prefetch={} "
      "permute={} vnni={} byte_shuffle={} as={},{}",
      t.name, t.triple, t.is_gpu, t.simd_bytes, t.native_half, t.native_bfloat16, t.wave_size,
      t.max_local_bytes, t.has_wmma, t.has_dot4, t.prefetch_bytes, t.has_lane_permute, t.has_vnni,
      t.byte_shuffle_words, t.global_address_space, t.local_address_space);
  const std::string threads =
      fmt::format("threads {} knob {} cores {}", max_threads, knob_int(Knob::THREADS),
                  std::thread::hardware_concurrency());
  return ProgramCache::make_key("codegen of kernel AST " + digest_of(ast), target,
                                "build " + codegen_build() + " " + threads);
}

}  // namespace

std::string serialize_kernel(const RememberedKernel& k) {
  std::string s = "kernel memo v1\n";
  for (const Opt& o : k.opts) s += fmt::format("o {} {} {}\n", int(o.type), o.axis, o.amount);
  for (const GpuOpt& o : k.gpu_opts)
    s += fmt::format("g {} {} {}\n", int(o.type), o.axis, o.amount);
  if (k.kernel) {
    const StoredKernel& sk = *k.kernel;
    s += fmt::format("name {}\nentry {}\nthreads {}\n", sk.name, sk.entry, sk.cpu_threads);
    s += "src\n" + sk.src;
  }
  return s;
}

std::optional<RememberedKernel> parse_kernel(std::string_view text) {
  const std::string_view header = "kernel memo v1\n";
  if (!text.starts_with(header)) return std::nullopt;
  text.remove_prefix(header.size());
  RememberedKernel k;
  StoredKernel sk;
  bool named = false, entered = false, threaded = false;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) return std::nullopt;
    const std::string line(text.substr(0, end));
    text.remove_prefix(end + 1);
    if (line == "src") {
      if (!named || !entered || !threaded) return std::nullopt;
      sk.src = std::string(text);
      sk.opts = k.opts;
      k.kernel = std::move(sk);
      return k;
    }
    std::istringstream l(line);
    std::string kind, rest;
    l >> kind;
    if (kind == "name" || kind == "entry") {
      std::string v;
      if (!(l >> v) || (l >> rest)) return std::nullopt;
      (kind == "name" ? sk.name : sk.entry) = v;
      (kind == "name" ? named : entered) = true;
      continue;
    }
    if (kind == "threads") {
      if (!(l >> sk.cpu_threads) || (l >> rest) || sk.cpu_threads < 1) return std::nullopt;
      threaded = true;
      continue;
    }
    int type = -1;
    int64_t axis = 0, amount = 0;
    if (!(l >> type >> axis >> amount) || (l >> rest) || type < 0) return std::nullopt;
    if (kind == "o" && type <= int(OptType::Split))
      k.opts.push_back({static_cast<OptType>(type), axis, amount});
    else if (kind == "g" && type <= int(GpuOptType::Upcast))
      k.gpu_opts.push_back({static_cast<GpuOptType>(type), axis, amount});
    else
      return std::nullopt;
  }
  if (named || entered || threaded) return std::nullopt;  // a source's lines without the source
  return k;
}

namespace {

std::optional<RememberedKernel> read_entry(ProgramCache& cache, const std::string& key) {
  if (codegen_build().empty()) return std::nullopt;  // no build id: nothing tells builds apart
  std::optional<Bytes> bytes = cache.get(key);
  if (!bytes) return std::nullopt;
  return parse_kernel(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
}

void write_entry(ProgramCache& cache, const std::string& key, const RememberedKernel& k) {
  if (codegen_build().empty()) return;
  const std::string text = serialize_kernel(k);
  cache.put(key, Bytes(text.begin(), text.end()));
}

}  // namespace

std::optional<RememberedKernel> remembered_kernel(ProgramCache& cache, const UOp& ast,
                                                  const CodegenTarget& target,
                                                  int64_t max_threads) {
  return read_entry(cache, key_of(ast, target, max_threads));
}

void remember_kernel(ProgramCache& cache, const UOp& ast, const CodegenTarget& target,
                     int64_t max_threads, const RememberedKernel& k) {
  write_entry(cache, key_of(ast, target, max_threads), k);
}

KernelSource remembered_codegen(const UOp& ast, const CodegenTarget& target) {
  if (knob_int(Knob::NOOPT) != 0) return codegen(ast, target);
  ProgramCache& cache = ProgramCache::instance();
  const std::string key = key_of(ast, target, 0);
  const bool whole = !target.is_gpu && debug_level() < 2;
  if (std::optional<RememberedKernel> k = read_entry(cache, key)) {
    try {
      if (whole && k->kernel) return restore_kernel(ast, *k->kernel);
      return codegen(ast, target, {.opts = k->opts, .gpu_opts = k->gpu_opts});
    } catch (const Error&) {  // another AST's entry under a colliding key: start afresh
    }
  }
  KernelSource ks = codegen(ast, target);
  RememberedKernel k{ks.opts, ks.gpu_opts, std::nullopt};
  if (!target.is_gpu) k.kernel = stored_kernel(ks);
  write_entry(cache, key, k);
  return ks;
}

}  // namespace ugrad
