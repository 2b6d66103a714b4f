/* Reef C guest SDK: the host imports of ABI v1 and the entry-point glue (reef_actor.h). */
#include "reef_actor.h"

#include "reef_cbor.h"
#include "reef_writer.h"

/* ---- Raw imports of module "reef" (docs/abi.md). Every (ptr, len) pair is bounds-checked by
 * the host; an out-of-bounds pair traps the invocation. */
#define REEF_IMPORT(name) __attribute__((import_module("reef"), import_name(name)))

REEF_IMPORT("send")
int32_t reef__import_send(const void* target_ptr, uint32_t target_len, const void* msg_ptr,
                          uint32_t msg_len);
REEF_IMPORT("send_from")
int32_t reef__import_send_from(const void* sender_ptr, uint32_t sender_len, const void* target_ptr,
                               uint32_t target_len, const void* msg_ptr, uint32_t msg_len);
REEF_IMPORT("call")
int32_t reef__import_call(const void* target_ptr, uint32_t target_len, const void* msg_ptr,
                          uint32_t msg_len, int32_t timeout_ms);
REEF_IMPORT("call_reply")
int32_t reef__import_call_reply(void* buf_ptr, uint32_t buf_cap);
REEF_IMPORT("log")
int32_t reef__import_log(int32_t level, const void* msg_ptr, uint32_t msg_len);
REEF_IMPORT("self")
int32_t reef__import_self(void* buf_ptr, uint32_t buf_cap);
REEF_IMPORT("fail")
void reef__import_fail(const void* msg_ptr, uint32_t msg_len);

/* Encoded actor ref: 5-byte tag head, 1-byte text head, 21 characters. */
#define REEF_REF_CBOR_LEN 27

static void encode_ref(const reef_actor_ref* ref, uint8_t out[REEF_REF_CBOR_LEN]) {
  static const uint8_t head[6] = {0xda, 0x52, 0x45, 0x45, 0x46, 0x60 | REEF_ACTOR_REF_LEN};
  __builtin_memcpy(out, head, sizeof head);
  __builtin_memcpy(out + sizeof head, ref->id, REEF_ACTOR_REF_LEN);
}

/* Maps a host return code to the SDK's: lengths and 0 are REEF_OK, -1/-2 are kept. */
static int host_status(int32_t rc) {
  if (rc >= 0) return REEF_OK;
  return rc == REEF_E_LIMIT ? REEF_E_LIMIT : REEF_E_INVALID;
}

int reef_send(const reef_actor_ref* target, reef_cbor message) {
  if (message.ptr == NULL || message.len == 0) return REEF_E_INVALID;
  uint8_t t[REEF_REF_CBOR_LEN];
  encode_ref(target, t);
  return host_status(reef__import_send(t, sizeof t, message.ptr, message.len));
}

int reef_send_from(const reef_actor_ref* sender, const reef_actor_ref* target, reef_cbor message) {
  if (message.ptr == NULL || message.len == 0) return REEF_E_INVALID;
  uint8_t s[REEF_REF_CBOR_LEN];
  uint32_t s_len = 1;
  s[0] = 0xf6; /* null: host-originated */
  if (sender != NULL) {
    encode_ref(sender, s);
    s_len = sizeof s;
  }
  uint8_t t[REEF_REF_CBOR_LEN];
  encode_ref(target, t);
  return host_status(reef__import_send_from(s, s_len, t, sizeof t, message.ptr, message.len));
}

int reef_reply(reef_cbor sender, reef_cbor message) {
  if (reef_peek(&sender) == REEF_KIND_NULL) return REEF_E_NOT_FOUND;
  reef_actor_ref target;
  int rc = reef_read_actor(&sender, &target);
  if (rc != REEF_OK) return rc;
  return reef_send(&target, message);
}

int reef_call(const reef_actor_ref* target, reef_cbor message, uint32_t timeout_ms,
              reef_cbor* reply) {
  if (message.ptr == NULL || message.len == 0) return REEF_E_INVALID;
  if (timeout_ms == 0 || timeout_ms > 600000) return REEF_E_INVALID;
  uint8_t t[REEF_REF_CBOR_LEN];
  encode_ref(target, t);
  int32_t n = reef__import_call(t, sizeof t, message.ptr, message.len, (int32_t)timeout_ms);
  switch (n) {
    case -1:
      return REEF_E_INVALID;
    case -2:
      return REEF_E_LIMIT;
    case -3:
      return REEF_E_UNAVAILABLE;
    case -4:
      return REEF_E_TIMEOUT;
    case -5:
      return REEF_E_NO_REPLY;
    case -6:
      return REEF_E_CYCLE;
    default:
      break;
  }
  if (n <= 0) return REEF_E_MALFORMED; /* a reply is at least one byte */
  uint8_t* buf = (uint8_t*)reef_arena_alloc((uint32_t)n);
  if (buf == NULL) return REEF_E_NOMEM;
  if (reef__import_call_reply(buf, (uint32_t)n) != n) return REEF_E_MALFORMED;
  *reply = reef_cbor_of(buf, (uint32_t)n);
  return REEF_OK;
}

