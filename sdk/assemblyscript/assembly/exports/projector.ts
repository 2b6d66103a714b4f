// Reef AssemblyScript SDK: the exports of a projector module, for projector(query, project).
// Re-export them from the entry file:  export * from "reef-sdk/assembly/exports/projector";
import { moduleQuery, moduleEvent } from "../module";

// reef_abi_version and reef_alloc, which every module exports.
export { reef_abi_version, reef_alloc } from "./unit";

/** -> the projector's query (called once when it starts). */
export function reef_query(): i64 {
  return moduleQuery();
}

/** One event -> 0 when handled. */
export function reef_project(ep: i32, el: i32): i32 {
  return moduleEvent(ep, el);
}
