// Reef AssemblyScript SDK: everything a guest imports (ABI reef v1, docs/abi.md).
//
//   import { Value, ActorRef, actor, send, log } from "reef-sdk";
//
// The wasm exports come from one of the modules in exports/, re-exported by the entry file:
// exports/actor (reef_handle), exports/unit (no default handler), exports/shutdown,
// exports/command, exports/fold_ignores_input, exports/projector, exports/effect.
export { Value, Kind, kindName, ActorRef, Limits, DecodeResult, ACTOR_REF_LENGTH } from "./value";
export { Decoder } from "./cbor";
export { Writer, ACTOR_TAG } from "./writer";
export { fail } from "./runtime";
export {
  actor, onShutdown, runHandler, Handler, ShutdownHook,
  send, sendFrom, reply, call, CallResult, CallError, self,
  log, Level, LOG_MAX,
} from "./actor";
export {
  Event, Query, QueryItem, NewEvent, Decision, Init,
  command, projector, effect,
  InitFn, FoldFn, DecideFn, QueryFn, EventFn, PartitionKeyFn,
} from "./module";
export { nowMs, random, fillRandom, randomU64, env, sqlExec, sqlQuery, append } from "./services";