int reef_self(reef_actor_ref* out) {
  uint8_t buf[64];
  int32_t n = reef__import_self(buf, sizeof buf);
  if (n <= 0 || (uint32_t)n > sizeof buf) return REEF_E_MALFORMED;
  reef_cbor c = reef_cbor_of(buf, (uint32_t)n);
  return reef_read_actor(&c, out) == REEF_OK ? REEF_OK : REEF_E_MALFORMED;
}

/* ---- Formatting --------------------------------------------------------------------------- */

typedef struct out_buf {
  char* buf;     /* NULL: only count */
  uint32_t cap;  /* usable bytes, without the NUL */
  uint32_t len;  /* bytes written */
  uint64_t need; /* bytes of the whole text */
  bool full;     /* a write did not fit: the text is cut */
  bool invalid;  /* an unsupported conversion stopped the formatting */
} out_buf;

/* Appends `n` bytes, or as many whole UTF-8 characters as fit, then stops appending. */
static void out_put(out_buf* o, const char* s, uint32_t n) {
  o->need += n;
  if (o->full) return;
  if (n > o->cap - o->len) {
    n = o->cap - o->len;
    while (n > 0 && ((uint8_t)s[n] & 0xc0) == 0x80) n--; /* s[n]: first byte not written */
    o->full = true;
  }
  if (o->buf != NULL) __builtin_memcpy(o->buf + o->len, s, n);
  o->len += n;
}

