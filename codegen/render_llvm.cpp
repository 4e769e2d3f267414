#include "codegen/render_llvm.h"

#include <fmt/format.h>

#include <bit>
#include <set>
#include <unordered_map>

#include "codegen/linearize.h"
#include "uop/error.h"
#include "uop/float16.h"

namespace ugrad {

namespace {

std::string ltype(DType t) {
  if (t.is_ptr) return "ptr";
  switch (t.scalar) {
    case Scalar::Bool:
      return "i1";
    case Scalar::Int8:
    case Scalar::UInt8:
      return "i8";
    case Scalar::Int16:
    case Scalar::UInt16:
      return "i16";
    case Scalar::Int32:
    case Scalar::UInt32:
      return "i32";
    case Scalar::Int64:
    case Scalar::UInt64:
    case Scalar::Index:
      return "i64";
    case Scalar::Float16:
      return "half";
    case Scalar::BFloat16:
      return "bfloat";
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      internal_error("render_llvm: no LLVM type for {}", to_string(t));
  }
}
// In memory a bool is a byte.
std::string mtype(DType t) { return t.scalar == Scalar::Bool ? "i8" : ltype(t); }
std::string intrinsic_suffix(DType t) {
  switch (t.scalar) {
    case Scalar::Float16:
      return "f16";
    case Scalar::Float32:
      return "f32";
    case Scalar::Float64:
      return "f64";
    default:
      internal_error("render_llvm: no float intrinsic for {}", to_string(t));
  }
}
bool is_signed(DType t) { return !is_unsigned(t) && !is_bool(t); }
int bits(DType t) { return t.scalar == Scalar::Bool ? 1 : int(itemsize(t.base()) * 8); }

std::string const_literal(const UOp& c) {
  const DType t = c.dtype();
  if (is_bool(t)) return c.const_int() ? "true" : "false";
  if (is_float(t)) {
    const double v = c.const_value();
    switch (t.scalar) {
      case Scalar::Float16:
        return fmt::format("0xH{:04X}", float_to_half(float(v)));
      case Scalar::BFloat16:
        return fmt::format("0xR{:04X}", float_to_bf16(float(v)));
      case Scalar::Float32:
        return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(double(float(v))));
      default:
        return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(v));
    }
  }
  // Printed as the signed value of its width, which LLVM's parser accepts for every int type.
  const int b = bits(t);
  int64_t v = c.const_int();
  if (b < 64) v = int64_t(uint64_t(v) << (64 - b)) >> (64 - b);
  return fmt::format("{}", v);
}

class Renderer {
 public:
  Renderer(const KernelSignature& sig, const CodegenTarget& target) : sig_(sig), target_(target) {
    for (const UOp& b : sig.buffers) names_[b] = fmt::format("%data{}", b.arg_as<ParamArg>().slot);
    for (size_t j = 0; j < sig.vars.size(); ++j) names_[sig.vars[j]] = fmt::format("%var{}", j);
    names_[core_id_special()] = "%core_id";
  }

  std::string render(const std::vector<UOp>& program, const std::string& name) {
    for (const UOp& u : program) line(u);
    std::string params;
    for (const UOp& b : sig_.buffers)
      params += fmt::format("{}{} noalias align {} {}", params.empty() ? "" : ", ", ptr_type(),
                            std::max<size_t>(itemsize(b.dtype().base()), 1), names_[b]);
    for (size_t j = 0; j < sig_.vars.size(); ++j)
      params += fmt::format("{}i64 %var{}", params.empty() ? "" : ", ", j);
    std::string m;
    for (const std::string& d : declares_) m += d + "\n";
    if (target_.is_gpu) {
      m += fmt::format("\ndefine amdgpu_kernel void @{}({}) #0 {{\nentry:\n", name, params);
      m += "  %core_id = add i64 0, 0\n  %n_cores = add i64 1, 0\n";
      m += allocas_ + body_ + "  ret void\n}\n";
      m += "\nattributes #0 = { nounwind \"amdgpu-flat-work-group-size\"=\"1,1\" }\n";
      return m;
    }
    m += fmt::format(
        "\ndefine internal void @{}_body({}{}i64 %core_id, i64 %n_cores) #0 {{\n"
        "entry:\n",
        name, params, params.empty() ? "" : ", ");
    m += allocas_ + body_ + "  ret void\n}\n";
    // The entry unpacks args[] so the body can take noalias pointers.
    m += fmt::format("\ndefine void @{}(ptr %args, i64 %core_id, i64 %n_cores) #1 {{\nentry:\n",
                     name);
    std::string call;
    for (const UOp& b : sig_.buffers) {
      const int64_t slot = b.arg_as<ParamArg>().slot;
      m += fmt::format(
          "  %a{0} = getelementptr ptr, ptr %args, i64 {0}\n  %p{0} = load ptr, ptr %a{0}\n", slot);
      call += fmt::format("ptr %p{}, ", slot);
    }
    for (size_t j = 0; j < sig_.vars.size(); ++j) {
      const size_t at = sig_.buffers.size() + j;
      m += fmt::format(
          "  %va{0} = getelementptr ptr, ptr %args, i64 {1}\n"
          "  %vp{0} = load ptr, ptr %va{0}\n  %v{0} = ptrtoint ptr %vp{0} to i64\n",
          j, at);
      call += fmt::format("i64 %v{}, ", j);
    }
    m += fmt::format("  call void @{}_body({}i64 %core_id, i64 %n_cores)\n  ret void\n}}\n", name,
                     call);
    m += "\nattributes #0 = { alwaysinline nounwind \"no-trapping-math\"=\"true\" }\n"
         "attributes #1 = { nounwind \"no-trapping-math\"=\"true\" }\n";
    return m;
  }

