// AMDGPU (gfx11/gfx12, wave32): launch indices, workgroup barriers, LDS arrays, WMMA tiles and
// v_dot4_i32_iu8.
#include "base/error.h"
#include "codegen/render/llvm_types.h"
#include "codegen/render/target_hooks.h"

namespace ugrad {
namespace {

class AmdgpuHooks : public TargetHooks {
 public:
  std::string special(RenderContext& r, const UOp& u) const override {
    const std::string& n = u.arg_as<std::string>();
    if (n.size() != 5 || (n[0] != 'g' && n[0] != 'l') || n[4] < '0' || n[4] > '2')
      internal_error("render_llvm: unknown GPU SPECIAL '{}'", n);
    const std::string fn = fmt::format("llvm.amdgcn.{}.id.{}",
                                       n[0] == 'g' ? "workgroup" : "workitem", "xyz"[n[4] - '0']);
    r.declare(fmt::format("declare i32 @{}()", fn));
    std::string id = r.fresh(), v = r.fresh();
    r.emit("{} = call i32 @{}()", id, fn);
    r.emit("{} = zext i32 {} to i64", v, id);
    return v;
  }

  void barrier(RenderContext& r) const override {
    // __syncthreads: the fences make LDS writes visible (and keep buffer_gl0_inv).
    r.emit("fence syncscope(\"workgroup\") release");
    r.emit("call void @llvm.amdgcn.s.barrier()");
    r.emit("fence syncscope(\"workgroup\") acquire");
    r.declare("declare void @llvm.amdgcn.s.barrier()");
  }

  // LDS: an undef-initialized addrspace(3) global.
  std::string local_array(RenderContext& r, const UOp& u) const override {
    std::string g = "@lds" + r.fresh().substr(2);
    r.add_global(fmt::format("{} = internal addrspace({}) global [{} x {}] undef, align 16", g,
                             r.target().local_address_space, u.arg_as<int64_t>(),
                             mtype(u.dtype().base())));
    return g;
  }

  std::string local_ptr_type(const CodegenTarget& target) const override {
    return fmt::format("ptr addrspace({})", target.local_address_space);
  }

  // v_dot4_i32_iu8 on one word (llvm.amdgcn.sudot4: a sign bit per source, then the accumulator
  // and no clamp). Unsigned x unsigned gives the bits v_dot4_u32_u8 would.
  std::string dot4(RenderContext& r, const UOp& u, int64_t words) const override {
    if (words != 1) return TargetHooks::dot4(r, u, words);
    const Dot4Arg& signs = u.arg_as<Dot4Arg>();
    r.declare("declare i32 @llvm.amdgcn.sudot4(i1, i32, i1, i32, i32, i1)");
    std::string v = r.fresh();
    r.emit("{} = call i32 @llvm.amdgcn.sudot4(i1 {}, i32 {}, i1 {}, i32 {}, i32 {}, i1 false)", v,
           signs.a_signed, r.name(u.src(0)), signs.b_signed, r.name(u.src(1)), r.name(u.src(2)));
    return v;
  }

  Rendered instruction(RenderContext& r, const UOp& u) const override {
    if (u.op() != Op::WMMA) return TargetHooks::instruction(r, u);
    return {wmma(r, u)};
  }

 private:
  // D = A*B + C on one 16x16x16 tile per wave (gfx11: A/B replicated in both half-waves).
  static std::string wmma(RenderContext& r, const UOp& u) {
    const DType a = u.src(0).dtype(), c = u.src(2).dtype();
    const bool bf16 = a.scalar == Scalar::BFloat16;
    const std::string at = bf16 ? "<16 x i16>" : vector_type(a);
    const std::string fn = fmt::format("llvm.amdgcn.wmma.f32.16x16x16.{}.v8f32.{}",
                                       bf16 ? "bf16" : "f16", bf16 ? "v16i16" : "v16f16");
    r.declare(fmt::format("declare <8 x float> @{}({}, {}, <8 x float>)", fn, at, at));
    std::string x = r.name(u.src(0)), y = r.name(u.src(1));
    if (bf16) {  // the bf16 intrinsic takes the bits as i16
      std::string bx = r.fresh(), by = r.fresh();
      r.emit("{} = bitcast {} {} to <16 x i16>", bx, vector_type(a), x);
      r.emit("{} = bitcast {} {} to <16 x i16>", by, vector_type(a), y);
      x = bx, y = by;
    }
    std::string v = r.fresh();
    r.emit("{} = call <8 x float> @{}({} {}, {} {}, {} {})", v, fn, at, x, at, y, vector_type(c),
           r.name(u.src(2)));
    return v;
  }
};

}  // namespace

const TargetHooks& amdgpu_hooks() {
  static const AmdgpuHooks hooks;
  return hooks;
}

}  // namespace ugrad
