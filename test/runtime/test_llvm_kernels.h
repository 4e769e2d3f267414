// Hand-written LLVM IR kernels shared by the LLVM back-end tests: CPU versions run in the JIT,
// AMDGPU versions are compiled for gfx1100 and inspected.
#pragma once
#include <string_view>

namespace ugrad::test_kernels {

// ---- CPU (host triple and data layout are set by the compiler) ----

// out[i] = a[i] + b[i], i < n
inline constexpr std::string_view kCpuAdd = R"(
define void @E_add(ptr noalias nocapture writeonly %out, ptr noalias nocapture readonly %a,
                   ptr noalias nocapture readonly %b, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  %po = getelementptr inbounds float, ptr %out, i64 %i
  %va = load float, ptr %pa, align 4
  %vb = load float, ptr %pb, align 4
  %s = fadd float %va, %vb
  store float %s, ptr %po, align 4
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)";

// out[0] = sum(a[0..n)), reassociation allowed so it vectorizes
inline constexpr std::string_view kCpuSum = R"(
define void @R_sum(ptr noalias nocapture writeonly %out, ptr noalias nocapture readonly %a, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %v = load float, ptr %pa, align 4
  %acc1 = fadd reassoc nsz float %acc, %v
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  store float %r, ptr %out, align 4
  ret void
}
)";

// out[i] = a[i] * k + exp2(a[i]): an i32 scalar parameter and a libm call (exp2f)
inline constexpr std::string_view kCpuScale = R"(
declare float @llvm.exp2.f32(float)
define void @E_scale(ptr noalias nocapture writeonly %out, ptr noalias nocapture readonly %a,
                     i32 %k, i64 %n) {
entry:
  %kf = sitofp i32 %k to float
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %po = getelementptr inbounds float, ptr %out, i64 %i
  %v = load float, ptr %pa, align 4
  %m = fmul float %v, %kf
  %e = call float @llvm.exp2.f32(float %v)
  %s = fadd float %m, %e
  store float %s, ptr %po, align 4
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)";

// ---- AMDGPU (amdgcn-amd-amdhsa; buffers in address space 1, LDS in 3) ----

#define UGRAD_AMD_DECLS                         \
  "declare i32 @llvm.amdgcn.workitem.id.x()\n"  \
  "declare i32 @llvm.amdgcn.workgroup.id.x()\n" \
  "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"1,256\" }\n"

// Each work-item adds 4 elements, 256 apart: out[i] = a[i] + b[i], i < n
inline constexpr std::string_view kAmdAdd = UGRAD_AMD_DECLS R"(
define amdgpu_kernel void @E_add(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    ptr addrspace(1) noalias nocapture readonly align 4 %a,
    ptr addrspace(1) noalias nocapture readonly align 4 %b, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 1024
  %start = add i32 %base, %tid
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %latch ]
  %off = mul i32 %j, 256
  %idx = add i32 %start, %off
  %ok = icmp slt i32 %idx, %n
  br i1 %ok, label %body, label %latch
body:
  %i = sext i32 %idx to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i
  %va = load float, ptr addrspace(1) %pa, align 4
  %vb = load float, ptr addrspace(1) %pb, align 4
  %s = fadd float %va, %vb
  store float %s, ptr addrspace(1) %po, align 4
  br label %latch
latch:
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, 4
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)";

// Each work-item sums 16 consecutive inputs: out[g] = sum(a[16g .. 16g+16))
inline constexpr std::string_view kAmdSum = UGRAD_AMD_DECLS R"(
define amdgpu_kernel void @R_sum(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    ptr addrspace(1) noalias nocapture readonly align 4 %a) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %wgbase = mul i32 %wg, 256
  %g = add i32 %wgbase, %tid
  %first = mul i32 %g, 16
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  %idx = add i32 %first, %j
  %i = zext i32 %idx to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %v = load float, ptr addrspace(1) %pa, align 4
  %acc1 = fadd reassoc nsz float %acc, %v
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, 16
  br i1 %done, label %exit, label %loop
exit:
  %gi = zext i32 %g to i64
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %gi
  store float %acc1, ptr addrspace(1) %po, align 4
  ret void
}
)";

// out[i] = a[i] * k for i < n: two i32 scalar parameters
inline constexpr std::string_view kAmdScale = UGRAD_AMD_DECLS R"(
define amdgpu_kernel void @E_scale(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    ptr addrspace(1) noalias nocapture readonly align 4 %a, i32 %k, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %idx = add i32 %base, %tid
  %ok = icmp slt i32 %idx, %n
  br i1 %ok, label %body, label %exit
body:
  %i = sext i32 %idx to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i
  %v = load float, ptr addrspace(1) %pa, align 4
  %kf = sitofp i32 %k to float
  %m = fmul float %v, %kf
  store float %m, ptr addrspace(1) %po, align 4
  br label %exit
exit:
  ret void
}
)";

