#include "runtime/amd/amd_code_object.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "runtime/amd/amd_msgpack.h"

namespace ugrad {

namespace {

// ELF64 constants (System V gABI; AMDGPU values from the LLVM AMDGPUUsage document).
constexpr uint16_t kEtDyn = 3;
constexpr uint16_t kEmAmdgpu = 224;
constexpr uint8_t kOsAbiAmdgpuHsa = 64;
constexpr uint32_t kShtSymtab = 2, kShtNote = 7, kShtNobits = 8, kShtDynsym = 11;
constexpr uint32_t kNtAmdgpuMetadata = 32;
constexpr uint32_t kEfAmdgpuMach = 0xff;
constexpr size_t kEhdrSize = 64, kShdrSize = 64, kSymSize = 24, kKernelDescriptorSize = 64;
constexpr uint32_t kMaxLds = 64 * 1024;

struct MachName {
  uint32_t mach;
  std::string_view name;
};
constexpr MachName kMachNames[] = {
    {0x041, "gfx1100"}, {0x046, "gfx1101"}, {0x047, "gfx1102"},
    {0x048, "gfx1200"}, {0x04e, "gfx1201"},
};

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t addr = 0, offset = 0, size = 0;
  uint32_t link = 0;
  uint64_t entsize = 0;
};

// Bounds-checked little-endian reads from the file image.
class Image {
 public:
  Image(std::span<const uint8_t> bytes, std::string_view what) : bytes_(bytes), what_(what) {}
  void need(uint64_t offset, uint64_t size, std::string_view field) const {
    if (offset > bytes_.size() || size > bytes_.size() - offset)
      fail("amdgpu: {}: {} at byte {} (+{}) is outside the file ({} bytes)", what_, field, offset,
           size, bytes_.size());
  }
  template <typename T>
  T read(uint64_t offset, std::string_view field) const {
    need(offset, sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + offset, sizeof(T));
    return v;
  }
  std::span<const uint8_t> slice(uint64_t offset, uint64_t size, std::string_view field) const {
    need(offset, size, field);
    return bytes_.subspan(offset, size);
  }
  std::string cstr(uint64_t table_offset, uint64_t table_size, uint32_t index,
                   std::string_view field) const {
    if (index >= table_size)
      fail("amdgpu: {}: {} name index {} is outside its string table", what_, field, index);
    auto table = slice(table_offset, table_size, field);
    auto begin = table.begin() + index;
    auto end = std::find(begin, table.end(), uint8_t{0});
    if (end == table.end()) fail("amdgpu: {}: {} name is not NUL-terminated", what_, field);
    return std::string(begin, end);
  }
  std::string_view what() const { return what_; }