static void out_uint(out_buf* o, uint64_t v, bool negative) {
  char digits[21];
  uint32_t i = sizeof digits;
  do {
    digits[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (negative) digits[--i] = '-';
  out_put(o, digits + i, sizeof digits - i);
}

/* Formats fmt into o. An unsupported conversion is written as a marker naming it and stops the
 * formatting (its argument's type is unknown, so no later argument could be read safely). */
static void format_into(out_buf* o, const char* fmt, va_list args) {
  const char* p = fmt;
  while (*p != '\0') {
    if (*p != '%') {
      const char* run = p;
      while (*p != '\0' && *p != '%') p++;
      out_put(o, run, (uint32_t)(p - run));
      continue;
    }
    const char* spec = p++;
    bool precision = false;
    int max = -1; /* %.*s: at most this many bytes */
    if (p[0] == '.' && p[1] == '*') {
      precision = true;
      max = va_arg(args, int);
      p += 2;
    }
    int longs = 0;
    while (*p == 'l' && longs < 2) {
      longs++;
      p++;
    }
    char conv = *p;
    if (conv != '\0') p++;
    if (conv == 's') {
      const char* s = va_arg(args, const char*);
      if (s == NULL) s = "(null)";
      uint32_t n = 0;
      while ((max < 0 || n < (uint32_t)max) && s[n] != '\0') n++;
      out_put(o, s, n);
    } else if ((conv == 'd' || conv == 'i' || conv == 'u') && !precision) {
      if (conv == 'u') {
        uint64_t uv = longs == 2   ? va_arg(args, unsigned long long)
                      : longs == 1 ? va_arg(args, unsigned long)
                                   : va_arg(args, unsigned);
        out_uint(o, uv, false);
      } else {
        int64_t sv = longs == 2   ? va_arg(args, long long)
                     : longs == 1 ? va_arg(args, long)
                                  : va_arg(args, int);
        out_uint(o, sv < 0 ? 0 - (uint64_t)sv : (uint64_t)sv, sv < 0);
      }
    } else if (conv == 'c' && !precision && longs == 0) {
      char ch = (char)va_arg(args, int);
      out_put(o, &ch, 1);
    } else if (conv == '%' && !precision && longs == 0) {
      out_put(o, "%", 1);
    } else {
      out_put(o, "[unsupported conversion \"", 25);
      out_put(o, spec, (uint32_t)(p - spec));
      out_put(o, "\"]", 2);
      o->invalid = true;
      return;
    }
  }
}

/* reef_vformat, also giving the length of the whole text in *need. */
static int format_buf(char* buf, uint32_t cap, const char* fmt, va_list args, uint64_t* need) {
  out_buf o = {buf, cap - 1, 0, 0, false, false};
  format_into(&o, fmt, args);
  o.buf[o.len] = '\0';
  *need = o.need;
  if (o.invalid) return REEF_E_INVALID;
  if (o.full || o.len > INT32_MAX) return REEF_E_LIMIT;
  return (int)o.len;
}

int reef_vformat(char* buf, uint32_t cap, const char* fmt, va_list args) {
  uint64_t need;
  return format_buf(buf, cap, fmt, args, &need);
}

int reef_format(char* buf, uint32_t cap, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int n = reef_vformat(buf, cap, fmt, args);
  va_end(args);
  return n;
}

/* Texts up to this many bytes take one formatting pass (into the stack, then copied). */
#define REEF_SHORT_TEXT 256u

int reef__vstrf(reef_str* out, const char* fmt, va_list args) {
  out->ptr = "";
  out->len = 0;
  va_list again;
  va_copy(again, args);
  char first[REEF_SHORT_TEXT];
  uint64_t need;
  int rc = format_buf(first, sizeof first, fmt, args, &need);
  char* buf = NULL;
  if (need <= 0xfffffffeu) buf = (char*)reef_arena_alloc((uint32_t)need + 1);
  if (buf != NULL && need >= sizeof first) { /* longer: a second pass at the full length */
    rc = format_buf(buf, (uint32_t)need + 1, fmt, again, &need);
  } else if (buf != NULL) {
    __builtin_memcpy(buf, first, (uint32_t)need + 1);
  }
  va_end(again);
  if (buf == NULL) return REEF_E_NOMEM;
  out->ptr = buf;
  out->len = (uint32_t)need;
  return rc == REEF_E_INVALID ? REEF_E_INVALID : REEF_OK;
}

/* ---- Logs and failure --------------------------------------------------------------------- */

int reef_log(int level, const char* msg, uint32_t len) {
  return host_status(reef__import_log(level, msg, len));
}

static uint32_t cstr_len(const char* z) {
  uint32_t n = 0;
  while (z[n] != '\0') n++;
  return n;
}

/* Ends the `len` bytes of text in buf (capacity REEF_LOG_MAX + 1) with `marker`, cutting the
 * text at a character boundary to make room. Returns the new length. */
static uint32_t end_with_marker(char* buf, uint32_t len, const char* marker) {
  uint32_t marker_len = cstr_len(marker);
  uint32_t keep = len;
  if (keep > REEF_LOG_MAX - marker_len) {
    keep = REEF_LOG_MAX - marker_len;
    while (keep > 0 && ((uint8_t)buf[keep] & 0xc0) == 0x80) keep--;
  }
  __builtin_memcpy(buf + keep, marker, marker_len);
  buf[keep + marker_len] = '\0';
  return keep + marker_len;
}

/* Formats into buf (REEF_LOG_MAX + 1 bytes): the whole text, or its first bytes ending with a
 * marker that says how long it was. Returns the length; *rc gets what reef_vformat returned
 * (a length, REEF_E_LIMIT or REEF_E_INVALID). */
static uint32_t format_for_log(char buf[REEF_LOG_MAX + 1], int* rc, const char* fmt, va_list args) {
  uint64_t need;
  *rc = format_buf(buf, REEF_LOG_MAX + 1, fmt, args, &need);
  if (*rc >= 0) return (uint32_t)*rc;
  if (*rc == REEF_E_INVALID) return cstr_len(buf);
  char marker[64];
  reef_format(marker, sizeof marker, " [cut: %llu bytes in all]", (unsigned long long)need);
  return end_with_marker(buf, REEF_LOG_MAX, marker);
}

int reef_logf(int level, const char* fmt, ...) {
  char buf[REEF_LOG_MAX + 1];
  int rc;
  va_list args;
  va_start(args, fmt);
  uint32_t len = format_for_log(buf, &rc, fmt, args);
  va_end(args);
  int logged = reef_log(level, buf, len);
  return rc < 0 ? rc : logged;
}

int reef_trace(const char* msg) {
  return reef_log(REEF_TRACE, msg, cstr_len(msg));
}
int reef_debug(const char* msg) {
  return reef_log(REEF_DEBUG, msg, cstr_len(msg));
}
int reef_info(const char* msg) {
  return reef_log(REEF_INFO, msg, cstr_len(msg));
}
int reef_warn(const char* msg) {
  return reef_log(REEF_WARN, msg, cstr_len(msg));
}
int reef_error(const char* msg) {
  return reef_log(REEF_ERROR, msg, cstr_len(msg));
}
int reef_fatal(const char* msg) {
  return reef_log(REEF_FATAL, msg, cstr_len(msg));
}

_Noreturn void reef_fail_n(const char* reason, uint32_t len) {
  reef__import_fail(reason, len);
  __builtin_unreachable(); /* the host never returns from fail */
}

_Noreturn void reef_fail(const char* reason) {
  reef_fail_n(reason, cstr_len(reason));
}

_Noreturn void reef_failf(const char* fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  char buf[REEF_LOG_MAX + 1];
  int rc;
  uint32_t len = format_for_log(buf, &rc, fmt, args);
  if (rc != REEF_E_LIMIT) reef_fail_n(buf, len);
  /* Longer than the buffer: the whole reason from the arena, unless it is exhausted (then the
   * buffer's first bytes, which say that the reason was cut). */
  reef_str reason;
  if (reef__vstrf(&reason, fmt, again) != REEF_E_NOMEM) reef_fail_n(reason.ptr, reason.len);
  reef_fail_n(buf, len);
}

/* ---- Entry points -------------------------------------------------------------------------- */

_Noreturn void reef__fail_no_state(void) {
  reef_fail(
      "reef: the handler returned no state (a writer failed: out of memory or a "
      "NaN/infinite float)");
}
