// Reef AssemblyScript SDK: event-sourced modules (docs/abi.md "Event-sourced modules"):
// commands, projectors and effects, and the values they exchange with the host: Event, Query,
// NewEvent, Decision, Init. The host services (nowMs, random, env, sqlExec, sqlQuery, append)
// are in services.ts.
//
//   command(init, fold, decide)       + export * from "reef-sdk/assembly/exports/command"
//   projector(query, project)         + export * from "reef-sdk/assembly/exports/projector"
//   effect(query, partitionKey, handle) + export * from "reef-sdk/assembly/exports/effect"
//
// A command whose fold does not read its input also has
// `export * from "reef-sdk/assembly/exports/fold_ignores_input"` (docs/abi.md "The fold cache").
// A throw or fail(reason) fails the call: a command execution fails (HTTP 500, nothing is
// appended), a projector stops at the event, an effect retries it later. A Decision.reject is
// no failure: the caller gets HTTP 422 with the message.
import { Value, Kind } from "./value";
import { Decoder } from "./cbor";
import { Writer } from "./writer";
import { fail, input, pack, packValue, hostDecoderAt } from "./runtime";

// ---- Events ------------------------------------------------------------------------------

/** One stored event, as the host passes it. */
export class Event {
  /** The store position, 1-based, gapless. */
  position: i64 = 0;
  /** UUID, 36 characters. */
  id: string = "";
  type: string = "";
  tags: Array<string> = [];
  /** The data (JSON data as a value); null when the event has no JSON data or its encryption
   * key was shredded. */
  data: Value = Value.null();
  /** Unix time in ms at which it was appended. */
  timestampMs: i64 = 0;
  /** "" when absent. */
  correlationId: string = "";
  /** "" when absent. */
  causationId: string = "";
  /** The application's own metadata: a record, or null when the event has none. */
  metadata: Value = Value.null();

  /** True when the event carries exactly the tag `tag`. */
  hasTag(tag: string): bool {
    return this.tags.includes(tag);
  }
}

// Event fields; the first six are required.
const F_POSITION = 0, F_ID = 1, F_TYPE = 2, F_TAGS = 3, F_DATA = 4, F_TIMESTAMP = 5;
const F_CORRELATION = 6, F_CAUSATION = 7, F_METADATA = 8, F_OTHER = 9;

/** Which event field the key just read (the decoder's span) names. */
function eventField(d: Decoder): i32 {
  if (d.spanIs("position")) return F_POSITION;
  if (d.spanIs("id")) return F_ID;
  if (d.spanIs("type")) return F_TYPE;
  if (d.spanIs("tags")) return F_TAGS;
  if (d.spanIs("data")) return F_DATA;
  if (d.spanIs("timestamp_ms")) return F_TIMESTAMP;
  if (d.spanIs("correlation_id")) return F_CORRELATION;
  if (d.spanIs("causation_id")) return F_CAUSATION;
  if (d.spanIs("metadata")) return F_METADATA;
  return F_OTHER;
}

/** Reads one event record at the decoder; null (and d.err set) when it is none. */
export function readEvent(d: Decoder): Event | null {
  if (!d.head()) return null;
  if (d.major != 5) {
    d.error(d.at, "an event must be a record");
    return null;
  }
  const count = <i32>d.arg;
  const e = new Event();
  let required = 0; // bits of the required fields found
  for (let i = 0; i < count; i++) {
    if (!d.key()) return null;
    const field = eventField(d); // before the value's strings replace the key's span
    const at = d.p;
    const v = d.item(1);
    if (v == null) return null;
    let ok = true;
    switch (field) {
      case F_POSITION: { ok = v.kind == Kind.Int; e.position = v._num; break; }
      case F_ID: { ok = v.kind == Kind.Str; e.id = v._text; break; }
      case F_TYPE: { ok = v.kind == Kind.Str; e.type = v._text; break; }
      case F_TAGS: { ok = readTags(v, e.tags); break; }
      case F_DATA: { e.data = v; break; }
      case F_TIMESTAMP: { ok = v.kind == Kind.Int; e.timestampMs = v._num; break; }
      case F_CORRELATION: { ok = v.kind == Kind.Str; e.correlationId = v._text; break; }
      case F_CAUSATION: { ok = v.kind == Kind.Str; e.causationId = v._text; break; }
      case F_METADATA: { ok = v.kind == Kind.Record || v.kind == Kind.Null; e.metadata = v; break; }
      default: break; // a field this SDK does not know: skipped
    }
    if (!ok) {
      d.error(at, "an event field has the wrong kind");
      return null;
    }
    if (field < 6) required |= 1 << field;
  }
  if (required != 63) {
    d.error(d.p, "an event lacks one of position, id, type, tags, data, timestamp_ms");
    return null;
  }
  return e;
}