 private:
  std::string ptr_type() const {
    return target_.global_address_space
               ? fmt::format("ptr addrspace({})", target_.global_address_space)
               : "ptr";
  }
  std::string fresh() { return fmt::format("%v{}", next_++); }
  const std::string& name(const UOp& u) {
    if (u.op() == Op::CONST && !names_.count(u)) names_[u] = const_literal(u);
    auto it = names_.find(u);
    if (it == names_.end())
      internal_error("render_llvm: {} used before it is defined", op_name(u.op()));
    return it->second;
  }
  std::string typed(const UOp& u) { return ltype(u.dtype()) + " " + name(u); }
  template <typename... Args>
  void emit(fmt::format_string<Args...> f, Args&&... args) {
    body_ += "  " + fmt::format(f, std::forward<Args>(args)...) + "\n";
  }
  void label(const std::string& l) {
    body_ += l + ":\n";
    block_ = l;
  }
  std::string call_intrinsic(const std::string& fn, DType t, const std::string& flags,
                             const std::vector<std::string>& args) {
    const std::string full = fmt::format("llvm.{}.{}", fn, intrinsic_suffix(t));
    std::string params, vals;
    for (const std::string& a : args) {
      params += (params.empty() ? "" : ", ") + ltype(t);
      vals += (vals.empty() ? "" : ", ") + ltype(t) + " " + a;
    }
    declares_.insert(fmt::format("declare {} @{}({})", ltype(t), full, params));
    std::string v = fresh();
    emit("{} = call {}{} @{}({})", v, flags, ltype(t), full, vals);
    return v;
  }

  // True when `u` combines an accumulator's value: reassociation lets LLVM vectorize the loop.
  static bool is_accumulate(const UOp& u) {
    return !u.src().empty() && u.src(0).op() == Op::LOAD &&
           u.src(0).src(0).src(0).op() == Op::AFTER &&
           u.src(0).src(0).src(0).src(0).op() == Op::DEFINE_REG;
  }

  void line(const UOp& u) {
    switch (u.op()) {
      case Op::CONST:
      case Op::PARAM:
      case Op::GROUP:
      case Op::NOOP:
      case Op::SPECIAL:
        return;
      case Op::DEFINE_REG: {
        if (names_.count(u)) return;  // placed again in a later scope: one alloca serves all
        std::string v = fmt::format("%acc{}", u.arg_as<int64_t>());
        allocas_ += fmt::format("  {} = alloca {}\n", v, mtype(u.dtype().base()));
        names_[u] = v;
        return;
      }
      case Op::AFTER:
        names_[u] = name(u.src(0));
        return;
      case Op::RANGE:
        return open_loop(u);
      case Op::END:
        return close_loop(u.src().back());
      case Op::IF: {
        const int id = next_block_++;
        if_stack_.push_back(id);
        emit("br i1 {}, label %if{}, label %endif{}", name(u.src(0)), id, id);
        label(fmt::format("if{}", id));
        return;
      }
      case Op::ENDIF: {
        const int id = if_stack_.back();
        if_stack_.pop_back();
        emit("br label %endif{}", id);
        label(fmt::format("endif{}", id));
        return;
      }
      case Op::INDEX:
        return index(u);
      case Op::LOAD:
        return load(u);
      case Op::STORE:
        return store(u);
      case Op::CAST:
        return cast(u);
      case Op::BITCAST: {
        names_[u] = fresh();
        emit("{} = bitcast {} to {}", names_[u], typed(u.src(0)), ltype(u.dtype()));
        return;
      }
      default:
        if (is_alu(u.op())) return alu(u);
        internal_error("render_llvm: cannot render {}", op_name(u.op()));
    }
  }