 private:
  std::span<const uint8_t> bytes_;
  std::string_view what_;
};

AmdArgKind arg_kind_of(std::string_view s) {
  static constexpr std::pair<std::string_view, AmdArgKind> kKinds[] = {
      {"global_buffer", AmdArgKind::GlobalBuffer},
      {"by_value", AmdArgKind::ByValue},
      {"hidden_global_offset_x", AmdArgKind::HiddenGlobalOffsetX},
      {"hidden_global_offset_y", AmdArgKind::HiddenGlobalOffsetY},
      {"hidden_global_offset_z", AmdArgKind::HiddenGlobalOffsetZ},
      {"hidden_block_count_x", AmdArgKind::HiddenBlockCountX},
      {"hidden_block_count_y", AmdArgKind::HiddenBlockCountY},
      {"hidden_block_count_z", AmdArgKind::HiddenBlockCountZ},
      {"hidden_group_size_x", AmdArgKind::HiddenGroupSizeX},
      {"hidden_group_size_y", AmdArgKind::HiddenGroupSizeY},
      {"hidden_group_size_z", AmdArgKind::HiddenGroupSizeZ},
      {"hidden_remainder_x", AmdArgKind::HiddenRemainderX},
      {"hidden_remainder_y", AmdArgKind::HiddenRemainderY},
      {"hidden_remainder_z", AmdArgKind::HiddenRemainderZ},
  };
  for (auto [name, kind] : kKinds)
    if (name == s) return kind;
  return s.starts_with("hidden_") ? AmdArgKind::HiddenOther : AmdArgKind::Other;
}

uint32_t u32_field(const MsgPackValue& map, std::string_view key, std::string_view what,
                   bool required, uint32_t fallback = 0) {
  const MsgPackValue* v = map.find(key);
  if (!v) {
    if (required) fail("amdgpu: {}: metadata lacks {}", what, key);
    return fallback;
  }
  uint64_t u = v->as_uint(fmt::format("{} {}", what, key));
  if (u > UINT32_MAX) fail("amdgpu: {}: metadata {} = {} does not fit 32 bits", what, key, u);
  return static_cast<uint32_t>(u);
}

std::string str_field(const MsgPackValue& map, std::string_view key, std::string_view what) {
  const MsgPackValue* v = map.find(key);
  return v ? v->as_str(fmt::format("{} {}", what, key)) : std::string();
}

AmdKernelInfo kernel_of_metadata(const MsgPackValue& k, std::string_view what) {
  if (k.kind != MsgPackValue::Kind::Map)
    fail("amdgpu: {}: amdhsa.kernels entry is not a map", what);
  AmdKernelInfo info;
  info.name = str_field(k, ".name", what);
  if (info.name.empty()) fail("amdgpu: {}: a kernel has no .name", what);
  std::string kw = fmt::format("{} kernel '{}'", what, info.name);
  info.symbol = str_field(k, ".symbol", kw);
  info.kernarg_size = u32_field(k, ".kernarg_segment_size", kw, true);
  info.kernarg_align = u32_field(k, ".kernarg_segment_align", kw, true);
  info.group_segment_size = u32_field(k, ".group_segment_fixed_size", kw, true);
  info.private_segment_size = u32_field(k, ".private_segment_fixed_size", kw, true);
  info.wavefront_size = u32_field(k, ".wavefront_size", kw, true);
  info.sgpr_count = u32_field(k, ".sgpr_count", kw, true);
  info.vgpr_count = u32_field(k, ".vgpr_count", kw, true);
  info.sgpr_spill_count = u32_field(k, ".sgpr_spill_count", kw, false);
  info.vgpr_spill_count = u32_field(k, ".vgpr_spill_count", kw, false);
  info.max_flat_workgroup_size = u32_field(k, ".max_flat_workgroup_size", kw, true);
  if (const MsgPackValue* args = k.find(".args")) {
    if (args->kind != MsgPackValue::Kind::Array) fail("amdgpu: {}: .args is not an array", kw);
    for (const MsgPackValue& a : args->array) {
      if (a.kind != MsgPackValue::Kind::Map) fail("amdgpu: {}: an .args entry is not a map", kw);
      AmdKernelArg arg;
      arg.name = str_field(a, ".name", kw);
      std::string aw = fmt::format("{} arg {}", kw, info.args.size());
      arg.offset = u32_field(a, ".offset", aw, true);
      arg.size = u32_field(a, ".size", aw, true);
      arg.value_kind = str_field(a, ".value_kind", aw);
      arg.kind = arg_kind_of(arg.value_kind);
      arg.address_space = str_field(a, ".address_space", aw);
      arg.access = str_field(a, ".access", aw);
      if (arg.access.empty()) arg.access = str_field(a, ".actual_access", aw);
      info.args.push_back(std::move(arg));
    }
  }
  return info;
}

}  // namespace

