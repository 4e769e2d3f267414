#include "runtime/llvm_compile.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <unordered_map>

#include "base/error.h"
#include "runtime/llvm_impl.h"

namespace ugrad {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Collects LLVM error diagnostics instead of letting LLVMContext exit(1) on them.
struct CollectErrors : llvm::DiagnosticHandler {
  std::vector<std::string>* errors;
  explicit CollectErrors(std::vector<std::string>* e) : errors(e) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (info.getSeverity() == llvm::DS_Error) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvm::DiagnosticPrinterRawOStream printer(os);
      info.print(printer);
      errors->push_back(os.str());
    }
    return true;
  }
};

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

bool is_f64_or_vec(llvm::Type* t) { return t->getScalarType()->isDoubleTy(); }
bool is_wide_float(llvm::Type* t) {
  llvm::Type* s = t->getScalarType();
  return s->isFP128Ty() || s->isX86_FP80Ty() || s->isPPC_FP128Ty();
}

// WMMA fragment shapes differ per generation (wave32): gfx11 takes 16 f16/bf16 lanes per A/B
// fragment and wants them replicated in both half-waves; gfx12 takes 8. A mismatch is a
// "Cannot select" abort in instruction selection, so it is checked here.
void check_wmma_shape(const llvm::CallBase& call, llvm::StringRef name, const llvm::Function& f,
                      const LlvmTarget& target, std::string_view what) {
  const bool gfx11 = target.arch.starts_with("gfx11");
  if (gfx11 && name.starts_with("llvm.amdgcn.swmmac."))
    fail("amdgpu: {} '{}': {} needs gfx12, the target is {}", what, f.getName().str(), name.str(),
         target.arch);
  const unsigned want = gfx11 ? 16 : 8;
  if (call.arg_size() == 0) return;
  auto* a = llvm::dyn_cast<llvm::FixedVectorType>(call.getArgOperand(0)->getType());
  if (a &&
      (a->getElementType()->isHalfTy() || a->getElementType()->isBFloatTy() ||
       a->getElementType()->isIntegerTy(16)) &&
      a->getNumElements() != want)
    fail("amdgpu: {} '{}': {} takes <{} x half/bfloat> A fragments on {} (wave32), got {}", what,
         f.getName().str(), name.str(), want, target.arch, a->getNumElements());
  auto* r = llvm::dyn_cast<llvm::FixedVectorType>(call.getType());
  if (r && r->getElementType()->isFloatTy() && r->getNumElements() != 8)
    fail("amdgpu: {} '{}': {} must return <8 x float> on {} (wave32)", what, f.getName().str(),
         name.str(), target.arch);
}

// Constructs LLVM 19's AMDGPU instruction selection cannot lower abort the process
// (report_fatal_error), so they are rejected here, after optimization has had its say.
void check_amdgpu_selectable(const llvm::Module& m, const LlvmTarget& target,
                             std::string_view what) {
  for (const llvm::Function& f : m) {
    for (const llvm::BasicBlock& bb : f) {
      for (const llvm::Instruction& inst : bb) {
        // fp128 / x86_fp80 / ppc_fp128 arithmetic: "unsupported libcall legalization"
        bool wide_float = is_wide_float(inst.getType());
        for (const llvm::Value* op : inst.operands()) wide_float |= is_wide_float(op->getType());
        if (wide_float)
          fail("amdgpu: {} '{}': 128/80-bit floating point is not supported on {}", what,
               f.getName().str(), target.arch);
        if (auto* cast = llvm::dyn_cast<llvm::CastInst>(&inst)) {
          // uitofp/sitofp i1 -> bfloat: "Cannot select bf16 = uint_to_fp"
          if ((llvm::isa<llvm::UIToFPInst>(cast) || llvm::isa<llvm::SIToFPInst>(cast)) &&
              cast->getSrcTy()->getScalarType()->isIntegerTy(1) &&
              cast->getDestTy()->getScalarType()->isBFloatTy())
            fail("amdgpu: {} '{}': i1 -> bfloat conversion cannot be selected on {}; use select",
                 what, f.getName().str(), target.arch);
        }
        auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
        if (!call) continue;
        switch (call->getIntrinsicID()) {
          case llvm::Intrinsic::sin:
          case llvm::Intrinsic::cos:
          case llvm::Intrinsic::tan:
          case llvm::Intrinsic::exp:
          case llvm::Intrinsic::exp2:
          case llvm::Intrinsic::exp10:
          case llvm::Intrinsic::log:
          case llvm::Intrinsic::log2:
          case llvm::Intrinsic::log10:
          case llvm::Intrinsic::pow:
          case llvm::Intrinsic::powi:  // with a non-constant exponent: "Cannot select fpow"
            if (is_f64_or_vec(call->getType()))
              fail("amdgpu: {} '{}': {} on f64 has no lowering on {}; decompose it", what,
                   f.getName().str(), call->getCalledFunction()->getName().str(), target.arch);
            break;
          default:
            break;
        }
        llvm::StringRef name = call->getCalledFunction()->getName();
        if (name.starts_with("llvm.amdgcn.wmma.") || name.starts_with("llvm.amdgcn.swmmac."))
          check_wmma_shape(*call, name, f, target, what);
      }
    }
  }
}

