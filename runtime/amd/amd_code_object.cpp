#include "runtime/amd/amd_code_object.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELF.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace ugrad {

namespace {

// The ELF file is read by LLVM's reader (llvm/Object/ELF.h), which checks every offset and size
// it reads against the file; the metadata note by LLVM's MessagePack reader.
using Elf = llvm::object::ELF64LEFile;
using llvm::msgpack::DocNode;

constexpr size_t kKernelDescriptorSize = 64;
constexpr uint32_t kMaxLds = 64 * 1024;

struct MachName {
  uint32_t mach;
  std::string_view name;
};
constexpr MachName kMachNames[] = {
    {0x041, "gfx1100"}, {0x046, "gfx1101"}, {0x047, "gfx1102"},
    {0x048, "gfx1200"}, {0x04e, "gfx1201"},
};

// The value of an LLVM Expected, or an Error naming `what` and the field with LLVM's message.
template <typename T>
T take(llvm::Expected<T> v, std::string_view what, std::string_view field) {
  if (!v) fail("amdgpu: {}: {}: {}", what, field, llvm::toString(v.takeError()));
  return std::move(*v);
}

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

// The value at `key` of a metadata map; nullptr if absent or `map` is not a map.
const DocNode* field(DocNode map, std::string_view key) {
  if (!map.isMap()) return nullptr;
  auto& m = map.getMap();
  auto it = m.find(llvm::StringRef(key.data(), key.size()));
  return it == m.end() ? nullptr : &it->second;
}

uint64_t as_uint(const DocNode& v, std::string_view what) {
  if (v.getKind() == llvm::msgpack::Type::UInt) return v.getUInt();
  if (v.getKind() == llvm::msgpack::Type::Int && v.getInt() >= 0)
    return static_cast<uint64_t>(v.getInt());
  fail("amdgpu: {} is not a non-negative integer", what);
}

uint32_t u32_field(const DocNode& map, std::string_view key, std::string_view what, bool required,
                   uint32_t fallback = 0) {
  const DocNode* v = field(map, key);
  if (!v) {
    if (required) fail("amdgpu: {}: metadata lacks {}", what, key);
    return fallback;
  }
  uint64_t u = as_uint(*v, fmt::format("{} {}", what, key));
  if (u > UINT32_MAX) fail("amdgpu: {}: metadata {} = {} does not fit 32 bits", what, key, u);
  return static_cast<uint32_t>(u);
}

std::string str_field(const DocNode& map, std::string_view key, std::string_view what) {
  const DocNode* v = field(map, key);
  if (!v) return std::string();
  if (!v->isString()) fail("amdgpu: {} {} is not a string", what, key);
  return v->getString().str();
}

// The elements of an array node ("what" names it in the error when it is not one).
std::vector<DocNode> elements(DocNode v, std::string_view what) {
  if (!v.isArray()) fail("amdgpu: {} is not an array", what);
  auto& a = v.getArray();
  return std::vector<DocNode>(a.begin(), a.end());
}

AmdKernelInfo kernel_of_metadata(const DocNode& k, std::string_view what) {
  if (!k.isMap()) fail("amdgpu: {}: amdhsa.kernels entry is not a map", what);
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
  if (const DocNode* args = field(k, ".args")) {
    for (const DocNode& a : elements(*args, fmt::format("{}: .args", kw))) {
      if (!a.isMap()) fail("amdgpu: {}: an .args entry is not a map", kw);
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
  if (elf.size() < sizeof(llvm::ELF::Elf64_Ehdr) || std::memcmp(elf.data(), llvm::ELF::ElfMagic, 4))
    fail("amdgpu: {}: not an ELF file", what);
  if (elf[llvm::ELF::EI_CLASS] != llvm::ELF::ELFCLASS64 ||
      elf[llvm::ELF::EI_DATA] != llvm::ELF::ELFDATA2LSB)
    fail("amdgpu: {}: not a little-endian ELF64 file", what);
  AmdCodeObject co;
  const uint8_t os_abi = elf[llvm::ELF::EI_OSABI];
  if (os_abi != llvm::ELF::ELFOSABI_AMDGPU_HSA)
    fail("amdgpu: {}: OS ABI {} is not AMDGPU_HSA (64)", what, os_abi);
  co.abi_version = elf[llvm::ELF::EI_ABIVERSION];
  if (co.abi_version == llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V4)
    co.code_object_version = 4;
  else if (co.abi_version == llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V5)
    co.code_object_version = 5;
  else
    fail("amdgpu: {}: ABI version {} is not code object v4 (2) or v5 (3)", what, co.abi_version);
  const Elf file =
      take(Elf::create(llvm::StringRef(reinterpret_cast<const char*>(elf.data()), elf.size())),
           what, "ELF header");
  const auto& header = file.getHeader();
  if (header.e_machine != llvm::ELF::EM_AMDGPU)
    fail("amdgpu: {}: e_machine {} is not EM_AMDGPU (224)", what, uint16_t(header.e_machine));
  if (header.e_type != llvm::ELF::ET_DYN)
    fail("amdgpu: {}: e_type {} is not ET_DYN (3): was it linked?", what, uint16_t(header.e_type));
  co.elf_flags = header.e_flags;
  const uint32_t mach = co.elf_flags & llvm::ELF::EF_AMDGPU_MACH;
  co.arch = std::string(amd_arch_of_elf_mach(mach));
  if (co.arch.empty())
    fail("amdgpu: {}: EF_AMDGPU_MACH 0x{:x} is not an architecture ugrad knows", what, mach);
  const auto sections = take(file.sections(), what, "section headers");

  // The metadata note, a MessagePack map.
  std::vector<llvm::StringRef> blobs;
  for (const auto& s : sections) {
    if (s.sh_type != llvm::ELF::SHT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto& note : file.notes(s, err))
      if (note.getName() == "AMDGPU" && note.getType() == llvm::ELF::NT_AMDGPU_METADATA)
        blobs.push_back(note.getDescAsStringRef(s.sh_addralign == 8 ? 8 : 4));
    if (err) fail("amdgpu: {}: notes: {}", what, llvm::toString(std::move(err)));
  }
  if (blobs.empty()) fail("amdgpu: {}: no NT_AMDGPU_METADATA note", what);
  if (blobs.size() > 1) fail("amdgpu: {}: two NT_AMDGPU_METADATA notes", what);
  llvm::msgpack::Document metadata;
  if (!metadata.readFromBlob(blobs[0], /*Multi=*/false))
    fail("amdgpu: {}: the metadata note is not a MessagePack document", what);
  const DocNode root = metadata.getRoot();
  if (!root.isMap()) fail("amdgpu: {}: metadata is not a map", what);
  if (const DocNode* v = field(root, "amdhsa.version"))
    for (const DocNode& e : elements(*v, "amdhsa.version"))
      co.amdhsa_version.push_back(as_uint(e, "amdhsa.version"));
  if (co.amdhsa_version.size() != 2 || co.amdhsa_version[0] != 1)
    fail("amdgpu: {}: amdhsa.version is missing or not [1, x]", what);
  co.target = str_field(root, "amdhsa.target", what);
  const DocNode* kernels = field(root, "amdhsa.kernels");
  if (!kernels || !kernels->isArray())
    fail("amdgpu: {}: metadata has no amdhsa.kernels array", what);
  for (const DocNode& k : elements(*kernels, "amdhsa.kernels"))
    co.kernels.push_back(kernel_of_metadata(k, what));

  // .text, for the disassembler and for descriptor entry offsets.
  for (const auto& s : sections)
    if (take(file.getSectionName(s), what, "section name") == ".text") {
      co.text_address = s.sh_addr;
      co.text_offset = s.sh_offset;
      co.text_size = s.sh_size;
    }

  // Kernel descriptors: <name>.kd in the symbol tables, 64 bytes at its address.
  auto bytes_at = [&](uint64_t addr, uint64_t size) -> std::span<const uint8_t> {
    for (const auto& s : sections)
      if (s.sh_type != llvm::ELF::SHT_NOBITS && s.sh_addr != 0 && addr >= s.sh_addr &&
          addr - s.sh_addr <= s.sh_size && size <= s.sh_size - (addr - s.sh_addr)) {
        const auto contents = take(file.getSectionContents(s), what, "section contents");
        return std::span(contents.data(), contents.size()).subspan(addr - s.sh_addr, size);
      }
    fail("amdgpu: {}: address 0x{:x} (+{}) is in no section", what, addr, size);
  };
  for (AmdKernelInfo& k : co.kernels) {
    const std::string want = k.symbol.empty() ? k.name + ".kd" : k.symbol;
    bool found = false;
    for (const auto& s : sections) {
      if ((s.sh_type != llvm::ELF::SHT_SYMTAB && s.sh_type != llvm::ELF::SHT_DYNSYM) || found)
        continue;
      const auto symbols = take(file.symbols(&s), what, "symbol table");
      const llvm::StringRef strtab = take(file.getStringTableForSymtab(s), what, "symbol names");
      for (const auto& sym : symbols) {
        if (sym.st_name == 0 || take(sym.getName(strtab), what, "symbol name") != want) continue;
        k.descriptor_address = sym.st_value;
        found = true;
        break;
      }
    }
    if (!found) fail("amdgpu: {}: kernel '{}' has no descriptor symbol '{}'", what, k.name, want);
    const std::span<const uint8_t> kd = bytes_at(k.descriptor_address, kKernelDescriptorSize);
    const auto read = [&]<typename T>(size_t at, T& out) {
      std::memcpy(&out, kd.data() + at, sizeof(T));
    };
    AmdKernelDescriptor& d = k.descriptor;
    read(0, d.group_segment_fixed_size);
    read(4, d.private_segment_fixed_size);
    read(8, d.kernarg_size);
    read(16, d.kernel_code_entry_byte_offset);
    read(44, d.compute_pgm_rsrc3);
    read(48, d.compute_pgm_rsrc1);
    read(52, d.compute_pgm_rsrc2);
    read(56, d.kernel_code_properties);
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
