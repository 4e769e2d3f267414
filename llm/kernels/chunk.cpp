#include "llm/kernels/chunk.h"

#include "base/error.h"
#include "schedule/schedule.h"
#include "uop/shape.h"

namespace ugrad::llm {

Chunk make_chunk(int64_t rows, int64_t max_context) {
  UOp len = rows == 1 ? dim(1) : UOp::variable("chunk_len", 1, rows);
  return {rows, UOp::variable("start_pos", 0, max_context - 1), len};
}

UOp start_pos_variable(const UOp& bound, const char* kernel) {
  const UOp var = unbind_variable(bound).first;
  if (var.op() != Op::PARAM || var.arg_as<ParamArg>().name != "start_pos")
    fail("{}: start_pos must be the bound variable 'start_pos'", kernel);
  return var;
}

Chunk Chunk::bind(int64_t sp, int64_t n) const {
  return {rows, bind_variable(start_pos, sp), rows == 1 ? len : bind_variable(len, n)};
}

std::vector<UOp> Chunk::variables() const {
  if (rows == 1) return {start_pos};
  return {start_pos, len};
}

Chunk Chunk::from_variables(int64_t rows, const std::vector<UOp>& vars) {
  return {rows, vars.at(0), rows == 1 ? dim(1) : vars.at(1)};
}

}  // namespace ugrad::llm
