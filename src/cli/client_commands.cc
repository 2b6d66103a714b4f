// Client commands: placeholder until the client lands (issue 4).
#include "cli/commands.h"

namespace reef::cli {
std::span<const Command> ClientCommands() { return {}; }
}  // namespace reef::cli
