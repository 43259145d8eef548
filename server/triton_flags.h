#pragma once
// Every flag of tritonserver's command line, and what graphserve does with
// it: one table, so that a Triton command line or Helm chart starts
// graphserve unchanged and nobody has to guess which flags matter here.
//
// Note [Triton's flags]
// A flag whose feature GraphServe has is a graphserve flag with Triton's
// name and meaning (server_command.cc registers it with its help). A flag
// whose feature does not exist here (backends, repository agents, SageMaker,
// Vertex AI, response caches, the rate limiter, Triton's memory pools) is
// accepted, its value checked by its kind, and one log line at startup
// says why it does not apply; --help lists those in one short section. A
// flag that guards security is never accepted without doing what it says:
// it is served, or refused as unknown until it is (kNotYet).
// server/testdata/tritonserver_2.73_flags.txt lists Triton's flags, taken
// from its command_line_parser.cc; the test checks this table against it.

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace graphserve {

enum class TritonFlagUse {
  kServed,   // a graphserve flag with Triton's meaning
  kIgnored,  // accepted; one log line says why it does not apply
  kNotYet,   // security-relevant and not implemented yet: refused as unknown
};

struct TritonFlag {
  absl::string_view name;   // without "--"
  // Triton's value syntax: "<none>", "<boolean>", "<integer>", "<float>",
  // "<string>", or its composite forms ("<string>,<string>=<string>"...).
  absl::string_view value;
  TritonFlagUse use;
  // kServed: what graphserve does with it; otherwise why it does not apply.
  absl::string_view what;
};

// The table, in Triton's order.
absl::Span<const TritonFlag> TritonFlags();

// The row of `name`, or null for a flag Triton does not have.
const TritonFlag* FindTritonFlag(absl::string_view name);

// "--backend-directory does not apply to graphserve (...); ignored": the
// startup line for an ignored flag.
std::string IgnoredFlagNotice(const TritonFlag& flag);

}  // namespace graphserve
