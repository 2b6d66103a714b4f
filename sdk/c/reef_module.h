/* Reef C guest SDK: event-sourced modules, the three kinds of spec 000 (docs/abi.md,
 * "Event-sourced modules").
 *
 * Concept:
 *   command    REEF_COMMAND(init, fold, decide): on each execution the host reads the events
 *              that match the query `init` writes, folds them into a state with `fold`, then
 *              `decide` returns new events (appended atomically under the DCB condition
 *              "nothing matching the query was appended since the read") or an error message.
 *   projector  REEF_PROJECTOR(query, project): `project` runs once per matching event, in
 *              order, inside a SQLite transaction of the projector's own database that also
 *              commits the projector's position (exactly-once read models).
 *   effect     REEF_EFFECT(query, partition_key, handle): `handle` runs at least once per
 *              matching event, in order within a partition key, on one of nine workers.
 * Everything a callback reads (events, inputs, SQL rows) or builds lives in the arena until
 * the export returns. Logging and failing (reef_log, reef_fail, ...) come from reef_actor.h.
 * Thread ownership: guests are single-threaded; nothing here locks. */
#ifndef REEF_MODULE_H
#define REEF_MODULE_H

#include <stdarg.h>

#include "reef_actor.h"
#include "reef_base.h"
#include "reef_cbor.h"
#include "reef_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Events -----------------------------------------------------------------------------
 * One stored event as the host passes it: a CBOR record with the fields below. */
typedef struct reef_event {
  int64_t position;        /* the store position, 1-based, gapless */
  reef_str id;             /* UUID, 36 characters */
  reef_str type;           /* event type */
  reef_cbor tags;          /* the tags: one CBOR list of text items */
  reef_cbor data;          /* one CBOR item: the data (JSON data as a value); null when the event
                              has no JSON data or its encryption key was shredded */
  int64_t timestamp_ms;    /* Unix time in ms at which the event was appended */
  reef_str correlation_id; /* empty when absent */
  reef_str causation_id;   /* empty when absent */
  reef_cbor metadata;      /* the application's own metadata: one CBOR record (read it with
                              reef_field_*), or CBOR null when the event has none */
} reef_event;

/* Reads one event record at the cursor into *out and advances the cursor past it.
 * Returns REEF_OK, or REEF_E_MALFORMED / REEF_E_TYPE when the item is no event record. */
int reef_event_read(reef_cbor* cursor, reef_event* out);

/* True when the event carries exactly the tag `tag`. */
bool reef_event_has_tag(const reef_event* event, reef_str tag);

/* Text formatted with reef_format's subset (%s %.*s %c %d %i %u with l/ll, %%), allocated
 * from the arena at its full length (NUL-terminated; the NUL is not counted in len). Never
 * cut: when the arena is exhausted or the format has an unsupported conversion, the
 * invocation fails (reef_fail) saying so. The host refuses a tag or type over its limit
 * (1,024 bytes for a tag) with an error naming it, so a long tag is never shortened into
 * another one. */
reef_str reef_strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Queries ----------------------------------------------------------------------------
 * A query is a CBOR list of items; an event matches when it matches any item. An item
 * matches an event whose type is one of `types` (any type when there are none) and that
 * carries every tag of `tags`. An item needs at least one type or tag. An empty list
 * matches every event. Write the list head, then each item: */
void reef_write_query(reef_writer* w, uint32_t item_count);
void reef_write_query_item(reef_writer* w, uint32_t type_count, const reef_str types[],
                           uint32_t tag_count, const reef_str tags[]);

/* ---- Commands ---------------------------------------------------------------------------
 * init(input, query): write the query of the events to read into `query` (leave it empty to
 * read nothing and append without a condition); return the initial state (one CBOR item).
 * fold(state, input, event): return the state after `event`.
 * decide(state, input): return reef_accept(...) or reef_reject(...). */
typedef reef_cbor (*reef_command_init_fn)(reef_cbor input, reef_writer* query);
typedef reef_cbor (*reef_command_fold_fn)(reef_cbor state, reef_cbor input,
                                          const reef_event* event);
typedef reef_cbor (*reef_command_decide_fn)(reef_cbor state, reef_cbor input);

/* A decision that appends events: begin with the count, then write each event. */
void reef_write_decision(reef_writer* w, uint32_t event_count);
/* One new event: its type, tags and data (one CBOR item; {NULL, 0} writes null).
 * `encryption_scope`: NULL for plain data; otherwise the data is stored encrypted with the
 * scope's key (AES-256-GCM) and reads back as null once the scope's key is deleted. */
void reef_write_new_event(reef_writer* w, const char* type, uint32_t tag_count,
                          const reef_str tags[], reef_cbor data, const char* encryption_scope);
/* A decision with one event and no encryption (the common case). */
reef_cbor reef_accept(const char* type, uint32_t tag_count, const reef_str tags[], reef_cbor data);
/* A decision that appends nothing and fails the execution with this exact message (the
 * caller sees HTTP 422 with it). Formatted like reef_strf, at its full length. */
