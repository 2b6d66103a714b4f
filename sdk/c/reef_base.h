/* Reef C guest SDK: base types shared by every SDK header.
 *
 * Concept: the vocabulary of the guest edge (ABI v1, docs/abi.md): byte spans of CBOR, text
 * slices, actor refs, the SDK's error codes and the per-invocation arena that backs every
 * buffer the SDK hands out.
 * Thread ownership: a guest instance runs one invocation at a time on one thread; nothing here
 * is shared, nothing here locks.
 *
 * Freestanding C11: only the compiler's own <stdint.h>, <stddef.h>, <stdbool.h> are used. */
#ifndef REEF_BASE_H
#define REEF_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes. Every fallible SDK function returns REEF_OK (0) or one of these negative
 * values. -1 and -2 are also what the host's i32 imports return (docs/abi.md). */
enum {
  REEF_OK = 0,
  REEF_E_INVALID = -1,   /* host: invalid argument (malformed CBOR, bad level, bad UTF-8) */
  REEF_E_LIMIT = -2,     /* host: a limit was exceeded (value limits, log size, sends) */
  REEF_E_MALFORMED = -3, /* input is not well-formed CBOR of the ABI v1 subset, or is cut short */
  REEF_E_TYPE = -4,      /* well-formed, but the next item is a different kind than asked */
  REEF_E_RANGE = -5,     /* a number does not fit the requested C type */
  REEF_E_NOT_FOUND = -6, /* a record has no field with the requested key */
  REEF_E_NOMEM = -7,     /* the arena could not grow linear memory */
  REEF_E_END = -8,       /* the cursor is empty: there is no next item */
  /* reef_call only (reef_actor.h): */
  REEF_E_UNAVAILABLE = -9, /* the target took no message: unknown, stopped, failed or full */
  REEF_E_TIMEOUT = -10,    /* no reply within the timeout */
  REEF_E_NO_REPLY = -11,   /* the callee failed, was killed, or committed without replying */
  REEF_E_CYCLE = -12,      /* the target waits (directly or through others) for this actor */
};

/* Returns a static, NUL-terminated English description of an error code ("malformed CBOR").
 * Unknown codes give "unknown error". */
const char* reef_strerror(int code);

/* A text slice: `len` bytes of UTF-8 at `ptr`, NOT NUL-terminated.
 * Lifetime: slices read from handler inputs point into the invocation's arena and stay valid
 * until the handler returns. */
typedef struct reef_str {
  const char* ptr;
  uint32_t len;
} reef_str;

/* An initializer for a reef_str holding a string literal (without its NUL), e.g.
 *   static const reef_str keys[] = {REEF_STR("op"), REEF_STR("value")};
 *   reef_str name = REEF_STR("world");  */
#define REEF_STR(literal) \
  { "" literal, (uint32_t)(sizeof(literal) - 1) }

/* Returns true when `s` holds exactly the bytes of the NUL-terminated string `z`.
 * REQUIRES: z != NULL. Never reads z past its NUL. Inline: for a string literal z the length
 * and bytes fold into a few constant comparisons. */
static inline bool reef_str_eq(reef_str s, const char* z) {
  uint32_t n = 0;
  while (z[n] != '\0') n++;
  if (n != s.len) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (s.ptr[i] != z[i]) return false;
  }
  return true;
}

/* A span of CBOR bytes (RFC 8949): `len` bytes at `ptr`. Used two ways:
 *  - as a value: a span holding exactly one encoded data item (handler inputs, the new state
 *    a handler returns, a message for reef_send);
 *  - as a read cursor: the reef_read_* functions (reef_cbor.h) consume items from the front.
 * Copy the struct to keep a position; copies are cheap and never own memory.
 * A span with ptr == NULL is the "no value" result of a failed writer. */
typedef struct reef_cbor {
  const uint8_t* ptr;
  uint32_t len;
} reef_cbor;

/* Length of an actor ref in bytes: a NanoID over the alphabet A-Za-z0-9_- . */
#define REEF_ACTOR_REF_LEN 21

/* An actor ref: the 21 NanoID characters plus a NUL so it can be logged as a C string. */
typedef struct reef_actor_ref {
  char id[REEF_ACTOR_REF_LEN + 1];
} reef_actor_ref;

/* ---- Arena ------------------------------------------------------------------------------
 * All SDK memory comes from one bump arena in linear memory, starting at the linker symbol
 * __heap_base and growing the memory in 64 KiB pages as needed. The exported reef_alloc
 * resets it at the start of every invocation, so nothing allocated survives an invocation:
 * committed state lives in the host, not in guest memory. There is no free. */

/* Returns `size` bytes aligned to 8 from the arena, or NULL when linear memory cannot grow.
 * Lifetime: until the next invocation starts (the next reef_alloc call by the host). */
void* reef_arena_alloc(uint32_t size);

/* Grows the block at `ptr` (returned by reef_arena_alloc, currently `old_size` bytes) to
 * `new_size` bytes: in place when it is the newest block, else by copying. Returns the block,
 * or NULL when out of memory (the old block is then unchanged). ptr may be NULL. */
void* reef_arena_grow(void* ptr, uint32_t old_size, uint32_t new_size);

/* Resets the arena to empty and returns `size` bytes from it (the host's input buffer).
 * Called by the reef_alloc export that REEF_ACTOR defines; guests do not call it. */
void* reef_arena_reset_and_alloc(uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* REEF_BASE_H */
