/* Reef C guest SDK: the CBOR writer (reef_writer.h). */
#include "reef_writer.h"

#define REEF_TAG_ACTOR 1380271430u /* 0x52454546, "REEF" */
#define REEF_WRITER_MIN_CAP 64u

/* Makes room for `n` more bytes; returns false (and records the error) when it cannot. */
static bool reserve(reef_writer* w, uint32_t n) {
  if (w->error != REEF_OK) return false;
  if ((uint64_t)w->len + n <= w->cap) return true;
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

static void put_bytes(reef_writer* w, const void* src, uint32_t n) {
  if (!reserve(w, n)) return;
  __builtin_memcpy(w->buf + w->len, src, n);
  w->len += n;
}

/* Writes a head with the shortest argument encoding (RFC 8949 section 4.2.1). */
static void put_head(reef_writer* w, unsigned major, uint64_t arg) {
  uint8_t b[9];
  uint32_t n;
  uint8_t mt = (uint8_t)(major << 5);
  if (arg < 24) {
    b[0] = mt | (uint8_t)arg;
    n = 1;
  } else {
    unsigned bytes = arg <= 0xff ? 1 : arg <= 0xffff ? 2 : arg <= 0xffffffffu ? 4 : 8;
    b[0] = mt | (uint8_t)(bytes == 1 ? 24 : bytes == 2 ? 25 : bytes == 4 ? 26 : 27);
    for (unsigned i = 0; i < bytes; i++) b[1 + i] = (uint8_t)(arg >> (8 * (bytes - 1 - i)));
    n = 1 + bytes;
  }
  put_bytes(w, b, n);
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
  put_head(w, 3, len);
  put_bytes(w, ptr, len);
}

void reef_write_cstr(reef_writer* w, const char* z) {
  uint32_t len = 0;
  while (z[len] != '\0') len++;
  reef_write_text(w, z, len);
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
  reef_write_int(&w, value);
  return reef_writer_finish(&w);
}
