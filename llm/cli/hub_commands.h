// `llm pull`, `llm list` and `llm rm`: models in the Hugging Face hub cache (llm/hub/hub.h), and
// the progress display of a download.
#pragma once
#include <string>
#include <vector>

#include "llm/hub/hub.h"

namespace ugrad::llm {

/// True for "pull", "list" and "rm".
bool is_hub_command(const std::string& word);

/// Runs `llm COMMAND ARGS...`: pull NAME [--json], list [--json], rm NAME (NAME an alias or
/// ORG/NAME:FILE[@REVISION]); returns the exit code. Usage errors are Errors.
int run_hub_command(const std::string& command, const std::vector<std::string>& args);

/// A download's progress on stderr: a bar (bytes, rate, ETA) redrawn in place on a terminal, a
/// plain line every 5 seconds otherwise, nothing when `quiet`.
ProgressFn progress_display(const std::string& what, bool quiet);

/// "1.2 GB": bytes in decimal units, one decimal.
std::string human_bytes(double bytes);

}  // namespace ugrad::llm
