#include "codegen/render/render_llvm.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "base/error.h"
#include "codegen/affine.h"
#include "codegen/lower/linearize.h"
#include "codegen/ranges.h"
#include "codegen/render/kernel_entry.h"
#include "codegen/render/llvm_types.h"
#include "codegen/render/target_hooks.h"

namespace ugrad {

namespace {

class Renderer : public RenderContext {
 public:
  Renderer(const KernelSignature& sig, const CodegenTarget& target, int64_t local_threads)
      : sig_(sig), target_(target), hooks_(target_hooks(target)), local_threads_(local_threads) {
    for (const UOp& b : sig.buffers) names_[b] = fmt::format("%data{}", b.arg_as<ParamArg>().slot);
    for (size_t j = 0; j < sig.vars.size(); ++j) names_[sig.vars[j]] = fmt::format("%var{}", j);
    names_[core_id_special()] = "%core_id";  // buffer and variable names: kernel_entry.h
  }

  std::string render(const std::vector<UOp>& program, const std::string& name) {
    find_vector_axis(program);
    for (const UOp& u : program) line(u);
    return kernel_module({declares_, globals_, allocas_, body_}, sig_, target_, name,
                         local_threads_);
  }

  // ---- RenderContext: what the target hooks (target_hooks.h) use.
  const CodegenTarget& target() const override { return target_; }
  int64_t lanes() const override { return lanes_; }
  std::string fresh() override { return fmt::format("%v{}", next_++); }
  void declare(std::string decl) override { declares_.insert(std::move(decl)); }
  void add_global(std::string line) override { globals_ += line + "\n"; }
  void add_alloca(std::string line) override { allocas_ += line + "\n"; }
  void emit_line(std::string line) override { body_ += "  " + line + "\n"; }
  // `u` as a vector (broadcast when scalar) or as is.
  std::string val(const UOp& u, bool want_vec) override {
    const std::string& x = name(u);
    if (!want_vec || is_vec(u)) return x;
    auto key = std::make_pair(u, block_);
    if (auto it = splats_.find(key); it != splats_.end()) return it->second;
    const std::string ty = ltype(u.dtype().base());
    std::string ins = fresh(), v = fresh();
    emit("{} = insertelement <{} x {}> poison, {} {}, i64 0", ins, lanes_, ty, ty, x);
    emit("{} = shufflevector <{} x {}> {}, <{} x {}> poison, <{} x i32> zeroinitializer", v, lanes_,
         ty, ins, lanes_, ty, lanes_);
    splats_[key] = v;
    return v;
  }
  const std::string& name(const UOp& u) override {
    if (u.op() == Op::CONST && !names_.count(u)) names_[u] = const_literal(u);
    auto it = names_.find(u);
    if (it == names_.end())
      internal_error("render_llvm: {} used before it is defined", op_name(u.op()));
    return it->second;
  }

 private:
  std::string ptr_type() const { return buffer_ptr_type(target_); }