std::string_view amd_arg_kind_name(AmdArgKind kind) {
  switch (kind) {
    case AmdArgKind::GlobalBuffer:
      return "global_buffer";
    case AmdArgKind::ByValue:
      return "by_value";
    case AmdArgKind::HiddenGlobalOffsetX:
      return "hidden_global_offset_x";
    case AmdArgKind::HiddenGlobalOffsetY:
      return "hidden_global_offset_y";
    case AmdArgKind::HiddenGlobalOffsetZ:
      return "hidden_global_offset_z";
    case AmdArgKind::HiddenBlockCountX:
      return "hidden_block_count_x";
    case AmdArgKind::HiddenBlockCountY:
      return "hidden_block_count_y";
    case AmdArgKind::HiddenBlockCountZ:
      return "hidden_block_count_z";
    case AmdArgKind::HiddenGroupSizeX:
      return "hidden_group_size_x";
    case AmdArgKind::HiddenGroupSizeY:
      return "hidden_group_size_y";
    case AmdArgKind::HiddenGroupSizeZ:
      return "hidden_group_size_z";
    case AmdArgKind::HiddenRemainderX:
      return "hidden_remainder_x";
    case AmdArgKind::HiddenRemainderY:
      return "hidden_remainder_y";
    case AmdArgKind::HiddenRemainderZ:
      return "hidden_remainder_z";
    case AmdArgKind::HiddenOther:
      return "hidden_other";
    case AmdArgKind::Other:
      return "other";
  }
  return "other";
}

bool amd_arg_is_hidden(AmdArgKind kind) {
  return kind != AmdArgKind::GlobalBuffer && kind != AmdArgKind::ByValue &&
         kind != AmdArgKind::Other;
}

std::string_view amd_arch_of_elf_mach(uint32_t mach) {
  for (auto [m, name] : kMachNames)
    if (m == mach) return name;
  return {};
}

std::vector<const AmdKernelArg*> AmdKernelInfo::explicit_args() const {
  std::vector<const AmdKernelArg*> out;
  for (const auto& a : args)
    if (!amd_arg_is_hidden(a.kind)) out.push_back(&a);
  return out;
}

const AmdKernelInfo& AmdCodeObject::kernel(std::string_view name) const {
  for (const auto& k : kernels)
    if (k.name == name) return k;
  std::string names;
  for (const auto& k : kernels) names += fmt::format("{}{}", names.empty() ? "" : ", ", k.name);
  fail("amdgpu: code object has no kernel '{}' (has: {})", name, names);
}

