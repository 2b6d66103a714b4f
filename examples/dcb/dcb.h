/* The DCB examples' shared vocabulary: decision models, numbers and command inputs.
 *
 * Concept: the public DCB scenarios (tests/fixtures/dcb-examples, from dcb.events) describe a
 * command as decision models ("projections": a default state, one handler per event type, tag
 * filters over parameters) plus constraint checks and a success event. A command module here
 * binds its decision models to the command input (dcb_model), and the helpers below turn them
 * into the command's query (one item per model), its initial state and its fold: each
 * model's handler sees only the events of its own types that carry all of its own tags.
 * The command's state is one CBOR record: model name -> that model's state.
 * Numbers follow JavaScript's, as the scenarios' expressions do: int or float, or none
 * (undefined / NaN, which every comparison finds false).
 * Thread ownership: guests are single-threaded; nothing here locks. Everything returned lives
 * in the invocation arena. */
#ifndef REEF_EXAMPLES_DCB_H
#define REEF_EXAMPLES_DCB_H

#include "reef.h"

/* ---- Numbers ---------------------------------------------------------------------------- */

typedef enum dcb_number_kind {
  DCB_NUMBER_NONE = 0, /* absent or not a number: JavaScript's undefined or NaN */
  DCB_NUMBER_INT,      /* JSON integers arrive as CBOR ints */
  DCB_NUMBER_FLOAT,    /* any other JSON number */
} dcb_number_kind;

typedef struct dcb_number {
  dcb_number_kind kind;
  int64_t i; /* the value when kind is DCB_NUMBER_INT */
  double f;  /* the value when kind is DCB_NUMBER_FLOAT */
} dcb_number;

static inline dcb_number dcb_int(int64_t value) {
  dcb_number n = {DCB_NUMBER_INT, value, 0.0};
  return n;
}

/* Reads the item at `item` (not advanced) as a number; DCB_NUMBER_NONE for anything else,
 * an empty cursor included. */
dcb_number dcb_read_number(reef_cbor item);
/* Writes `n` (none as null). */
void dcb_write_number(reef_writer* w, dcb_number n);
/* `n` as one CBOR item (the state of a numeric model). */
reef_cbor dcb_number_value(dcb_number n);
/* JavaScript's `n + k`: none stays none; an int that would overflow int64 becomes a float. */
dcb_number dcb_number_add(dcb_number n, int64_t k);
/* JavaScript's `a >= b` and `a === b` on numbers: false when either is none. */
bool dcb_number_ge(dcb_number a, dcb_number b);
bool dcb_number_eq(dcb_number a, dcb_number b);
/* The text JavaScript gives `n` in a template: ints and integral floats below 9e18 in
 * magnitude in decimal; other floats with at most 15 significant digits and no trailing zeros
 * (JavaScript prints up to 17 where 15 do not round-trip), in exponent form ("1.5e+21",
 * "1e-7") below 1e-6 and from 1e21 in magnitude, as JavaScript does; "undefined" for none. */
reef_str dcb_number_text(dcb_number n);

/* ---- Command input ----------------------------------------------------------------------
 * The input is the command's JSON data as a CBOR record. A bad input is the caller's mistake,
 * not the module's: reading never fails the execution. The first problem (a body that is no
 * object, a missing or mistyped field) is kept in `error`; dcb_init then reads no events, and
 * decide rejects with it (dcb_reject_input: HTTP 422 naming the field). */
typedef struct dcb_input {
  reef_cbor record; /* the input */
  reef_str error;   /* empty, or the first problem found */
} dcb_input;

/* Starts reading `input`; sets `error` when it is not a record. */
dcb_input dcb_input_of(reef_cbor input);
/* Longest text field, in bytes: every text input here is an id that goes into a tag
 * ("course:<id>"), and the host refuses tags over 1,024 bytes. */
#define DCB_MAX_TEXT 512u
/* The text field `key`; empty (and `error` set) when it is missing, not text, or longer than
 * DCB_MAX_TEXT bytes. */
