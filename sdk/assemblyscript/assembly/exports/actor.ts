// Reef AssemblyScript SDK: the exports of an actor module. Re-export them from the entry
// file, next to actor(handle):  export * from "reef-sdk/assembly/exports/actor";
import { handleDefault } from "../actor";

// reef_abi_version and reef_alloc, which every module exports.
export { reef_abi_version, reef_alloc } from "./unit";

/** The handler registered with actor(handle). */
export function reef_handle(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
  return handleDefault(sp, sl, fp, fl, mp, ml);
}
