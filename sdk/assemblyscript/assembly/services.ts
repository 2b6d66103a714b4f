// Reef AssemblyScript SDK: the host services of event-sourced modules (docs/abi.md "Imports
// (module reef)"): time, randomness, environment variables, SQL on the module's own SQLite
// database (projectors and effects) and appending events (effects).
//
// Use these instead of Date.now() and Math.random(): they would import from module "env",
// which the host refuses (build.mjs says so at build time). In a command, nowMs() is fixed for
// the whole execution and random() is derived from the execution id, so a retried execution
// decides the same way.
import { reef_now_ms, reef_random, reef_env, reef_sql_exec, reef_sql_query, reef_append } from "./host";
import { Value } from "./value";
import { Writer } from "./writer";
import { fail, input } from "./runtime";
import { NewEvent, eventsValue } from "./module";

/** Largest buffer one random import call fills. */
const RANDOM_CHUNK: i32 = 65536;

/** Unix time in ms. In a command, one time for the whole execution (when it started). */
export function nowMs(): i64 {
  return reef_now_ms();
}

/** `n` random bytes. Commands: derived from the execution id (each import call draws a new
 * block, so draw what you need in one call); projectors and effects: a CSPRNG. */
export function random(n: i32): Uint8Array {
  const out = new Uint8Array(n);
  fillRandom(out);
  return out;
}

/** Fills `buf` with random bytes (see random). */
export function fillRandom(buf: Uint8Array): void {
  for (let done = 0; done < buf.length; done += RANDOM_CHUNK) {
    const n = min(buf.length - done, RANDOM_CHUNK);
    if (reef_random(buf.dataStart + <usize>done, <usize>n) < 0) fail("reef: random refused " + n.toString() + " bytes");
  }
}

/** A random u64 (eight bytes of random()). */
export function randomU64(): u64 {
  const b = random(8);
  return load<u64>(b.dataStart);
}

/** The module's environment variable `key` (set with PUT /{kind}/{name}/env/{key}), or null
 * when it is unset. Any other answer of the host (-1 for a key that is not valid UTF-8, such
 * as one with a lone surrogate) fails the call rather than pass for an unset variable. */
export function env(key: string): string | null {
  const k = String.UTF8.encode(key);
  let buf = new ArrayBuffer(256);
  let n = 0;
  while ((n = reef_env(changetype<usize>(k), <usize>k.byteLength, changetype<usize>(buf), <usize>buf.byteLength)) > buf.byteLength) {
    buf = new ArrayBuffer(n); // the value did not fit: again, with room for it
  }
  if (n == -6) return null;
  if (n < 0) fail(`env "${key}": the host answered ${n}`);
  return String.UTF8.decodeUnsafe(changetype<usize>(buf), <usize>n);
}

/** SQL params: a list of null, bool, int, float or string values, bound to ?1, ?2, ... */
function paramsOf(params: Array<Value>): Writer {
  const w = new Writer(64);
  w.value(Value.list(params));
  return w;
}

/** Runs one SQL statement on the module's database (projectors and effects); returns the
 * number of rows changed. A SQL error fails the call (a projector stops at the event, an
 * effect retries it). Transactions, ATTACH, PRAGMA writes and the reef_* tables are refused. */
export function sqlExec(sql: string, params: Array<Value> = []): i64 {
  const s = String.UTF8.encode(sql);
  const p = paramsOf(params);
  return reef_sql_exec(changetype<usize>(s), <usize>s.byteLength, p.ptr, p.len);
}

/** Runs one SQL query; returns its rows, each a record column -> value (INTEGER int, REAL
 * float, TEXT string, NULL null; a BLOB column fails the call). */
export function sqlQuery(sql: string, params: Array<Value> = []): Array<Value> {
  const s = String.UTF8.encode(sql);
  const p = paramsOf(params);
  let buf = new ArrayBuffer(4096);
  let n = 0;
  while ((n = reef_sql_query(changetype<usize>(s), <usize>s.byteLength, p.ptr, p.len, changetype<usize>(buf), <usize>buf.byteLength)) > buf.byteLength) {
    buf = new ArrayBuffer(n); // the rows did not fit: again, with room for them
  }
  if (n < 0) fail("reef: sql_query refused the call (" + n.toString() + ")");
  const rows = input(changetype<usize>(buf), <usize>n, "rows of sql_query");
  if (!rows.isList()) {
    fail("reef: sql_query gave no list of rows");
    return [];
  }
  return rows.asList();
}

/** Effects only: appends `events` without a condition; returns the last position (the head
 * for an empty list). They carry the triggering event's correlation id (or its id) and its id
 * as causation id. A refused append fails the call (the effect retries the event). */
export function append(events: Array<NewEvent>): i64 {
  const w = new Writer(128);
  w.value(eventsValue(events));
  return reef_append(w.ptr, w.len);
}
