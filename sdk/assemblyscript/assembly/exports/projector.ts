// Reef AssemblyScript SDK: the exports of a projector module, for projector(query, project).
// Re-export them from the entry file:  export * from "reef-sdk/assembly/exports/projector";
import { beginCall } from "../runtime";
import { moduleQuery, moduleEvent } from "../module";

/** The ABI version: 1. */
export function reef_abi_version(): i32 {
  return 1;
}

/** Frees the previous call's memory and returns `len` bytes for the inputs (0: no memory). */
export function reef_alloc(len: i32): i32 {
  return <i32>beginCall(len);
}

/** -> the projector's query (called once when it starts). */
export function reef_query(): i64 {
  return moduleQuery();
}

/** One event -> 0 when handled. */
export function reef_project(ep: i32, el: i32): i32 {
  return moduleEvent(ep, el);
}
