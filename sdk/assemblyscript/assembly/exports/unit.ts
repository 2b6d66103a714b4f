// Reef AssemblyScript SDK: the exports of a module without a default handler, whose handlers
// are all further exports named by a program's units (docs/abi.md "Handlers of a program's
// units"). Re-export them from the entry file:  export * from "reef-sdk/assembly/exports/unit";
// and export each handler with reef_handle's signature through runHandler.
import { beginCall } from "../runtime";

/** The ABI version: 1. */
export function reef_abi_version(): i32 {
  return 1;
}

/** Frees the previous call's memory and returns `len` bytes for the inputs (0: no memory). */
export function reef_alloc(len: i32): i32 {
  return <i32>beginCall(len);
}
