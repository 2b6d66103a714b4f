// Reef AssemblyScript SDK: the exports of an effect module, for
// effect(query, partitionKey, handle). Re-export them from the entry file:
//   export * from "reef-sdk/assembly/exports/effect";
import { beginCall } from "../runtime";
import { moduleQuery, moduleEvent, effectPartitionKey } from "../module";

/** The ABI version: 1. */
export function reef_abi_version(): i32 {
  return 1;
}

/** Frees the previous call's memory and returns `len` bytes for the inputs (0: no memory). */
export function reef_alloc(len: i32): i32 {
  return <i32>beginCall(len);
}

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
