// shapejit cache stats|ls|verify|clear [--config C]: the disk tier that a
// config names (cache.disk.path; empty: the default folder).
#pragma once

#include <string>

#include "jit/policy/config.h"

namespace shapejit::tools {

// Exit status: 0, 1 when verify finds a bad file or a folder cannot be read
// or cleared, 2 on bad usage.
int cache_command(const std::string& subcommand, const policy::Config& config);

}  // namespace shapejit::tools