AmdCodeObject parse_amd_code_object(std::span<const uint8_t> elf, std::string_view what) {
  Image img(elf, what);
  img.need(0, kEhdrSize, "ELF header");
  if (std::memcmp(elf.data(),
                  "\x7f"
                  "ELF",
                  4) != 0)
    fail("amdgpu: {}: not an ELF file", what);
  if (elf[4] != 2 || elf[5] != 1) fail("amdgpu: {}: not a little-endian ELF64 file", what);
  AmdCodeObject co;
  if (elf[7] != kOsAbiAmdgpuHsa) fail("amdgpu: {}: OS ABI {} is not AMDGPU_HSA (64)", what, elf[7]);
  co.abi_version = elf[8];
  if (co.abi_version == 2)
    co.code_object_version = 4;
  else if (co.abi_version == 3)
    co.code_object_version = 5;
  else
    fail("amdgpu: {}: ABI version {} is not code object v4 (2) or v5 (3)", what, co.abi_version);
  auto e_type = img.read<uint16_t>(16, "e_type");
  auto e_machine = img.read<uint16_t>(18, "e_machine");
  if (e_machine != kEmAmdgpu)
    fail("amdgpu: {}: e_machine {} is not EM_AMDGPU (224)", what, e_machine);
  if (e_type != kEtDyn)
    fail("amdgpu: {}: e_type {} is not ET_DYN (3): was it linked?", what, e_type);
  co.elf_flags = img.read<uint32_t>(48, "e_flags");
  co.arch = std::string(amd_arch_of_elf_mach(co.elf_flags & kEfAmdgpuMach));
  if (co.arch.empty())
    fail("amdgpu: {}: EF_AMDGPU_MACH 0x{:x} is not an architecture ugrad knows", what,
         co.elf_flags & kEfAmdgpuMach);

  auto shoff = img.read<uint64_t>(40, "e_shoff");
  auto shentsize = img.read<uint16_t>(58, "e_shentsize");
  auto shnum = img.read<uint16_t>(60, "e_shnum");
  auto shstrndx = img.read<uint16_t>(62, "e_shstrndx");
  if (shentsize != kShdrSize) fail("amdgpu: {}: e_shentsize {} is not 64", what, shentsize);
  if (shstrndx >= shnum) fail("amdgpu: {}: e_shstrndx {} >= e_shnum {}", what, shstrndx, shnum);
  img.need(shoff, uint64_t{shnum} * kShdrSize, "section header table");
  std::vector<Section> sections(shnum);
  for (uint32_t i = 0; i < shnum; ++i) {
    uint64_t at = shoff + uint64_t{i} * kShdrSize;
    Section& s = sections[i];
    s.type = img.read<uint32_t>(at + 4, "sh_type");
    s.addr = img.read<uint64_t>(at + 16, "sh_addr");
    s.offset = img.read<uint64_t>(at + 24, "sh_offset");
    s.size = img.read<uint64_t>(at + 32, "sh_size");
    s.link = img.read<uint32_t>(at + 40, "sh_link");
    s.entsize = img.read<uint64_t>(at + 56, "sh_entsize");
    if (s.type != kShtNobits) img.need(s.offset, s.size, fmt::format("section {}", i));
  }
  const Section& shstr = sections[shstrndx];
  for (uint32_t i = 0; i < shnum; ++i) {
    auto name_index = img.read<uint32_t>(shoff + uint64_t{i} * kShdrSize, "sh_name");
    sections[i].name = img.cstr(shstr.offset, shstr.size, name_index, "section");
  }

  // The metadata note.
  const MsgPackValue* metadata_root = nullptr;
  MsgPackValue metadata;
  for (const Section& s : sections) {
    if (s.type != kShtNote) continue;
    uint64_t at = s.offset, end = s.offset + s.size;
    while (at + 12 <= end) {
      auto namesz = img.read<uint32_t>(at, "note namesz");
      auto descsz = img.read<uint32_t>(at + 4, "note descsz");
      auto type = img.read<uint32_t>(at + 8, "note type");
      uint64_t name_at = at + 12;
      uint64_t desc_at = name_at + ((uint64_t{namesz} + 3) & ~uint64_t{3});
      uint64_t next = desc_at + ((uint64_t{descsz} + 3) & ~uint64_t{3});
      if (next > end) fail("amdgpu: {}: note overruns section {}", what, s.name);
      auto name = img.slice(name_at, namesz, "note name");
      bool amdgpu_owner = namesz == 7 && std::memcmp(name.data(), "AMDGPU", 7) == 0;
      if (amdgpu_owner && type == kNtAmdgpuMetadata) {
        if (metadata_root) fail("amdgpu: {}: two NT_AMDGPU_METADATA notes", what);
        metadata = parse_msgpack(img.slice(desc_at, descsz, "metadata note"),
                                 fmt::format("{} metadata", what));
        metadata_root = &metadata;
      }
      at = next;
    }
  }
  if (!metadata_root) fail("amdgpu: {}: no NT_AMDGPU_METADATA note", what);
  if (metadata.kind != MsgPackValue::Kind::Map) fail("amdgpu: {}: metadata is not a map", what);
  if (const MsgPackValue* v = metadata.find("amdhsa.version")) {
    for (const auto& e : v->array) co.amdhsa_version.push_back(e.as_uint("amdhsa.version"));
  }
  if (co.amdhsa_version.size() != 2 || co.amdhsa_version[0] != 1)
    fail("amdgpu: {}: amdhsa.version is missing or not [1, x]", what);
  co.target = str_field(metadata, "amdhsa.target", what);
  const MsgPackValue* kernels = metadata.find("amdhsa.kernels");
  if (!kernels || kernels->kind != MsgPackValue::Kind::Array)
    fail("amdgpu: {}: metadata has no amdhsa.kernels array", what);
  for (const MsgPackValue& k : kernels->array) co.kernels.push_back(kernel_of_metadata(k, what));

  // .text, for the disassembler and for descriptor entry offsets.
  for (const Section& s : sections)
    if (s.name == ".text") {
      co.text_address = s.addr;
      co.text_offset = s.offset;
      co.text_size = s.size;
    }

  // Kernel descriptors: look up <name>.kd in the symbol tables and read 64 bytes at its address.
  auto file_offset_of = [&](uint64_t addr, uint64_t size) -> uint64_t {
    for (const Section& s : sections)
      if (s.type != kShtNobits && s.addr != 0 && addr >= s.addr && addr - s.addr <= s.size &&
          size <= s.size - (addr - s.addr))
        return s.offset + (addr - s.addr);
    fail("amdgpu: {}: address 0x{:x} (+{}) is in no section", what, addr, size);
  };
  for (AmdKernelInfo& k : co.kernels) {
    std::string want = k.symbol.empty() ? k.name + ".kd" : k.symbol;
    bool found = false;
    for (const Section& s : sections) {
      if ((s.type != kShtSymtab && s.type != kShtDynsym) || found) continue;
      if (s.entsize != kSymSize || s.link >= sections.size())
        fail("amdgpu: {}: bad symbol table {}", what, s.name);
      const Section& strtab = sections[s.link];
      for (uint64_t at = s.offset; at + kSymSize <= s.offset + s.size; at += kSymSize) {
        auto st_name = img.read<uint32_t>(at, "st_name");
        if (st_name == 0 || img.cstr(strtab.offset, strtab.size, st_name, "symbol") != want)
          continue;
        k.descriptor_address = img.read<uint64_t>(at + 8, "st_value");
        found = true;
        break;
      }
    }
    if (!found) fail("amdgpu: {}: kernel '{}' has no descriptor symbol '{}'", what, k.name, want);
    uint64_t kd = file_offset_of(k.descriptor_address, kKernelDescriptorSize);
    AmdKernelDescriptor& d = k.descriptor;
    d.group_segment_fixed_size = img.read<uint32_t>(kd + 0, "kd");
    d.private_segment_fixed_size = img.read<uint32_t>(kd + 4, "kd");
    d.kernarg_size = img.read<uint32_t>(kd + 8, "kd");
    d.kernel_code_entry_byte_offset = img.read<int64_t>(kd + 16, "kd");
    d.compute_pgm_rsrc3 = img.read<uint32_t>(kd + 44, "kd");
    d.compute_pgm_rsrc1 = img.read<uint32_t>(kd + 48, "kd");
    d.compute_pgm_rsrc2 = img.read<uint32_t>(kd + 52, "kd");
    d.kernel_code_properties = img.read<uint16_t>(kd + 56, "kd");
    // The entry point must land inside .text.
    uint64_t entry = k.descriptor_address + static_cast<uint64_t>(d.kernel_code_entry_byte_offset);
    if (co.text_size == 0 || entry < co.text_address || entry >= co.text_address + co.text_size)
      fail("amdgpu: {}: kernel '{}' entry 0x{:x} is outside .text", what, k.name, entry);
  }
  return co;
}

