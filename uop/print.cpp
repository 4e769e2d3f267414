// Text forms of UOps: a compact infix rendering for symbolic expressions and a one-line-per-node
// listing for whole graphs. Both walk iteratively.
#include <unordered_map>
#include <variant>

#include <fmt/format.h>

#include "uop/uop.h"

namespace ugrad {

std::string arg_to_string(const Arg& a) {
  struct Visitor {
    std::string operator()(std::monostate) { return ""; }
    std::string operator()(bool v) { return v ? "True" : "False"; }
    std::string operator()(int64_t v) { return fmt::format("{}", v); }
    std::string operator()(double v) { return fmt::format("{}", v); }
    std::string operator()(const std::string& v) { return fmt::format("{:?}", v); }
    std::string operator()(const std::vector<int64_t>& v) {
      return fmt::format("({})", fmt::join(v, ", "));
    }
    std::string operator()(Op v) { return std::string(op_name(v)); }
    std::string operator()(const ParamArg& v) {
      if (v.slot < 0) return fmt::format("{}[{}, {}]", v.name, v.lo, v.hi);
      return fmt::format("slot={} {}", v.slot, v.name);
    }
    std::string operator()(const BufferArg& v) {
      return fmt::format("buf{} size={} {}", v.id, v.size, v.device);
    }
    std::string operator()(const RangeArg& v) {
      return fmt::format("axis={} {}", v.axis, axis_type_name(v.type));
    }
    std::string operator()(const ReduceArg& v) {
      return fmt::format("{} axes=({})", op_name(v.op), fmt::join(v.axes, ", "));
    }
    std::string operator()(const Dot4Arg& v) {
      return fmt::format("{}8*{}8", v.a_signed ? "i" : "u", v.b_signed ? "i" : "u");
    }
  };
  return std::visit(Visitor{}, a);
}

namespace {

// Infix spelling of binary ops that read naturally that way.
const char* infix(Op op) {
  switch (op) {
    case Op::ADD:
      return "+";
    case Op::SUB:
      return "-";
    case Op::MUL:
      return "*";
    case Op::IDIV:
      return "//";
    case Op::MOD:
      return "%";
    case Op::FDIV:
      return "/";
    case Op::CMPLT:
      return "<";
    case Op::CMPNE:
      return "!=";
    case Op::CMPEQ:
      return "==";
    case Op::AND:
      return "&";
    case Op::OR:
      return "|";
    case Op::XOR:
      return "^";
    case Op::SHL:
      return "<<";
    case Op::SHR:
      return ">>";
    default:
      return nullptr;
  }
}

std::string leaf(const UOp& u) {
  switch (u.op()) {
    case Op::CONST:
      return arg_to_string(u.arg());
    case Op::PARAM: {
      const auto& p = u.arg_as<ParamArg>();
      return p.slot < 0 ? p.name : fmt::format("data{}", p.slot);
    }
    case Op::RANGE:
      return fmt::format("r{}", u.arg_as<RangeArg>().axis);
    case Op::SPECIAL:
      return std::get<std::string>(u.arg());
    case Op::AFTER:  // a bound variable, AFTER(var, STORE(var, value)): "name=value"
      if (u.src(0).op() == Op::PARAM && u.src().size() == 2 && u.src(1).op() == Op::STORE &&
          u.src(1).src(1).op() == Op::CONST)
        return fmt::format("{}={}", leaf(u.src(0)), arg_to_string(u.src(1).src(1).arg()));
      return "";
    default:
      return "";
  }
}

constexpr size_t kMaxRender = 1 << 20;  // a heavily shared DAG can render exponentially long

}  // namespace

std::string UOp::render() const {
  std::string out;
  // Work items: a node to expand, or a literal piece of text.
  std::vector<std::variant<const UOp*, const char*>> stack{this};
  while (!stack.empty()) {
    auto item = stack.back();
    stack.pop_back();
    if (auto* text = std::get_if<const char*>(&item)) {
      out += *text;
      continue;
    }
    const UOp& u = *std::get<const UOp*>(item);
    if (out.size() > kMaxRender) {
      out += "...";
      break;
    }
    if (std::string l = leaf(u); !l.empty()) {
      out += l;
    } else if (const char* op = infix(u.op()); op && u.src().size() == 2) {
      stack.insert(stack.end(), {")", &u.src(1), op, &u.src(0)});
      out += "(";
    } else if (u.op() == Op::NEG) {
      stack.insert(stack.end(), {")", &u.src(0)});
      out += "(-";
    } else if (u.op() == Op::WHERE) {
      stack.insert(stack.end(), {")", &u.src(2), ":", &u.src(1), "?", &u.src(0)});
      out += "(";
    } else {
      out += fmt::format("{}(", u.op() == Op::MAX ? "max" : op_name(u.op()));
      if (u.op() == Op::CAST) out += to_string(u.dtype()) + ", ";
      stack.push_back(")");
      for (size_t i = u.src().size(); i-- > 0;) {
        stack.push_back(&u.src(i));
        if (i > 0) stack.push_back(", ");
      }
    }
  }
  return out;
}

std::string UOp::print_graph() const {
  std::unordered_map<const UOpNode*, size_t> number;
  std::string out;
  for (const UOp& u : toposort()) {
    size_t i = number.size();
    number.emplace(u.node(), i);
    std::string srcs;
    for (const UOp& s : u.src())
      srcs += fmt::format("{}%{}", srcs.empty() ? "" : ", ", number.at(s.node()));
    out += fmt::format("%{} = {} {} ({})", i, op_name(u.op()), to_string(u.dtype()), srcs);
    if (std::string a = arg_to_string(u.arg()); !a.empty()) out += " " + a;
    out += "\n";
  }
  return out;
}

}  // namespace ugrad
