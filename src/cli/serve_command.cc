// `reef serve`: placeholder until the image lands (issue 4).
#include "cli/commands.h"

namespace reef::cli {
std::span<const Command> ServeCommands() { return {}; }
}  // namespace reef::cli