void validate_amd_kernel(const AmdKernelInfo& k, size_t num_buffers, size_t num_scalars,
                         std::span<const uint32_t> scalar_sizes) {
  const std::string& n = k.name;
  if (!scalar_sizes.empty() && scalar_sizes.size() != num_scalars)
    internal_error("validate_amd_kernel: {} scalar sizes for {} scalars", scalar_sizes.size(),
                   num_scalars);
  if (k.wavefront_size != 32 || !k.descriptor.wavefront_size32())
    fail("amdgpu: kernel '{}' is not wave32 (metadata wavefront_size {}, descriptor bit {})", n,
         k.wavefront_size, k.descriptor.wavefront_size32());
  if (k.descriptor.kernarg_size != k.kernarg_size)
    fail("amdgpu: kernel '{}': descriptor kernarg_size {} != metadata {}", n,
         k.descriptor.kernarg_size, k.kernarg_size);
  if (k.descriptor.group_segment_fixed_size != k.group_segment_size)
    fail("amdgpu: kernel '{}': descriptor LDS size {} != metadata {}", n,
         k.descriptor.group_segment_fixed_size, k.group_segment_size);
  if (k.group_segment_size > kMaxLds)
    fail("amdgpu: kernel '{}' uses {} bytes of LDS; the limit is {}", n, k.group_segment_size,
         kMaxLds);
  if (k.max_flat_workgroup_size == 0 || k.max_flat_workgroup_size > 1024)
    fail("amdgpu: kernel '{}': max_flat_workgroup_size {} is not in 1..1024", n,
         k.max_flat_workgroup_size);
  if (k.kernarg_align == 0 || (k.kernarg_align & (k.kernarg_align - 1)) != 0)
    fail("amdgpu: kernel '{}': kernarg alignment {} is not a power of two", n, k.kernarg_align);
  uint64_t end = 0;
  for (size_t i = 0; i < k.args.size(); ++i) {
    const AmdKernelArg& a = k.args[i];
    if (a.size == 0) fail("amdgpu: kernel '{}': arg {} ('{}') has size 0", n, i, a.name);
    if (a.offset < end)
      fail(
          "amdgpu: kernel '{}': arg {} ('{}') at offset {} overlaps or precedes the previous one "
          "(ends at {})",
          n, i, a.name, a.offset, end);
    uint32_t natural = std::min<uint32_t>(a.size, 8);
    if ((natural & (natural - 1)) == 0 && a.offset % natural != 0)
      fail("amdgpu: kernel '{}': arg {} ('{}') offset {} is not {}-aligned", n, i, a.name, a.offset,
           natural);
    end = uint64_t{a.offset} + a.size;
    if (end > k.kernarg_size)
      fail("amdgpu: kernel '{}': arg {} ('{}') ends at {} past kernarg_size {}", n, i, a.name, end,
           k.kernarg_size);
  }
  auto explicit_args = k.explicit_args();
  if (explicit_args.size() != num_buffers + num_scalars)
    fail("amdgpu: kernel '{}' has {} explicit args; the caller passes {} buffers + {} scalars", n,
         explicit_args.size(), num_buffers, num_scalars);
  for (size_t i = 0; i < explicit_args.size(); ++i) {
    const AmdKernelArg& a = *explicit_args[i];
    if (i < num_buffers) {
      if (a.kind != AmdArgKind::GlobalBuffer || a.size != 8)
        fail(
            "amdgpu: kernel '{}': arg {} ('{}') should be an 8-byte global buffer, is {} of {} "
            "bytes",
            n, i, a.name, a.value_kind, a.size);
    } else if (a.kind != AmdArgKind::ByValue || a.size == 0 || a.size > 8) {
      fail(
          "amdgpu: kernel '{}': arg {} ('{}') should be a by_value scalar of 1..8 bytes, is {} of "
          "{} bytes",
          n, i, a.name, a.value_kind, a.size);
    } else if (!scalar_sizes.empty() && a.size != scalar_sizes[i - num_buffers]) {
      fail("amdgpu: kernel '{}': arg {} ('{}') is {} bytes, the caller passes {}", n, i, a.name,
           a.size, scalar_sizes[i - num_buffers]);
    }
  }
}

}  // namespace ugrad
