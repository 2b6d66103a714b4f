/* Reef C guest SDK: writing CBOR values.
 *
 * Concept: a growable byte buffer in the invocation arena that encodes values in the ABI v1
 * subset (docs/abi.md) with shortest heads. Floats are written as double precision (the host
 * accepts any width and re-encodes deterministically).
 * Thread ownership: caller synchronizes (guests are single-threaded).
 *
 * Errors are sticky, like a stream: the reef_write_* functions return nothing; the first
 * failure (REEF_E_NOMEM, or REEF_E_INVALID for a NaN/infinite float) is kept in w->error,
 * later writes are ignored, and reef_writer_finish then returns the empty span {NULL, 0}.
 *
 * The writer checks encoding, not structure: the caller writes exactly `count` items after a
 * list head and `count` key/value pairs (text key first) after a record head, with no
 * duplicate keys. The host rejects a malformed value (reef_send returns REEF_E_INVALID; a
 * malformed new state fails the invocation). */
#ifndef REEF_WRITER_H
#define REEF_WRITER_H

#include "reef_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct reef_writer {
  uint8_t* buf; /* arena block holding the encoding so far */
  uint32_t len; /* bytes written */
  uint32_t cap; /* bytes allocated */
  int error;    /* REEF_OK, or the first error */
} reef_writer;

/* Returns an empty writer. It allocates from the arena on first write. */
static inline reef_writer reef_writer_new(void) {
  reef_writer w = {NULL, 0, 0, REEF_OK};
  return w;
}

/* Returns the bytes written as a value span, or {NULL, 0} if an error occurred or nothing was
 * written. Lifetime: the arena (until the invocation ends). The writer may keep writing. */
reef_cbor reef_writer_finish(const reef_writer* w);

void reef_write_null(reef_writer* w);
void reef_write_bool(reef_writer* w, bool value);
void reef_write_int(reef_writer* w, int64_t value);
/* REQUIRES: value is finite; NaN or an infinity sets REEF_E_INVALID. */
void reef_write_float(reef_writer* w, double value);
/* Writes `len` bytes at `ptr` as a text string. REQUIRES: the bytes are valid UTF-8. */
void reef_write_text(reef_writer* w, const char* ptr, uint32_t len);
/* Writes the NUL-terminated UTF-8 string `z` as a text string (without the NUL). Inline, so
 * the length of a string literal is computed at compile time. */
static inline void reef_write_cstr(reef_writer* w, const char* z) {
  uint32_t len = 0;
  while (z[len] != '\0') len++;
  reef_write_text(w, z, len);
}
/* Writes a text slice. */
void reef_write_str(reef_writer* w, reef_str s);
/* Writes a list head; `count` elements must follow. */
void reef_write_list(reef_writer* w, uint32_t count);
/* Writes a record head; `count` key/value pairs must follow (key written with a text write). */
void reef_write_record(reef_writer* w, uint32_t count);
/* Writes an actor ref (tag 1380271430 around its 21 characters). */
void reef_write_actor(reef_writer* w, const reef_actor_ref* ref);
/* Copies an already-encoded item verbatim, e.g. part of an input found with reef_skip.
 * REQUIRES: `item` holds well-formed CBOR (what reef_skip returns). */
void reef_write_cbor(reef_writer* w, reef_cbor item);

/* Shorthands for a handler's common return: a value holding a single scalar.
 * Return {NULL, 0} when the arena is exhausted. */
reef_cbor reef_value_null(void);
reef_cbor reef_value_bool(bool value);
reef_cbor reef_value_int(int64_t value);

#ifdef __cplusplus
}
#endif

#endif /* REEF_WRITER_H */
