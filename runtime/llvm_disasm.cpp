#include "runtime/llvm_disasm.h"

#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include <map>

#include "base/error.h"
#include "runtime/amd/amd_code_object.h"
#include "runtime/llvm_impl.h"

namespace ugrad {

std::string disassemble_amdgpu(std::span<const uint8_t> code_object) {
  AmdCodeObject co = parse_amd_code_object(code_object, "code object");
  llvm_impl::init_targets();
  const std::string triple = "amdgcn-amd-amdhsa";
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t) fail("amdgpu disassembler: no target: {}", err);
  llvm::Triple tt(triple);
  std::unique_ptr<llvm::MCRegisterInfo> mri(t->createMCRegInfo(triple));
  llvm::MCTargetOptions options;
  std::unique_ptr<llvm::MCAsmInfo> mai(t->createMCAsmInfo(*mri, triple, options));
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      t->createMCSubtargetInfo(triple, co.arch, "+wavefrontsize32"));
  std::unique_ptr<llvm::MCInstrInfo> mii(t->createMCInstrInfo());
  if (!mri || !mai || !sti || !mii) fail("amdgpu disassembler: cannot set up MC for {}", co.arch);
  llvm::MCContext ctx(tt, mai.get(), mri.get(), sti.get());
  std::unique_ptr<llvm::MCDisassembler> dis(t->createMCDisassembler(*sti, ctx));
  std::unique_ptr<llvm::MCInstPrinter> printer(
      t->createMCInstPrinter(tt, mai->getAssemblerDialect(), *mai, *mii, *mri));
  if (!dis || !printer) fail("amdgpu disassembler: no disassembler for {}", co.arch);

  std::map<uint64_t, std::string> labels;  // entry address -> kernel name
  for (const AmdKernelInfo& k : co.kernels)
    labels[k.descriptor_address +
           static_cast<uint64_t>(k.descriptor.kernel_code_entry_byte_offset)] = k.name;

  llvm::ArrayRef<uint8_t> text(code_object.data() + co.text_offset, co.text_size);
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "; " << co.arch << " code object v" << co.code_object_version << "\n";
  std::string last_line;
  size_t repeats = 0;
  for (uint64_t off = 0; off < text.size();) {
    uint64_t addr = co.text_address + off;
    if (auto it = labels.find(addr); it != labels.end()) os << it->second << ":\n";
    llvm::MCInst inst;
    uint64_t size = 0;
    auto status = dis->getInstruction(inst, size, text.slice(off), addr, llvm::nulls());
    std::string line;
    llvm::raw_string_ostream ls(line);
    if (status == llvm::MCDisassembler::Success && size > 0) {
      printer->printInst(&inst, addr, "", *sti, ls);
    } else {
      size = std::min<uint64_t>(4, text.size() - off);
      ls << "\t.byte <undecodable>";
    }
    off += size;
    // gfx11 pads .text with s_code_end for the instruction prefetcher: print the run once.
    if (line == last_line && line.find("s_code_end") != std::string::npos) {
      ++repeats;
      continue;
    }
    if (repeats) os << "\t; (previous line repeated " << repeats << " more times)\n";
    repeats = 0;
    last_line = line;
    os << line;
    os << llvm::format("  // %06llx\n", static_cast<unsigned long long>(addr));
  }
  if (repeats) os << "\t; (previous line repeated " << repeats << " more times)\n";
  return os.str();
}

}  // namespace ugrad
