/* Reef C guest SDK: the CBOR writer (reef_writer.h). */
#include "reef_writer.h"

#define REEF_TAG_ACTOR 1380271430u /* 0x52454546, "REEF" */
#define REEF_WRITER_MIN_CAP 64u

#define REEF_ALWAYS_INLINE static inline __attribute__((always_inline))

/* The slow path of reserve: grows the buffer (doubling, at least REEF_WRITER_MIN_CAP) so that
 * `n` more bytes fit, or records REEF_E_NOMEM and returns false. */
static bool grow(reef_writer* w, uint32_t n) {
  if (w->error != REEF_OK) return false;
  uint64_t cap = w->cap ? (uint64_t)w->cap * 2 : REEF_WRITER_MIN_CAP;
  while (cap < (uint64_t)w->len + n) cap *= 2;
  if (cap > 0xffffffffu) cap = 0xffffffffu;
  if ((uint64_t)w->len + n > cap) {
    w->error = REEF_E_NOMEM;
    return false;
  }
  uint8_t* grown = reef_arena_grow(w->buf, w->cap, (uint32_t)cap);
  if (grown == NULL) {
    w->error = REEF_E_NOMEM;
    return false;
  }
  w->buf = grown;
  w->cap = (uint32_t)cap;
  return true;
}

/* Makes room for `n` more bytes; returns false (and records the error) when it cannot, or
 * when an earlier write failed. After a failure cap stays as it was and error is set, so the
 * inlined fast test (room and no error) is all a successful write pays. */
REEF_ALWAYS_INLINE bool reserve(reef_writer* w, uint32_t n) {
  if (w->error == REEF_OK && (uint64_t)w->len + n <= w->cap) return true;
  return grow(w, n);
}

static void put_bytes(reef_writer* w, const void* src, uint32_t n) {
  if (!reserve(w, n)) return;
  __builtin_memcpy(w->buf + w->len, src, n);
  w->len += n;
}

/* Writes a head whose argument needs 1, 2, 4 or 8 more bytes (arg >= 24), shortest form
 * (RFC 8949 section 4.2.1). */
__attribute__((noinline)) static void put_long_head(reef_writer* w, unsigned major, uint64_t arg) {
  unsigned bytes = arg <= 0xff ? 1 : arg <= 0xffff ? 2 : arg <= 0xffffffffu ? 4 : 8;
  uint8_t b[9];
  b[0] = (uint8_t)((major << 5) | (bytes == 1 ? 24 : bytes == 2 ? 25 : bytes == 4 ? 26 : 27));
  for (unsigned i = 0; i < bytes; i++) b[1 + i] = (uint8_t)(arg >> (8 * (bytes - 1 - i)));
  put_bytes(w, b, 1 + bytes);
}

/* Writes a head with the shortest argument encoding; 1-byte heads (arguments below 24) are
 * stored directly. */
REEF_ALWAYS_INLINE void put_head(reef_writer* w, unsigned major, uint64_t arg) {
  if (arg >= 24) {
    put_long_head(w, major, arg);
  } else if (reserve(w, 1)) {
    w->buf[w->len++] = (uint8_t)((major << 5) | (unsigned)arg);
  }
}

reef_cbor reef_writer_finish(const reef_writer* w) {
  if (w->error != REEF_OK || w->len == 0) {
    reef_cbor none = {NULL, 0};
    return none;
  }
  reef_cbor out = {w->buf, w->len};
  return out;
}

void reef_write_null(reef_writer* w) {
  put_head(w, 7, 22);
}

void reef_write_bool(reef_writer* w, bool value) {
  put_head(w, 7, value ? 21 : 20);
}

void reef_write_int(reef_writer* w, int64_t value) {
  if (value >= 0) {
    put_head(w, 0, (uint64_t)value);
  } else {
    put_head(w, 1, (uint64_t)(-1 - value));
  }
}

void reef_write_float(reef_writer* w, double value) {
  if (!(value == value && value - value == 0.0)) {
    if (w->error == REEF_OK) w->error = REEF_E_INVALID;
    return;
  }
  uint64_t bits;
  __builtin_memcpy(&bits, &value, sizeof bits);
  uint8_t b[9];
  b[0] = 0xfb;
  for (unsigned i = 0; i < 8; i++) b[1 + i] = (uint8_t)(bits >> (56 - 8 * i));
  put_bytes(w, b, 9);
}

void reef_write_text(reef_writer* w, const char* ptr, uint32_t len) {
  if (len < 24) { /* fast path: 1-byte head, one reserve for head and bytes */
    if (!reserve(w, 1 + len)) return;
    uint8_t* out = w->buf + w->len;
    out[0] = (uint8_t)(0x60u | len);
    __builtin_memcpy(out + 1, ptr, len);
    w->len += 1 + len;
    return;
  }
  put_head(w, 3, len);
  put_bytes(w, ptr, len);
}

void reef_write_str(reef_writer* w, reef_str s) {
  reef_write_text(w, s.ptr, s.len);
}

void reef_write_list(reef_writer* w, uint32_t count) {
  put_head(w, 4, count);
}

void reef_write_record(reef_writer* w, uint32_t count) {
  put_head(w, 5, count);
}

void reef_write_actor(reef_writer* w, const reef_actor_ref* ref) {
  static const uint8_t tag[5] = {0xda, 0x52, 0x45, 0x45, 0x46};
  put_bytes(w, tag, sizeof tag);
  reef_write_text(w, ref->id, REEF_ACTOR_REF_LEN);
}

void reef_write_cbor(reef_writer* w, reef_cbor item) {
  put_bytes(w, item.ptr, item.len);
}

reef_cbor reef_value_null(void) {
  reef_writer w = reef_writer_new();
  reef_write_null(&w);
  return reef_writer_finish(&w);
}

reef_cbor reef_value_bool(bool value) {
  reef_writer w = reef_writer_new();
  reef_write_bool(&w, value);
  return reef_writer_finish(&w);
}

reef_cbor reef_value_int(int64_t value) {
  reef_writer w = reef_writer_new();
  w.buf = reef_arena_alloc(9); /* the longest int encoding: no growth */
  if (w.buf == NULL) return reef_writer_finish(&w);
  w.cap = 9;
  reef_write_int(&w, value);
  return reef_writer_finish(&w);
}