// Mixed scalars with padding: (ptr out, i32 x, i64 y, float z) -> offsets 0, 8, 16, 24; size 28
inline constexpr std::string_view kAmdMixed = UGRAD_AMD_DECLS R"(
define amdgpu_kernel void @E_mixed(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    i32 %x, i64 %y, float %z) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %xf = sitofp i32 %x to float
  %yf = sitofp i64 %y to float
  %s0 = fadd float %xf, %yf
  %s = fadd float %s0, %z
  %i = zext i32 %tid to i64
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i
  store float %s, ptr addrspace(1) %po, align 4
  ret void
}
)";

// Reverse each 256-element workgroup tile through LDS: store, barrier with fences, load mirrored.
inline constexpr std::string_view kAmdLds = UGRAD_AMD_DECLS R"(
@tile = internal addrspace(3) global [256 x float] poison, align 16
declare void @llvm.amdgcn.s.barrier()
define amdgpu_kernel void @L_reverse(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    ptr addrspace(1) noalias nocapture readonly align 4 %a) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  %gi = zext i32 %g to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %gi
  %v = load float, ptr addrspace(1) %pa, align 4
  %pl = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %pl, align 4
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %r = sub i32 255, %tid
  %pr = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i32 0, i32 %r
  %w = load float, ptr addrspace(3) %pr, align 4
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %gi
  store float %w, ptr addrspace(1) %po, align 4
  ret void
}
)";

// One 16x16x16 f16 WMMA per wave: each lane loads its A/B fragments (<16 x half>) and C (<8 x
// float>).
inline constexpr std::string_view kAmdWmma = UGRAD_AMD_DECLS R"(
declare <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16(<16 x half>, <16 x half>, <8 x float>)
define amdgpu_kernel void @W_wmma(ptr addrspace(1) noalias nocapture writeonly align 32 %d,
    ptr addrspace(1) noalias nocapture readonly align 32 %a,
    ptr addrspace(1) noalias nocapture readonly align 32 %b,
    ptr addrspace(1) noalias nocapture readonly align 32 %c) #0 {
entry:
  %lane = call i32 @llvm.amdgcn.workitem.id.x()
  %l = zext i32 %lane to i64
  %pa = getelementptr inbounds <16 x half>, ptr addrspace(1) %a, i64 %l
  %pb = getelementptr inbounds <16 x half>, ptr addrspace(1) %b, i64 %l
  %pc = getelementptr inbounds <8 x float>, ptr addrspace(1) %c, i64 %l
  %pd = getelementptr inbounds <8 x float>, ptr addrspace(1) %d, i64 %l
  %va = load <16 x half>, ptr addrspace(1) %pa, align 32
  %vb = load <16 x half>, ptr addrspace(1) %pb, align 32
  %vc = load <8 x float>, ptr addrspace(1) %pc, align 32
  %r = call <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16(<16 x half> %va, <16 x half> %vb, <8 x float> %vc)
  store <8 x float> %r, ptr addrspace(1) %pd, align 32
  ret void
}
)";

// out[i] = sdot4(a[i], b[i], acc[i]): 4 x int8 dot product with int32 accumulate
inline constexpr std::string_view kAmdDot = UGRAD_AMD_DECLS R"(
declare i32 @llvm.amdgcn.sdot4(i32, i32, i32, i1 immarg)
define amdgpu_kernel void @D_sdot4(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    ptr addrspace(1) noalias nocapture readonly align 4 %a,
    ptr addrspace(1) noalias nocapture readonly align 4 %b,
    ptr addrspace(1) noalias nocapture readonly align 4 %acc) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  %i = zext i32 %g to i64
  %pa = getelementptr inbounds i32, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds i32, ptr addrspace(1) %b, i64 %i
  %pc = getelementptr inbounds i32, ptr addrspace(1) %acc, i64 %i
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %i
  %va = load i32, ptr addrspace(1) %pa, align 4
  %vb = load i32, ptr addrspace(1) %pb, align 4
  %vc = load i32, ptr addrspace(1) %pc, align 4
  %r = call i32 @llvm.amdgcn.sdot4(i32 %va, i32 %vb, i32 %vc, i1 false)
  store i32 %r, ptr addrspace(1) %po, align 4
  ret void
}
)";

#undef UGRAD_AMD_DECLS

}  // namespace ugrad::test_kernels
