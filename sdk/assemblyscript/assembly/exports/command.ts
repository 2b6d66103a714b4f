// Reef AssemblyScript SDK: the exports of a command module, for command(init, fold, decide).
// Re-export them from the entry file:  export * from "reef-sdk/assembly/exports/command";
import { commandInit, commandFold, commandDecide } from "../module";

// reef_abi_version and reef_alloc, which every module exports.
export { reef_abi_version, reef_alloc } from "./unit";

/** input -> {"query": query or null, "state": value}. */
export function reef_command_init(ip: i32, il: i32): i64 {
  return commandInit(ip, il);
}

/** state, input, a page of events -> the state after them. */
export function reef_command_fold(sp: i32, sl: i32, ip: i32, il: i32, ep: i32, el: i32): i64 {
  return commandFold(sp, sl, ip, il, ep, el);
}

/** state, input -> {"events": [...]} or {"error": message}. */
export function reef_command_decide(sp: i32, sl: i32, ip: i32, il: i32): i64 {
  return commandDecide(sp, sl, ip, il);
}
