// Reef AssemblyScript SDK: reef_on_shutdown, for an actor with onShutdown(hook). Re-export it
// next to exports/actor:  export * from "reef-sdk/assembly/exports/shutdown";
import { shutdownDefault } from "../actor";

/** The hook registered with onShutdown(hook): the committed state -> the final state. */
export function reef_on_shutdown(sp: i32, sl: i32): i64 {
  return shutdownDefault(sp, sl);
}
