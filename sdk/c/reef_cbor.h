/* Reef C guest SDK: reading CBOR values.
 *
 * Concept: a cursor (reef_cbor) over one buffer of CBOR (RFC 8949) restricted to the ABI v1
 * subset of docs/abi.md: null, bool, int64, finite float, UTF-8 text, definite lists, records
 * with text keys, and actor refs (tag 1380271430 around a 21-byte NanoID text).
 * Thread ownership: caller synchronizes (guests are single-threaded).
 *
 * Contract shared by every reef_read_* function:
 *  - on success it returns REEF_OK, stores the result and advances the cursor past the item;
 *  - on failure it returns a negative code and leaves both the cursor and *out unchanged:
 *    REEF_E_END (cursor empty), REEF_E_TYPE (another kind is next), REEF_E_MALFORMED (bytes
 *    outside the ABI subset or cut short), REEF_E_RANGE (does not fit the C type);
 *  - malformed input never traps and never reads outside [ptr, ptr + len).
 * Strings are returned as slices into the buffer, never copied. */
#ifndef REEF_CBOR_H
#define REEF_CBOR_H

#include "reef_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of a value, as reef_peek reports it. */
typedef enum reef_kind {
  REEF_KIND_INVALID = 0, /* cursor empty, or the next bytes are not a valid item head */
  REEF_KIND_NULL,
  REEF_KIND_BOOL,
  REEF_KIND_INT,
  REEF_KIND_FLOAT,
  REEF_KIND_TEXT,
  REEF_KIND_LIST,
  REEF_KIND_RECORD,
  REEF_KIND_ACTOR_REF,
} reef_kind;

/* Returns a cursor over `len` bytes at `ptr`. Lifetime: the bytes must outlive the cursor. */
static inline reef_cbor reef_cbor_of(const void* ptr, uint32_t len) {
  reef_cbor c = {(const uint8_t*)ptr, len};
  return c;
}

/* Returns true when the cursor has no bytes left. */
static inline bool reef_at_end(const reef_cbor* c) {
  return c->len == 0;
}

/* Returns the kind of the next item without consuming it (judged from its head only: a
 * container's elements are not checked). REEF_KIND_INVALID when empty or malformed. */
reef_kind reef_peek(const reef_cbor* c);

/* Returns the English name of a kind ("int", "record", ...), for error messages. */
const char* reef_kind_name(reef_kind kind);

/* Consumes a null. */
int reef_read_null(reef_cbor* c);

/* Consumes a bool into *out. */
int reef_read_bool(reef_cbor* c, bool* out);

/* Consumes an integer (CBOR major type 0 or 1) into *out. Integers outside int64 are
 * REEF_E_MALFORMED (the ABI rejects them). Floats are REEF_E_TYPE, even 5.0. */
int reef_read_int(reef_cbor* c, int64_t* out);

/* Consumes a float (half, single or double precision; decoded exactly) into *out. NaN and
 * infinities are REEF_E_MALFORMED (the ABI rejects them). Integers are REEF_E_TYPE. */
int reef_read_float(reef_cbor* c, double* out);

/* Consumes a text string; *out points into the buffer (no copy, no NUL). UTF-8 validity is
 * the host's guarantee and is not re-checked. */
int reef_read_text(reef_cbor* c, reef_str* out);

/* Consumes a list head; *count (elements) items follow, to be read or skipped in order. */
int reef_read_list(reef_cbor* c, uint32_t* count);

/* Consumes a record head; *count (fields) key/value pairs follow: a text key, then a value. */
int reef_read_record(reef_cbor* c, uint32_t* count);

/* Consumes an actor ref (tag 1380271430 around 21 NanoID characters) into *out, which gets
 * a NUL after the 21 characters. A wrong length or alphabet is REEF_E_MALFORMED. */
int reef_read_actor(reef_cbor* c, reef_actor_ref* out);

/* Consumes one whole item, containers included, and checks that it is well-formed in the ABI
 * subset. Iterative: arbitrarily deep nesting cannot overflow the stack. If `item` is not
 * NULL it receives the span of the skipped item's encoding. */
int reef_skip(reef_cbor* c, reef_cbor* item);

/* ---- Records ----------------------------------------------------------------------------
 * `record` is a cursor positioned at a record (it is passed by value and not advanced).
 * Fields are found by a linear scan of the keys. REEF_E_TYPE when `record` is not a record
 * or the field has another kind; REEF_E_NOT_FOUND when no key equals `key`. */

/* Finds field `key` (NUL-terminated) and sets *value to a cursor positioned at its value. */
int reef_field(reef_cbor record, const char* key, reef_cbor* value);

/* Finds several fields in one pass over the record (cheaper than one reef_field per key).
 * For each i < n, values[i] becomes a cursor positioned at the value of the field whose key
 * is exactly keys[i], or the empty cursor {NULL, 0} when the record has no such key: then
 * reef_at_end(&values[i]) is true and reading it gives REEF_E_END. The keys must be distinct
 * (a repeated key is only looked up at its first index). The scan stops once every
 * key is found. Returns REEF_OK when all keys were found, REEF_E_NOT_FOUND when some are
 * missing (the found ones are set), REEF_E_TYPE when `record` is not a record, or
 * REEF_E_MALFORMED (the values must then not be used). Example:
 *   enum { OP, VALUE, N_FIELDS };
 *   static const reef_str keys[N_FIELDS] = {REEF_STR("op"), REEF_STR("value")};
 *   reef_cbor field[N_FIELDS];
 *   int rc = reef_fields(message, N_FIELDS, keys, field);
 *   ... reef_read_text(&field[OP], &op) ... reef_read_int(&field[VALUE], &value) ... */
int reef_fields(reef_cbor record, uint32_t n, const reef_str keys[], reef_cbor values[]);

/* reef_field followed by the matching reef_read_*: reads field `key` into *out. */
int reef_field_bool(reef_cbor record, const char* key, bool* out);
int reef_field_int(reef_cbor record, const char* key, int64_t* out);
int reef_field_float(reef_cbor record, const char* key, double* out);
int reef_field_text(reef_cbor record, const char* key, reef_str* out);
int reef_field_actor(reef_cbor record, const char* key, reef_actor_ref* out);

#ifdef __cplusplus
}
#endif

#endif /* REEF_CBOR_H */