function readTags(v: Value, out: Array<string>): bool {
  if (v.kind != Kind.List) return false;
  const items = v._items!;
  for (let i = 0; i < items.length; i++) {
    const t = unchecked(items[i]);
    if (t.kind != Kind.Str) return false;
    out.push(t._text);
  }
  return true;
}

/** The one event the host passed to an export. */
function eventInput(ptr: i32, len: i32): Event {
  const d = hostDecoderAt(<usize>ptr, <usize><u32>len);
  const e = readEvent(d);
  if (e == null || d.p != d.end) fail("reef: malformed event from the host: " + (d.err != null ? d.err! : "trailing bytes"));
  return e!;
}

// ---- Queries -----------------------------------------------------------------------------

/** One item of a query: matches an event whose type is one of `types` (any type when empty)
 * and that carries every tag of `tags`. */
export class QueryItem {
  constructor(public types: Array<string>, public tags: Array<string>) {}
}

/** The events a command reads or a projector or effect handles: an event matches when it
 * matches any item. Query.all() (no items) matches every event. */
export class Query {
  items: Array<QueryItem> = [];

  /** The query with no items: every event. */
  static all(): Query { return new Query(); }
  /** Events of any of `types`. */
  static types(types: Array<string>): Query { return new Query().or(types, []); }
  /** Events carrying every tag of `tags`. */
  static tags(tags: Array<string>): Query { return new Query().or([], tags); }
  /** Events of any of `types` carrying every tag of `tags`. */
  static of(types: Array<string>, tags: Array<string>): Query { return new Query().or(types, tags); }

  /** Adds an item; returns the query. Throws when the item has neither types nor tags. */
  or(types: Array<string>, tags: Array<string>): Query {
    if (types.length == 0 && tags.length == 0) throw new Error("a query item needs at least one type or tag");
    this.items.push(new QueryItem(types, tags));
    return this;
  }

  /** As the host reads it: [{"types": [...], "tags": [...]}, ...]. */
  toValue(): Value {
    const list = new Array<Value>(this.items.length);
    for (let i = 0; i < list.length; i++) {
      const item = this.items[i];
      const r = Value.record();
      if (item.types.length > 0) r.set("types", Value.strings(item.types));
      if (item.tags.length > 0) r.set("tags", Value.strings(item.tags));
      list[i] = r;
    }
    return Value.list(list);
  }
}

// ---- New events and decisions ------------------------------------------------------------

/** An event to append (a command's decision, an effect's append). */
export class NewEvent {
  /** The application's own metadata, a record (at most 4,096 bytes as JSON); null for none. */
  metadata: Value | null = null;
  /** null: plain data. Otherwise the data is stored encrypted under this scope's key (1 to 256
   * bytes of UTF-8 without control characters) and reads as null once the key is deleted
   * (DELETE /crypto-keys/{scope}). Type, tags and metadata stay readable. */
  encryptionScope: string | null = null;

  constructor(
    public type: string,
    public tags: Array<string> = [],
    /** Any value; null for no data. Stored as compact JSON. */
    public data: Value = Value.null(),
  ) {}

  /** Sets the metadata; returns the event. */
  withMetadata(metadata: Value): NewEvent {
    this.metadata = metadata;
    return this;
  }
  /** Sets the encryption scope; returns the event. */
  withEncryptionScope(scope: string): NewEvent {
    this.encryptionScope = scope;
    return this;
  }

  /** As the host reads it: {"type", "tags", "data", "metadata"?, "encryption_scope"?}. */
  toValue(): Value {
    const r = Value.record()
      .set("type", Value.str(this.type))
      .set("tags", Value.strings(this.tags))
      .set("data", this.data);
    const metadata = this.metadata;
    if (metadata != null) r.set("metadata", metadata);
    const scope = this.encryptionScope;
    if (scope != null) r.set("encryption_scope", Value.str(scope));
    return r;
  }
}

/** A list of new events as a value. */
export function eventsValue(events: Array<NewEvent>): Value {
  const list = new Array<Value>(events.length);
  for (let i = 0; i < list.length; i++) list[i] = events[i].toValue();
  return Value.list(list);
}

/** What a command decides: append these events, or reject with a message. */
export class Decision {
  constructor(public events: Array<NewEvent>, public error: string | null) {}

  /** Append `events` atomically (none: succeed, appending nothing). */
  static accept(events: Array<NewEvent>): Decision { return new Decision(events, null); }
  /** Append nothing; the caller gets HTTP 422 with exactly this message. */
  static reject(message: string): Decision { return new Decision([], message); }

  /** {"events": [...]} or {"error": message}. */
  toValue(): Value {
    const error = this.error;
    if (error != null) return Value.record().set("error", Value.str(error));
    return Value.record().set("events", eventsValue(this.events));
  }
}

