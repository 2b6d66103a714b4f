// Reef AssemblyScript SDK: the exports of an effect module, for
// effect(query, partitionKey, handle). Re-export them from the entry file:
//   export * from "reef-sdk/assembly/exports/effect";
import { moduleQuery, moduleEvent, effectPartitionKey } from "../module";

// reef_abi_version and reef_alloc, which every module exports.
export { reef_abi_version, reef_alloc } from "./unit";

/** -> the effect's query (called once by the dispatcher and each worker). */
export function reef_query(): i64 {
  return moduleQuery();
}

/** One event -> a string key, or null for the global worker. */
export function reef_partition_key(ep: i32, el: i32): i64 {
  return effectPartitionKey(ep, el);
}

/** One event -> 0 when handled. */
export function reef_effect(ep: i32, el: i32): i32 {
  return moduleEvent(ep, el);
}