// TargetMachines are not safe to share between threads but are fine to reuse serially; creating
// one costs ~0.5 ms for the host (its feature string is long), so each thread keeps its own.
llvm::TargetMachine& thread_target_machine(const LlvmTarget& target) {
  thread_local std::unordered_map<std::string, std::unique_ptr<llvm::TargetMachine>> machines;
  std::unique_ptr<llvm::TargetMachine>& tm = machines[target.cache_key()];
  if (!tm) tm = llvm_impl::make_target_machine(target);
  return *tm;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  // With the TargetMachine: target TTI (x86 vector widths) and AMDGPU's callbacks (the attributor
  // that drops unused hidden kernel arguments).
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 0   ? llvm::OptimizationLevel::O0
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                  : opt_level == 3 ? llvm::OptimizationLevel::O3
                                                   : llvm::OptimizationLevel::O2;
  llvm::ModulePassManager mpm =
      opt_level == 0 ? pb.buildO0DefaultPipeline(level) : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

}  // namespace

std::string llvm_compile(const LlvmTarget& target, std::string_view ir_text, LlvmOutput output,
                         std::string_view what, LlvmPhaseTimes* times) {
  auto t0 = Clock::now();
  llvm::TargetMachine* tm = &thread_target_machine(target);
  llvm::LLVMContext ctx;
  std::vector<std::string> errors;
  ctx.setDiagnosticHandler(std::make_unique<CollectErrors>(&errors));

  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m =
      llvm::parseAssemblyString(llvm::StringRef(ir_text.data(), ir_text.size()), diag, ctx);
  if (!m)
    fail("llvm: {}: IR parse error at line {}:{}: {}{}{}", what, diag.getLineNo(),
         diag.getColumnNo() + 1, diag.getMessage().str(),
         diag.getLineContents().empty() ? "" : "\n  ", diag.getLineContents().str());
  {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*m, &os)) fail("llvm: {}: invalid IR: {}", what, os.str());
  }
  m->setTargetTriple(target.triple);
  m->setDataLayout(tm->createDataLayout());
  if (target.kind == TargetKind::AMDGPU) {
    constexpr const char* kCovFlag = "amdhsa_code_object_version";
    const int want = target.code_object_version * 100;
    if (auto* md = llvm::mdconst::extract_or_null<llvm::ConstantInt>(m->getModuleFlag(kCovFlag))) {
      if (md->getSExtValue() != want)
        fail("amdgpu: {}: IR sets {}={} but the target asks for {}", what, kCovFlag,
             md->getSExtValue(), want);
    } else {
      m->addModuleFlag(llvm::Module::Error, kCovFlag, want);
    }
  }
  if (times) times->parse_ms = ms_since(t0);

  auto t1 = Clock::now();
  optimize(*m, *tm, target.opt_level);
  if (!errors.empty()) fail("llvm: {}: optimization failed: {}", what, join(errors));
  if (target.kind == TargetKind::AMDGPU) check_amdgpu_selectable(*m, target, what);
  if (times) times->optimize_ms = ms_since(t1);

  auto t2 = Clock::now();
  std::string out;
  if (output == LlvmOutput::OptimizedIR) {
    llvm::raw_string_ostream os(out);
    m->print(os, nullptr);
    os.flush();
  } else {
    llvm::SmallVector<char, 0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    auto kind = output == LlvmOutput::Object ? llvm::CodeGenFileType::ObjectFile
                                             : llvm::CodeGenFileType::AssemblyFile;
    if (tm->addPassesToEmitFile(pm, os, nullptr, kind))
      fail("llvm: {}: target {} cannot emit this file type", what, target.describe());
    pm.run(*m);
    if (!errors.empty()) fail("llvm: {}: code generation failed: {}", what, join(errors));
    out.assign(buf.begin(), buf.end());
  }
  if (times) times->codegen_ms = ms_since(t2);
  return out;
}

std::vector<uint8_t> llvm_compile_object(const LlvmTarget& target, std::string_view ir_text,
                                         std::string_view what, LlvmPhaseTimes* times) {
  std::string bytes = llvm_compile(target, ir_text, LlvmOutput::Object, what, times);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace ugrad
