#include "wasm/invocation.h"

namespace reef::wasm {

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kFinished:
      return "finished";
    case RunState::kBudgetExhausted:
      return "budget_exhausted";
    case RunState::kSuspended:
      return "suspended";
    case RunState::kTrapped:
      return "trapped";
  }
  return "?";
}

}  // namespace reef::wasm