reef_cbor reef_reject(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* Defines the exports reef_abi_version, reef_alloc, reef_command_init, reef_command_fold and
 * reef_command_decide. Use once per module, at file scope: REEF_COMMAND(init, fold, decide); */
#define REEF_COMMAND(init, fold, decide)                                                           \
  REEF__EXPORT_COMMON                                                                              \
  __attribute__((export_name("reef_command_init"))) int64_t reef__export_command_init(             \
      int32_t input_ptr, int32_t input_len) {                                                      \
    return reef__command_init(init, reef__span(input_ptr, input_len));                             \
  }                                                                                                \
  __attribute__((export_name("reef_command_fold"))) int64_t reef__export_command_fold(             \
      int32_t state_ptr, int32_t state_len, int32_t input_ptr, int32_t input_len,                  \
      int32_t events_ptr, int32_t events_len) {                                                    \
    return reef__command_fold(fold, reef__span(state_ptr, state_len),                              \
                              reef__span(input_ptr, input_len),                                    \
                              reef__span(events_ptr, events_len));                                 \
  }                                                                                                \
  __attribute__((export_name("reef_command_decide"))) int64_t reef__export_command_decide(         \
      int32_t state_ptr, int32_t state_len, int32_t input_ptr, int32_t input_len) {                \
    return reef__pack(decide(reef__span(state_ptr, state_len), reef__span(input_ptr, input_len))); \
  }                                                                                                \
  extern int reef__module_defined

/* REEF_FOLD_IGNORES_INPUT: place once, after REEF_COMMAND, in a command whose fold does not
 * read its input (most do not: the query already picks the events). Reef then keeps the
 * decision state between executions with other inputs and folds only the events appended
 * since (docs/abi.md "The fold cache"). Do not use it when the fold reads the input. */
#define REEF_FOLD_IGNORES_INPUT                                        \
  __attribute__((export_name("reef_command_fold_ignores_input"))) void \
  reef__export_fold_ignores_input(void) {}                             \
  extern int reef__fold_ignores_input_declared

/* ---- Projectors -------------------------------------------------------------------------
 * query(w): write the projector's query (reef_write_query + items).
 * project(event): update the read model with reef_sql_exec; return REEF_OK. Any other return
 * value, reef_fail or a trap rolls the event's transaction back and stops the projector. */
typedef void (*reef_query_fn)(reef_writer* query);
typedef int (*reef_project_fn)(const reef_event* event);

#define REEF_PROJECTOR(query, project)                                                     \
  REEF__EXPORT_COMMON                                                                      \
  REEF__EXPORT_QUERY(query)                                                                \
  __attribute__((export_name("reef_project"))) int32_t reef__export_project(int32_t ptr,   \
                                                                            int32_t len) { \
    return reef__handle_event(project, reef__span(ptr, len));                              \
  }                                                                                        \
  extern int reef__module_defined

/* ---- Effects ----------------------------------------------------------------------------
 * partition_key(event): the key whose events must be handled in order, or {NULL, 0} for the
 * global worker. handle(event): do the side effect; return REEF_OK. Any other return value,
 * reef_fail or a trap makes the host retry the event with backoff (1 s doubling to 600 s). */
typedef reef_str (*reef_partition_key_fn)(const reef_event* event);
typedef int (*reef_effect_fn)(const reef_event* event);

#define REEF_EFFECT(query, partition_key, handle)                                        \
  REEF__EXPORT_COMMON                                                                    \
  REEF__EXPORT_QUERY(query)                                                              \
  __attribute__((export_name("reef_partition_key"))) int64_t reef__export_partition_key( \
      int32_t ptr, int32_t len) {                                                        \
    return reef__partition_key(partition_key, reef__span(ptr, len));                     \
  }                                                                                      \
  __attribute__((export_name("reef_effect"))) int32_t reef__export_effect(int32_t ptr,   \
                                                                          int32_t len) { \
    return reef__handle_event(handle, reef__span(ptr, len));                             \
  }                                                                                      \
  extern int reef__module_defined

/* ---- Host services ----------------------------------------------------------------------
 * Time: Unix time in ms. In a command it is fixed for the whole execution (the time the
 * request arrived), so a retried execution decides the same way. */
int64_t reef_now_ms(void);

/* Fills `len` bytes (at most 65,536) with random bytes. In a command they are deterministic:
 * seeded from the execution id, so a retry draws the same bytes. Returns REEF_OK or
 * REEF_E_LIMIT. */
int reef_random(void* buf, uint32_t len);

/* The module's environment variable `key` (set over HTTP), as a text slice in the arena.
 * Returns REEF_OK or REEF_E_NOT_FOUND. */
int reef_env(const char* key, reef_str* out);

/* SQL on the module's own SQLite database (projectors and effects only). `params` is a CBOR
 * list of null / bool / int / float / text values bound to ?1, ?2, ...; {NULL, 0} binds none.
 * A SQL error fails the call (projector: stops; effect: retried).
 * reef_sql_exec returns the number of rows changed. */
int64_t reef_sql_exec(const char* sql, reef_cbor params);
/* Runs a query and returns its rows: a CBOR list of records, column name -> value (INTEGER
 * int, REAL float, TEXT text, NULL null; BLOB columns fail the call). */
reef_cbor reef_sql_query(const char* sql, reef_cbor params);

/* Effects only: appends `events` (a CBOR list of new events, as reef_write_new_event writes
 * them) without a condition. They carry the triggering event's correlation id and its id as
 * causation id. Returns the last appended position. */
int64_t reef_append(reef_cbor events);

/* ---- Internals used by the macros above; not part of the API ---------------------------- */
int64_t reef__command_init(reef_command_init_fn init, reef_cbor input);
int64_t reef__command_fold(reef_command_fold_fn fold, reef_cbor state, reef_cbor input,
                           reef_cbor events);
int32_t reef__handle_event(int (*handler)(const reef_event*), reef_cbor event);
int64_t reef__partition_key(reef_partition_key_fn key, reef_cbor event);
int64_t reef__query(reef_query_fn query);

#define REEF__EXPORT_QUERY(query)                                               \
  __attribute__((export_name("reef_query"))) int64_t reef__export_query(void) { \
    return reef__query(query);                                                  \
  }

#ifdef __cplusplus
}
#endif

#endif /* REEF_MODULE_H */