  void open_loop(const UOp& r) {
    const int id = next_block_++;
    loop_ids_[r] = id;
    std::string begin = "0", end = name(r.src(0));
    if (r.arg_as<RangeArg>().type == AxisType::Thread) {
      // This core's contiguous share of [0, end): sizes differ by at most one.
      emit("%t{0}_base = sdiv i64 {1}, %n_cores\n  %t{0}_rem = srem i64 {1}, %n_cores", id, end);
      emit(
          "%t{0}_lt = icmp slt i64 %core_id, %t{0}_rem\n"
          "  %t{0}_min = select i1 %t{0}_lt, i64 %core_id, i64 %t{0}_rem",
          id);
      emit("%t{0}_b = mul i64 %core_id, %t{0}_base\n  %t{0}_begin = add i64 %t{0}_b, %t{0}_min",
           id);
      emit(
          "%t{0}_x = zext i1 %t{0}_lt to i64\n  %t{0}_len = add i64 %t{0}_base, %t{0}_x\n"
          "  %t{0}_end = add i64 %t{0}_begin, %t{0}_len",
          id);
      begin = fmt::format("%t{}_begin", id);
      end = fmt::format("%t{}_end", id);
    }
    const std::string pred = block_;
    emit("br label %loop{}", id);
    label(fmt::format("loop{}", id));
    names_[r] = fmt::format("%r{}", id);
    emit("%r{0} = phi i64 [ {1}, %{2} ], [ %r{0}_next, %latch{0} ]", id, begin, pred);
    emit("%r{0}_c = icmp slt i64 %r{0}, {1}", id, end);
    emit("br i1 %r{0}_c, label %body{0}, label %exit{0}", id);
    label(fmt::format("body{}", id));
  }

  void close_loop(const UOp& r) {
    const int id = loop_ids_.at(r);
    emit("br label %latch{}", id);
    label(fmt::format("latch{}", id));
    emit("%r{0}_next = add nuw nsw i64 %r{0}, 1", id);
    emit("br label %loop{}", id);
    label(fmt::format("exit{}", id));
    names_.erase(r);
  }

  void index(const UOp& u) {
    UOp base = u.src(0);
    while (base.op() == Op::AFTER) base = base.src(0);
    if (base.op() == Op::DEFINE_REG) {
      names_[u] = name(base);  // accumulators hold one element
      return;
    }
    std::string idx = name(u.src(1));
    const std::string it = ltype(u.src(1).dtype());
    if (u.src().size() > 2) {  // gated: index 0 is always in bounds, so the load is safe
      std::string s = fresh();
      emit("{} = select i1 {}, {} {}, {} 0", s, name(u.src(2)), it, idx, it);
      idx = s;
    }
    names_[u] = fresh();
    emit("{} = getelementptr inbounds {}, {} {}, {} {}", names_[u], mtype(base.dtype().base()),
         ptr_type(), name(base), it, idx);
  }

  void load(const UOp& u) {
    const UOp& idx = u.src(0);
    const DType t = u.dtype();
    std::string v = fresh();
    emit("{} = load {}, {} {}", v, mtype(t), idx_ptr_type(idx), name(idx));
    if (is_bool(t)) {
      std::string b = fresh();
      emit("{} = icmp ne i8 {}, 0", b, v);
      v = b;
    }
    if (idx.src().size() > 2) {
      std::string g = fresh();
      emit("{} = select i1 {}, {} {}, {} {}", g, name(idx.src(2)), ltype(t), v, ltype(t),
           const_literal(UOp::cnst_int(t, 0)));
      v = g;
    }
    names_[u] = v;
  }

  void store(const UOp& u) {
    const UOp &idx = u.src(0), &val = u.src(1);
    std::string v = name(val);
    if (is_bool(val.dtype())) {
      std::string z = fresh();
      emit("{} = zext i1 {} to i8", z, v);
      v = z;
    }
    emit("store {} {}, {} {}", mtype(val.dtype()), v, idx_ptr_type(idx), name(idx));
  }

  std::string idx_ptr_type(const UOp& idx) {
    UOp base = idx.src(0);
    while (base.op() == Op::AFTER) base = base.src(0);
    return base.op() == Op::DEFINE_REG ? "ptr" : ptr_type();
  }

  void cast(const UOp& u) {
    const DType from = u.src(0).dtype(), to = u.dtype();
    const std::string& x = name(u.src(0));
    if (ltype(from) == ltype(to)) {
      names_[u] = x;
      return;
    }
    std::string v = fresh(), op;
    names_[u] = v;
    if (is_bool(to)) {
      if (is_float(from))
        emit("{} = fcmp une {} {}, 0.0", v, ltype(from), x);
      else
        emit("{} = icmp ne {} {}, 0", v, ltype(from), x);
      return;
    }
    if (is_float(from) && is_float(to))
      op = bits(from) < bits(to) ? "fpext" : "fptrunc";
    else if (is_float(from))
      op = is_signed(to) ? "fptosi" : "fptoui";
    else if (is_float(to))
      op = is_signed(from) ? "sitofp" : "uitofp";
    else if (bits(from) > bits(to))
      op = "trunc";
    else
      op = is_signed(from) ? "sext" : "zext";
    emit("{} = {} {} {} to {}", v, op, ltype(from), x, ltype(to));
  }

