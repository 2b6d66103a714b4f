// Reef AssemblyScript SDK: the exports of an actor module. Re-export them from the entry
// file, next to actor(handle):  export * from "reef-sdk/assembly/exports/actor";
import { beginCall } from "../runtime";
import { handleDefault } from "../actor";

/** The ABI version: 1. */
export function reef_abi_version(): i32 {
  return 1;
}

/** Frees the previous call's memory and returns `len` bytes for the inputs (0: no memory). */
export function reef_alloc(len: i32): i32 {
  return <i32>beginCall(len);
}

/** The handler registered with actor(handle). */
export function reef_handle(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
  return handleDefault(sp, sl, fp, fl, mp, ml);
}