/** What a command's init returns: the query of the events its decision depends on (null:
 * read nothing and append without a condition) and the initial state. */
export class Init {
  constructor(public query: Query | null, public state: Value) {}
}

// ---- The three kinds ---------------------------------------------------------------------

/** init(input) -> Init. */
export type InitFn = (input: Value) => Init;
/** fold(state, input, event) -> the state after the event. Called once per event, in order;
 * must depend only on its arguments (the host may resume a fold from a kept state). */
export type FoldFn = (state: Value, input: Value, event: Event) => Value;
/** decide(state, input) -> Decision. */
export type DecideFn = (state: Value, input: Value) => Decision;
/** A projector's or effect's query; runs once when it starts (a projector's SQL setup, such
 * as CREATE TABLE IF NOT EXISTS, goes here). */
export type QueryFn = () => Query;
/** Handles one event; throw (or fail) to fail it. */
export type EventFn = (event: Event) => void;
/** An effect's partition key: events with one key are handled in order by one worker; null
 * sends the event to the global worker. */
export type PartitionKeyFn = (event: Event) => string | null;

let initFn: InitFn | null = null;
let foldFn: FoldFn | null = null;
let decideFn: DecideFn | null = null;
let queryFn: QueryFn | null = null;
let eventFn: EventFn | null = null;
let keyFn: PartitionKeyFn | null = null;

/** Makes this module a command (with `export * from "reef-sdk/assembly/exports/command"`).
 * Call once, at the top level of the entry file. */
export function command(init: InitFn, fold: FoldFn, decide: DecideFn): void {
  initFn = init;
  foldFn = fold;
  decideFn = decide;
}

/** Makes this module a projector (with `export * from "reef-sdk/assembly/exports/projector"`). */
export function projector(query: QueryFn, project: EventFn): void {
  queryFn = query;
  eventFn = project;
}

/** Makes this module an effect (with `export * from "reef-sdk/assembly/exports/effect"`). */
export function effect(query: QueryFn, partitionKey: PartitionKeyFn, handle: EventFn): void {
  queryFn = query;
  keyFn = partitionKey;
  eventFn = handle;
}

function unregistered(what: string): void {
  fail("reef: no " + what + " registered: call it at the top level of the module's entry file");
}

// ---- Export glue (exports/*.ts) ----------------------------------------------------------

export function commandInit(ptr: i32, len: i32): i64 {
  const init = initFn;
  if (init == null) { unregistered("command(init, fold, decide)"); return 0; }
  const r = init(input(<usize>ptr, <usize><u32>len, "input"));
  const query = r.query;
  return packValue(Value.record()
    .set("query", query == null ? Value.null() : query.toValue())
    .set("state", r.state));
}

export function commandFold(sp: i32, sl: i32, ip: i32, il: i32, ep: i32, el: i32): i64 {
  const fold = foldFn;
  if (fold == null) { unregistered("command(init, fold, decide)"); return 0; }
  let state = input(<usize>sp, <usize><u32>sl, "state");
  const inputValue = input(<usize>ip, <usize><u32>il, "input");
  const d = new Decoder(<usize>ep, <usize><u32>el, null);
  if (!d.head() || d.major != 4) fail("reef: command fold: the events must be a list");
  const count = <i32>d.arg;
  for (let i = 0; i < count; i++) {
    const e = readEvent(d);
    if (e == null) fail("reef: command fold: malformed event: " + d.err!);
    state = fold(state, inputValue, e!);
  }
  return packValue(state);
}

export function commandDecide(sp: i32, sl: i32, ip: i32, il: i32): i64 {
  const decide = decideFn;
  if (decide == null) { unregistered("command(init, fold, decide)"); return 0; }
  const state = input(<usize>sp, <usize><u32>sl, "state");
  return packValue(decide(state, input(<usize>ip, <usize><u32>il, "input")).toValue());
}

export function moduleQuery(): i64 {
  const query = queryFn;
  if (query == null) { unregistered("projector(query, project) or effect(query, partitionKey, handle)"); return 0; }
  return packValue(query().toValue());
}

export function moduleEvent(ptr: i32, len: i32): i32 {
  const handle = eventFn;
  if (handle == null) { unregistered("projector(query, project) or effect(query, partitionKey, handle)"); return 0; }
  handle(eventInput(ptr, len));
  return 0;
}

export function effectPartitionKey(ptr: i32, len: i32): i64 {
  const key = keyFn;
  if (key == null) { unregistered("effect(query, partitionKey, handle)"); return 0; }
  const k = key(eventInput(ptr, len));
  const w = new Writer(32);
  if (k == null) w.byte(0xf6);
  else w.text(k);
  return pack(w.ptr, w.len);
}
