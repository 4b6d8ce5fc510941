// Command-line normalisation for Nomad-style flags. Nomad's CLI (Go's `flag` package)
// takes long flags with one dash (`-detach`, `-address=http://...`); CLI11 wants two, so
// the CLI rewrites argv before parsing.
#pragma once

#include <string>
#include <vector>

namespace drover::cli {

// Returns `args` with every single-dash long flag turned into a double-dash one:
// "-dev" -> "--dev", "-http-port=0" -> "--http-port=0". `args[0]` (the program name),
// single-letter flags ("-h"), negative numbers ("-1"), "-" (stdin) and everything after a
// bare "--" are left alone, as are tokens that already start with "--".
std::vector<std::string> NormalizeArgs(const std::vector<std::string>& args);

}  // namespace drover::cli
