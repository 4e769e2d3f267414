// `llm serve`: loads the model and runs the OpenAI-compatible server (llm/server/server.h) until
// SIGINT or SIGTERM.
#pragma once
#include "llm/cli/options.h"

namespace ugrad::llm {

/// Runs the server for parsed `llm serve` options; returns the exit code.
int run_serve(const CliOptions& o);

}  // namespace ugrad::llm