reef_str dcb_input_text(dcb_input* in, const char* key);
/* The number field `key`; none (and `error` set) when it is missing or not a number. *item
 * (optional) receives its encoding, to copy it verbatim (null on error). */
dcb_number dcb_input_number(dcb_input* in, const char* key, reef_cbor* item);
/* The encoding of the record field `key` (a JSON object), to copy it verbatim; an empty
 * record (and `error` set) when it is missing or not an object. */
reef_cbor dcb_input_record(dcb_input* in, const char* key);
/* The decision for an input with an error: reef_reject with the error. */
reef_cbor dcb_reject_input(const dcb_input* in);

/* The tag `prefix` + `value`, e.g. dcb_tag("course:", course_id) (a tag resolver or tag
 * filter template with its one placeholder filled in). Allocated to its exact length. */
reef_str dcb_tag(const char* prefix, reef_str value);

/* ---- Event data ---------------------------------------------------------------------- */

/* The number at field `key` of the event's data (none when absent or not a number). */
dcb_number dcb_data_number(const reef_event* event, const char* key);
/* True when field `key` of the event's data is the text `value` (JavaScript's ===). */
bool dcb_data_text_is(const reef_event* event, const char* key, reef_str value);
/* Whole days since the event was appended at `now_ms` (the command's fixed clock, ms):
 * the scenarios' `event.metadata.daysAgo`. */
int64_t dcb_days_ago(const reef_event* event, int64_t now_ms);

/* ---- Decision models -------------------------------------------------------------------- */

#define DCB_MAX_TAGS 2     /* tag filters of one model */
#define DCB_MAX_PARAMS 2   /* parameters of one model */
#define DCB_MAX_HANDLERS 4 /* event types one model handles */
#define DCB_MAX_MODELS 8   /* decision models of one command */

struct dcb_model;

/* A handler: the model's state after `event`, from its state before (one CBOR item). */
typedef reef_cbor (*dcb_apply_fn)(reef_cbor state, const reef_event* event,
                                  const struct dcb_model* model);

/* One handler of a model: the event type and its expression. */
typedef struct dcb_handler {
  const char* type;
  dcb_apply_fn apply;
} dcb_handler;

/* A decision model bound to the command's parameters. */
typedef struct dcb_model {
  const char* name;                /* its key in the state record, e.g. "courseExists" */
  reef_cbor initial;               /* stateSchema.default, one CBOR item */
  const dcb_handler* handlers;     /* its handlers; static storage */
  uint32_t handler_count;          /* at most DCB_MAX_HANDLERS */
  reef_str tags[DCB_MAX_TAGS];     /* its tag filters with the parameters filled in */
  uint32_t tag_count;              /* none: the model sees every event of its types */
  reef_str params[DCB_MAX_PARAMS]; /* its parameters, for handlers that compare with them */
} dcb_model;

/* Handlers shared by several models: `true`, `false` and `state + 1`. */
reef_cbor dcb_apply_true(reef_cbor state, const reef_event* event, const dcb_model* model);
reef_cbor dcb_apply_false(reef_cbor state, const reef_event* event, const dcb_model* model);
reef_cbor dcb_apply_increment(reef_cbor state, const reef_event* event, const dcb_model* model);

/* The query of `count` models (at most DCB_MAX_MODELS): one item per model, its handled
 * types and its tags. Returns the initial state record. When the input `in` has an error,
 * writes no query (nothing is read, decide rejects) and returns null. */
reef_cbor dcb_init(const dcb_input* in, const dcb_model models[], uint32_t count,
                   reef_writer* query);
/* The state after `event`: every model whose types include the event's type and whose tags
 * the event carries applies its handler; the other models keep their state. */
reef_cbor dcb_fold(reef_cbor state, const dcb_model models[], uint32_t count,
                   const reef_event* event);

/* The state of model `name` in the state record: a bool (false when absent or not a bool),
 * or a number. */
bool dcb_state_bool(reef_cbor state, const char* name);
dcb_number dcb_state_number(reef_cbor state, const char* name);

#endif /* REEF_EXAMPLES_DCB_H */