  void alu(const UOp& u) {
    const Op op = u.op();
    const DType t = u.src(0).dtype();
    const bool fl = is_float(t), sg = is_signed(t);
    const std::string ty = ltype(t);
    auto a = [&](size_t i) { return name(u.src(i)); };
    std::string v;
    // Index math never overflows: nsw lets LLVM reason about addresses.
    const std::string iflags = t.scalar == Scalar::Index ? " nsw" : "";
    const std::string fflags = is_accumulate(u) ? " reassoc contract" : " contract";
    auto bin = [&](const std::string& inst, const std::string& flags) {
      v = fresh();
      emit("{} = {}{} {} {}, {}", v, inst, flags, ty, a(0), a(1));
    };
    switch (op) {
      case Op::ADD:
        fl ? bin("fadd", fflags) : bin("add", iflags);
        break;
      case Op::SUB:
        fl ? bin("fsub", fflags) : bin("sub", iflags);
        break;
      case Op::MUL:
        fl ? bin("fmul", fflags) : bin("mul", iflags);
        break;
      case Op::FDIV:
        bin("fdiv", " contract");
        break;
      case Op::IDIV:
        bin(sg ? "sdiv" : "udiv", "");
        break;
      case Op::MOD:
        fl ? bin("frem", "") : bin(sg ? "srem" : "urem", "");
        break;
      case Op::AND:
        bin("and", "");
        break;
      case Op::OR:
        bin("or", "");
        break;
      case Op::XOR:
        bin("xor", "");
        break;
      case Op::SHL:
        bin("shl", "");
        break;
      case Op::SHR:
        bin(sg ? "ashr" : "lshr", "");
        break;
      case Op::CMPLT:
        bin(fl ? "fcmp olt" : sg ? "icmp slt" : "icmp ult", "");
        break;
      case Op::CMPNE:
        bin(fl ? "fcmp une" : "icmp ne", "");
        break;
      case Op::CMPEQ:
        bin(fl ? "fcmp oeq" : "icmp eq", "");
        break;
      case Op::MAX:
        if (fl) {
          v = call_intrinsic("maxnum", t, is_accumulate(u) ? "reassoc nnan " : "", {a(0), a(1)});
        } else {
          std::string c = fresh();
          emit("{} = icmp {} {} {}, {}", c, sg ? "sgt" : "ugt", ty, a(0), a(1));
          v = fresh();
          emit("{} = select i1 {}, {} {}, {} {}", v, c, ty, a(0), ty, a(1));
        }
        break;
      case Op::WHERE: {
        const std::string vt = ltype(u.src(1).dtype());
        v = fresh();
        emit("{} = select i1 {}, {} {}, {} {}", v, a(0), vt, a(1), vt, a(2));
        break;
      }
      case Op::NEG:
        v = fresh();
        if (fl)
          emit("{} = fneg {} {}", v, ty, a(0));
        else
          emit("{} = sub {} 0, {}", v, ty, a(0));
        break;
      case Op::RECIP:
        v = fresh();
        emit("{} = fdiv arcp contract {} {}, {}", v, ty, const_literal(UOp::cnst(t, 1.0)), a(0));
        break;
      case Op::SQRT:
        v = call_intrinsic("sqrt", t, "", {a(0)});
        break;
      case Op::EXP2:
        v = call_intrinsic("exp2", t, "afn ", {a(0)});
        break;
      case Op::LOG2:
        v = call_intrinsic("log2", t, "afn ", {a(0)});
        break;
      case Op::SIN:
        v = call_intrinsic("sin", t, "afn ", {a(0)});
        break;
      case Op::TRUNC:
        v = call_intrinsic("trunc", t, "", {a(0)});
        break;
      default:
        internal_error("render_llvm: {} should have been decomposed", op_name(op));
    }
    names_[u] = v;
  }

  const KernelSignature& sig_;
  const CodegenTarget& target_;
  std::unordered_map<UOp, std::string> names_;
  std::unordered_map<UOp, int> loop_ids_;
  std::vector<int> if_stack_;
  std::set<std::string> declares_;
  std::string allocas_, body_, block_ = "entry";
  int next_ = 0, next_block_ = 0;
};

}  // namespace

std::string render_llvm(const std::vector<UOp>& program, const KernelSignature& sig,
                        const CodegenTarget& target, const std::string& name) {
  return Renderer(sig, target).render(program, name);
}

}  // namespace ugrad
