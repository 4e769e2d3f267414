// A forward call's positions: `len` real tokens at [start_pos, start_pos + len) in `rows` rows
// (prefill pads to LanguageModel::kMaxChunk rows so one captured graph serves every length; decode
// has rows = 1).
#pragma once
#include <cstdint>
#include <vector>

#include "uop/uop.h"

namespace ugrad::llm {

/// The positions one forward call runs. start_pos and len are variables, bound per call, so every
/// call with the same `rows` has the same graph.
struct Chunk {
  int64_t rows;   // static row count of every activation
  UOp start_pos;  // variable in [0, max_context - 1]
  UOp len;        // real tokens: a variable in [1, rows], or the constant 1 when rows == 1
  /// This chunk with its variables bound to a call's values.
  Chunk bind(int64_t start_pos, int64_t len) const;
  /// The bound variables, the inputs of a captured graph: start_pos, then len when variable.
  std::vector<UOp> variables() const;
  /// The chunk of `rows` rows over bound variables as variables() lists them.
  static Chunk from_variables(int64_t rows, const std::vector<UOp>& vars);
};

/// The chunk of `rows` rows for a model of `max_context` positions.
Chunk make_chunk(int64_t rows, int64_t max_context);

/// The variable under a bound start_pos (Chunk::start_pos bound by a call), for a hand-written
/// kernel that takes it as a parameter; an Error names `kernel` when `bound` is anything else.
UOp start_pos_variable(const UOp& bound, const char* kernel);

}  // namespace ugrad::llm