  // ---- vector lanes: values that depend on the vector axis (an unexpanded Upcast range, or the
  // Unroll lane axis of a reduce) are <lanes x T>; scalars meeting them are broadcast.
  void find_vector_axis(const std::vector<UOp>& program) {
    for (const UOp& u : program)
      for (const UOp& s : u.src())
        if (s.op() == Op::RANGE && (s.arg_as<RangeArg>().type == AxisType::Upcast ||
                                    s.arg_as<RangeArg>().type == AxisType::Unroll)) {
          lanes_ = s.src(0).const_int();
          std::string lits;
          for (int64_t i = 0; i < lanes_; ++i) lits += fmt::format("{}i64 {}", i ? ", " : "", i);
          names_[s] = "<" + lits + ">";
          vec_[s] = true;
        }
  }
  bool is_vec(const UOp& u) const {
    auto it = vec_.find(u);
    return it != vec_.end() && it->second;
  }
  // `t` on the vector axis (v) or not; an explicitly vector-typed t (a WMMA fragment, a packed
  // pair of halves) is its own LLVM vector and never on the axis.
  std::string vt(DType t, bool v) const {
    if (t.count > 1) {
      if (v) internal_error("render_llvm: a {}-element value on the vector axis", t.count);
      return vector_type(t);
    }
    return v ? fmt::format("<{} x {}>", lanes_, ltype(t.base())) : ltype(t.base());
  }
  std::string vmt(DType t, bool v) const {
    return v ? fmt::format("<{} x {}>", lanes_, mtype(t.base())) : mtype(t.base());
  }
  std::string all_true() const {
    std::string s;
    for (int64_t i = 0; i < lanes_; ++i) s += fmt::format("{}i1 true", i ? ", " : "");
    return "<" + s + ">";
  }
  std::string zero(DType t, bool v) const {
    return v ? "zeroinitializer" : const_literal(UOp::cnst_int(t.base(), 0));
  }
  void label(const std::string& l) {
    body_ += l + ":\n";
    block_ = l;
  }
  std::string call_intrinsic(const std::string& fn, DType t, bool v, const std::string& flags,
                             const std::vector<std::string>& args) {
    const std::string suffix =
        v ? fmt::format("v{}{}", lanes_, intrinsic_suffix(t)) : intrinsic_suffix(t);
    const std::string full = fmt::format("llvm.{}.{}", fn, suffix), ty = vt(t, v);
    std::string params, vals;
    for (const std::string& a : args) {
      params += (params.empty() ? "" : ", ") + ty;
      vals += (vals.empty() ? "" : ", ") + ty + " " + a;
    }
    declares_.insert(fmt::format("declare {} @{}({})", ty, full, params));
    std::string r = fresh();
    emit("{} = call {}{} @{}({})", r, flags, ty, full, vals);
    return r;
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
        return;
      case Op::SPECIAL:  // the CPU's core_id is named up front
        if (!names_.count(u)) names_[u] = hooks_.special(*this, u);
        return;
      case Op::BARRIER:
        return hooks_.barrier(*this);
      case Op::CUSTOM:
      case Op::WMMA: {
        Rendered r = hooks_.instruction(*this, u);
        names_[u] = r.name;
        vec_[u] = r.vec;
        return;
      }
      case Op::VECTORIZE:
      case Op::GEP:
        return vector_op(u);
      case Op::DEFINE_REG: {
        if (names_.count(u)) return;  // placed again in a later scope: one alloca serves all
        std::string v = fmt::format("%acc{}", u.arg_as<int64_t>());
        vec_[u] = u.dtype().count > 1;
        allocas_ +=
            fmt::format("  {} = alloca {}\n", v,
                        vec_[u] ? fmt::format("<{} x {}>", u.dtype().count, mtype(u.dtype().base()))
                                : mtype(u.dtype().base()));
        names_[u] = v;
        return;
      }
      case Op::DEFINE_LOCAL:  // LDS on a GPU, stack scratch (packed operands) on the CPU
        if (!names_.count(u)) names_[u] = hooks_.local_array(*this, u);
        return;
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
      case Op::REDUCE:
        return horizontal_reduce(u);
      case Op::BITCAST: {
        const bool v = vec_[u] = is_vec(u.src(0));
        names_[u] = fresh();
        emit("{} = bitcast {} {} to {}", names_[u], vt(u.src(0).dtype(), v), name(u.src(0)),
             vt(u.dtype(), v));
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
    const AxisType type = r.arg_as<RangeArg>().type;
    if (type == AxisType::Loop || type == AxisType::Global || type == AxisType::Thread)
      output_loops_.push_back(r);
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
    std::erase(output_loops_, r);
  }

  // A load whose address moves with none of the output loops around it reads the same memory for
  // every output (a matvec's activations): the first output brought it into the cache, so a
  // prefetch would only take a load slot (a Q4_K matvec issued 8 per super-block this way).
  bool reused_across_outputs(const UOp& idx) const {
    if (output_loops_.empty()) return false;
    for (const UOp& r : output_loops_)
      if (depends_on(idx, r)) return false;
    return true;
  }

  // How an INDEX is accessed: one element, `lanes_` contiguous elements (all or none of them, by a
  // scalar gate), or a gather/scatter of `lanes_` pointers.
  enum class Access { Scalar, Contiguous, MaskedContiguous, Gather };

  void index(const UOp& u) {
    UOp base = u.src(0);
    while (base.op() == Op::AFTER) base = base.src(0);
    if (base.op() == Op::DEFINE_REG) {  // accumulators hold one element (or one vector)
      names_[u] = name(base);
      vec_[u] = is_vec(base);
      access_[u] = vec_[u] ? Access::Contiguous : Access::Scalar;
      return;
    }
    const UOp& i = u.src(1);
    const bool gated = u.src().size() > 2;
    const bool v = vec_[u] = is_vec(i) || (gated && is_vec(u.src(2)));
    const std::string it = ltype(i.dtype());
    const std::string et = mtype(base.dtype().base());
    const std::string pt = idx_ptr_type(u);
    names_[u] = fresh();
    if (!v) {
      std::string idx = name(i);
      if (gated) {  // index 0 is always in bounds, so the load is safe
        std::string sel = fresh();
        emit("{} = select i1 {}, {} {}, {} 0", sel, name(u.src(2)), it, idx, it);
        idx = sel;
      }
      access_[u] = Access::Scalar;
      emit("{} = getelementptr inbounds {}, {} {}, {} {}", names_[u], et, pt, name(base), it, idx);
      return;
    }
    // The vector axis the index moves along (lane axes of different reduces share the width).
    UOp axis;
    for (const UOp& r : i.toposort())
      if (r.op() == Op::RANGE && is_vec(r)) axis = r;
    if (affine_coefficient(i, axis) == 1) {
      // Lane 0's address; the access covers the next lanes_ elements. Under a false scalar gate
      // the address is the buffer's start (in bounds) and the masked access touches nothing. A
      // gate per lane (the masked tail of a symbolic axis) may leave lane 0's address outside the
      // buffer: no inbounds.
      std::string first = fresh();
      emit("{} = extractelement <{} x {}> {}, i64 0", first, lanes_, it, name(i));
      const bool lane_gate = gated && is_vec(u.src(2));
      if (gated && !lane_gate) {
        std::string sel = fresh();
        emit("{} = select i1 {}, {} {}, {} 0", sel, name(u.src(2)), it, first, it);
        first = sel;
      }
      access_[u] = gated ? Access::MaskedContiguous : Access::Contiguous;
      emit("{} = getelementptr {}{}, {} {}, {} {}", names_[u], lane_gate ? "" : "inbounds ", et, pt,
           name(base), it, first);
      return;
    }
    access_[u] = Access::Gather;
    emit("{} = getelementptr inbounds {}, {} {}, <{} x {}> {}", names_[u], et, pt, name(base),
         lanes_, it, val(i, true));
  }

  std::string ptr_vec_type() const { return fmt::format("<{} x {}>", lanes_, ptr_type()); }
  std::string ptr_suffix() const {
    return fmt::format("v{}p{}", lanes_, target_.global_address_space);
  }
  std::string mask_of(const UOp& idx) {
    return idx.src().size() > 2 ? val(idx.src(2), true) : all_true();
  }

  // A read prefetch (locality 3, data cache) of the bytes `prefetch_bytes` past `ptr`: an address
  // past the buffer's end is harmless (no inbounds, and a prefetch never faults).
  void prefetch(const std::string& ptr) {
    declares_.insert("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)");
    const std::string ahead = fresh();
    emit("{} = getelementptr i8, ptr {}, i64 {}", ahead, ptr, target_.prefetch_bytes);
    emit("call void @llvm.prefetch.p0(ptr {}, i32 0, i32 3, i32 1)", ahead);
  }

  void load(const UOp& u) {
    const UOp& idx = u.src(0);
    const DType t = u.dtype();
    const bool v = vec_[u] = is_vec(idx);
    const std::string mt = vmt(t, v);
    const size_t align = itemsize(t.base());
    std::string r = fresh();
    if (access_.at(idx) == Access::Gather) {
      const std::string fn =
          fmt::format("llvm.masked.gather.v{}{}.{}", lanes_, mem_suffix(t), ptr_suffix());
      declares_.insert(fmt::format("declare {} @{}({}, i32, <{} x i1>, {})", mt, fn, ptr_vec_type(),
                                   lanes_, mt));
      emit("{} = call {} @{}({} {}, i32 {}, <{} x i1> {}, {} zeroinitializer)", r, mt, fn,
           ptr_vec_type(), name(idx), align, lanes_, mask_of(idx), mt);
    } else if (access_.at(idx) == Access::MaskedContiguous) {
      const std::string fn =
          fmt::format("llvm.masked.load.v{}{}.{}", lanes_, mem_suffix(t), ptr_overload(idx));
      declares_.insert(fmt::format("declare {} @{}({}, i32, <{} x i1>, {})", mt, fn,
                                   idx_ptr_type(idx), lanes_, mt));
      emit("{} = call {} @{}({} {}, i32 {}, <{} x i1> {}, {} zeroinitializer)", r, mt, fn,
           idx_ptr_type(idx), name(idx), align, lanes_, mask_of(idx), mt);
    } else {
      if (v && (itemsize(t.base()) <= 2 || is_int(t)) && target_.prefetch_bytes > 0 &&
          !reused_across_outputs(idx))
        prefetch(name(idx));
      emit("{} = load {}, {} {}, align {}", r, mt, idx_ptr_type(idx), name(idx), align);
    }
    if (is_bool(t)) {
      std::string b = fresh();
      emit("{} = icmp ne {} {}, {}", b, mt, r, v ? "zeroinitializer" : "0");
      r = b;
    }
    if (!v && idx.src().size() > 2) {
      std::string g = fresh();
      emit("{} = select i1 {}, {} {}, {} {}", g, name(idx.src(2)), ltype(t), r, ltype(t),
           zero(t, false));
      r = g;
    }
    names_[u] = r;
  }

  void store(const UOp& u) {
    const UOp &idx = u.src(0), &value = u.src(1);
    const bool v = is_vec(idx);
    if (!v && is_vec(value))
      internal_error("render_llvm: a vector value stored through a scalar index");
    std::string x = val(value, v);
    const DType t = value.dtype();
    const std::string mt = vmt(t, v);
    if (is_bool(t)) {
      std::string z = fresh();
      emit("{} = zext {} {} to {}", z, vt(t, v), x, mt);
      x = z;
    }
    // The expander only keeps a vector axis along which stores are contiguous.
    if (access_.at(idx) == Access::Gather)
      internal_error("render_llvm: a store that is not contiguous along the vector axis");
    const size_t align = itemsize(t.base());
    if (access_.at(idx) == Access::MaskedContiguous) {
      const std::string fn =
          fmt::format("llvm.masked.store.v{}{}.{}", lanes_, mem_suffix(t), ptr_overload(idx));
      declares_.insert(fmt::format("declare void @{}({}, {}, i32, <{} x i1>)", fn, mt,
                                   idx_ptr_type(idx), lanes_));
      emit("call void @{}({} {}, {} {}, i32 {}, <{} x i1> {})", fn, mt, x, idx_ptr_type(idx),
           name(idx), align, lanes_, mask_of(idx));
      return;
    }
    if (u.src().size() > 2 && !v) {  // gated store: only where the gate holds
      const int id = next_block_++;
      emit("br i1 {}, label %st{}, label %stdone{}", name(u.src(2)), id, id);
      label(fmt::format("st{}", id));
      emit("store {} {}, {} {}, align {}", mt, x, idx_ptr_type(idx), name(idx), align);
      emit("br label %stdone{}", id);
      label(fmt::format("stdone{}", id));
      return;
    }
    emit("store {} {}, {} {}, align {}", mt, x, idx_ptr_type(idx), name(idx), align);
  }

  std::string idx_ptr_type(const UOp& idx) {
    UOp base = idx.src(0);
    while (base.op() == Op::AFTER) base = base.src(0);
    if (base.op() == Op::DEFINE_LOCAL) return hooks_.local_ptr_type(target_);
    return base.op() == Op::DEFINE_REG ? "ptr" : ptr_type();
  }

  // The intrinsic overload suffix of idx_ptr_type(idx): p0, p1, p3.
  std::string ptr_overload(const UOp& idx) {
    const std::string t = idx_ptr_type(idx);
    const size_t at = t.find('(');
    return at == std::string::npos ? "p0"
                                   : fmt::format("p{}", t.substr(at + 1, t.find(')') - at - 1));
  }

  void cast(const UOp& u) {
    const DType from = u.src(0).dtype(), to = u.dtype();
    const bool v = vec_[u] = is_vec(u.src(0));
    const std::string& x = name(u.src(0));
    if (ltype(from) == ltype(to)) {
      names_[u] = x;
      return;
    }
    std::string r = fresh(), op;
    names_[u] = r;
    const std::string ft = vt(from, v), tt = vt(to, v);
    if (is_bool(to)) {
      const std::string z = v ? "zeroinitializer" : is_float(from) ? "0.0" : "0";
      emit("{} = {} {} {}, {}", r, is_float(from) ? "fcmp une" : "icmp ne", ft, x, z);
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
    emit("{} = {} {} {} to {}", r, op, ft, x, tt);
  }

  // REDUCE(x, lanes) left by lower_reduce: x's vector lanes combined into one value.
  void horizontal_reduce(const UOp& u) {
    const UOp& x = u.src(0);
    const DType t = x.dtype().base();
    vec_[u] = false;
    const std::string lanes = val(x, true);  // a lane-invariant value counts once per lane
    const Op op = u.arg_as<Op>();
    const bool fl = is_float(t);
    std::string fn;
    if (op == Op::ADD) fn = fl ? "fadd" : "add";
    if (op == Op::MUL) fn = fl ? "fmul" : "mul";
    if (op == Op::MAX) fn = fl ? "fmax" : is_signed(t) ? "smax" : "umax";
    if (fn.empty()) internal_error("render_llvm: no horizontal reduce for {}", op_name(op));
    const std::string et = ltype(t), suffix = fmt::format("v{}{}", lanes_, mem_suffix(t));
    const std::string full = fmt::format("llvm.vector.reduce.{}.{}", fn, suffix);
    const std::string vty = vt(t, true);
    std::string r = fresh();
    if (fl && op != Op::MAX) {  // ordered by default: reassoc lets LLVM use a shuffle tree
      declares_.insert(fmt::format("declare {} @{}({}, {})", et, full, et, vty));
      emit("{} = call reassoc {} @{}({} {}, {} {})", r, et, full, et,
           const_literal(reduce_start(op, t)), vty, lanes);
    } else {
      declares_.insert(fmt::format("declare {} @{}({})", et, full, vty));
      emit("{} = call {}{} @{}({} {})", r, fl ? "nnan " : "", et, full, vty, lanes);
    }
    names_[u] = r;
  }
  // The start value of an ordered float reduction: -0.0 for ADD (x + -0.0 == x), 1 for MUL.
  static UOp reduce_start(Op op, DType t) { return UOp::cnst(t, op == Op::ADD ? -0.0 : 1.0); }

  void alu(const UOp& u) {
    const Op op = u.op();
    bool v = false;
    for (const UOp& s : u.src()) v |= is_vec(s);
    vec_[u] = v;
    const DType t = u.src(0).dtype();
    const bool fl = is_float(t), sg = is_signed(t);
    const std::string ty = vt(t, v);
    auto a = [&](size_t i) { return val(u.src(i), v); };
    std::string r;
    // Index math never overflows: nsw lets LLVM reason about addresses.
    const std::string iflags = t.scalar == Scalar::Index ? " nsw" : "";
    const std::string fflags = is_accumulate(u) ? " reassoc contract" : " contract";
    auto bin = [&](const std::string& inst, const std::string& flags) {
      std::string x = a(0), y = a(1);
      r = fresh();
      emit("{} = {}{} {} {}, {}", r, inst, flags, ty, x, y);
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
          r = call_intrinsic("maxnum", t, v, is_accumulate(u) ? "reassoc nnan " : "", {a(0), a(1)});
        } else {
          std::string x = a(0), y = a(1), c = fresh();
          emit("{} = icmp {} {} {}, {}", c, sg ? "sgt" : "ugt", ty, x, y);
          r = fresh();
          emit("{} = select {} {}, {} {}, {} {}", r, vt(dtypes::bool_, v), c, ty, x, ty, y);
        }
        break;
      case Op::DOT4:
        r = hooks_.dot4(*this, u, v ? lanes_ : 1);
        break;
      case Op::BYTE_LUT:
        r = hooks_.byte_lut(*this, u, v ? lanes_ : 1);
        break;
      case Op::WHERE: {
        const std::string et = vt(u.src(1).dtype(), v);
        std::string c = name(u.src(0)), x = a(1), y = a(2);
        r = fresh();
        emit("{} = select {} {}, {} {}, {} {}", r, vt(dtypes::bool_, is_vec(u.src(0))), c, et, x,
             et, y);
        break;
      }
      case Op::NEG: {
        std::string x = a(0);
        r = fresh();
        if (fl)
          emit("{} = fneg {} {}", r, ty, x);
        else
          emit("{} = sub {} {}, {}", r, ty, zero(t, v), x);
        break;
      }
      case Op::RECIP: {
        std::string x = a(0), one = val(UOp::cnst(t.base(), 1.0), v);
        r = fresh();
        emit("{} = fdiv arcp contract {} {}, {}", r, ty, one, x);
        break;
      }
      case Op::SQRT:
        r = call_intrinsic("sqrt", t, v, "", {a(0)});
        break;
      case Op::EXP2:
        r = call_intrinsic("exp2", t, v, "afn ", {a(0)});
        break;
      case Op::LOG2:
        r = call_intrinsic("log2", t, v, "afn ", {a(0)});
        break;
      case Op::SIN:
        r = call_intrinsic("sin", t, v, "afn ", {a(0)});
        break;
      case Op::TRUNC:
        r = call_intrinsic("trunc", t, v, "", {a(0)});
        break;
      default:
        internal_error("render_llvm: {} should have been decomposed", op_name(op));
    }
    names_[u] = r;
  }

  // VECTORIZE and GEP of explicitly vector-typed values (WMMA fragments, a DOT4 word's bytes).
  void vector_op(const UOp& u) {
    std::string r;
    if (u.op() == Op::VECTORIZE) {
      r = "poison";
      for (size_t i = 0; i < u.src().size(); ++i) {
        std::string n = fresh();
        emit("{} = insertelement {} {}, {} {}, i64 {}", n, vector_type(u.dtype()), r,
             ltype(u.src(i).dtype()), name(u.src(i)), i);
        r = n;
      }
    } else {
      r = fresh();
      emit("{} = extractelement {} {}, i64 {}", r, vector_type(u.src(0).dtype()), name(u.src(0)),
           u.arg_as<std::vector<int64_t>>().at(0));
    }
    names_[u] = r;
  }

  const KernelSignature& sig_;
  const CodegenTarget& target_;
  const TargetHooks& hooks_;
  int64_t local_threads_ = 1;
  std::string globals_;
  std::unordered_map<UOp, std::string> names_;
  std::unordered_map<UOp, int> loop_ids_;
  std::vector<UOp> output_loops_;  // open loops over outputs (not reduce loops)
  std::vector<int> if_stack_;
  std::set<std::string> declares_;
  std::unordered_map<UOp, bool> vec_;
  std::unordered_map<UOp, Access> access_;
  std::map<std::pair<UOp, std::string>, std::string> splats_;
  int64_t lanes_ = 1;
  std::string allocas_, body_, block_ = "entry";
  int next_ = 0, next_block_ = 0;
};

}  // namespace

std::string render_llvm(const std::vector<UOp>& program, const KernelSignature& sig,
                        const CodegenTarget& target, const std::string& name,
                        int64_t local_threads) {
  return Renderer(sig, target, local_threads).render(program, name);
}

}  // namespace ugrad
