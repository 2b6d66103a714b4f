// Reef AssemblyScript SDK: the raw imports of module "reef" (docs/abi.md, ABI v1).
//
// Every (ptr, len) pair is bounds-checked by the host; a pair outside memory traps the call
// (`host_bounds`). AssemblyScript emits an import only when the program calls it, so a guest
// imports only what it uses, as the host requires. Not part of the public API: use the
// wrappers in actor.ts and module.ts.

// ---- Actors (and `log` / `fail` for every kind) ------------------------------------------

// @ts-ignore: decorator
@external("reef", "send")
export declare function reef_send(targetPtr: usize, targetLen: usize, msgPtr: usize, msgLen: usize): i32;

// @ts-ignore: decorator
@external("reef", "send_from")
export declare function reef_send_from(senderPtr: usize, senderLen: usize, targetPtr: usize, targetLen: usize, msgPtr: usize, msgLen: usize): i32;

// @ts-ignore: decorator
@external("reef", "call")
export declare function reef_call(targetPtr: usize, targetLen: usize, msgPtr: usize, msgLen: usize, timeoutMs: i32): i32;

// @ts-ignore: decorator
@external("reef", "call_reply")
export declare function reef_call_reply(bufPtr: usize, bufCap: usize): i32;

// @ts-ignore: decorator
@external("reef", "log")
export declare function reef_log(level: i32, msgPtr: usize, msgLen: usize): i32;

// @ts-ignore: decorator
@external("reef", "self")
export declare function reef_self(bufPtr: usize, bufCap: usize): i32;

// @ts-ignore: decorator
@external("reef", "fail")
export declare function reef_fail(msgPtr: usize, msgLen: usize): void;

// ---- Event-sourced modules ----------------------------------------------------------------

// @ts-ignore: decorator
@external("reef", "now_ms")
export declare function reef_now_ms(): i64;

// @ts-ignore: decorator
@external("reef", "random")
export declare function reef_random(bufPtr: usize, len: usize): i32;

// @ts-ignore: decorator
@external("reef", "env")
export declare function reef_env(keyPtr: usize, keyLen: usize, outPtr: usize, outCap: usize): i32;

// @ts-ignore: decorator
@external("reef", "sql_exec")
export declare function reef_sql_exec(sqlPtr: usize, sqlLen: usize, paramsPtr: usize, paramsLen: usize): i64;

// @ts-ignore: decorator
@external("reef", "sql_query")
export declare function reef_sql_query(sqlPtr: usize, sqlLen: usize, paramsPtr: usize, paramsLen: usize, outPtr: usize, outCap: usize): i32;

// @ts-ignore: decorator
@external("reef", "append")
export declare function reef_append(eventsPtr: usize, eventsLen: usize): i64;
