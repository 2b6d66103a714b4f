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

int reef_self(reef_actor_ref* out) {
  uint8_t buf[64];
  int32_t n = reef__import_self(buf, sizeof buf);
  if (n <= 0 || (uint32_t)n > sizeof buf) return REEF_E_MALFORMED;
  reef_cbor c = reef_cbor_of(buf, (uint32_t)n);
  return reef_read_actor(&c, out) == REEF_OK ? REEF_OK : REEF_E_MALFORMED;
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

int reef_logf(int level, const char* fmt, ...) {
  char buf[REEF_LOG_MAX + 1];
  va_list args;
  va_start(args, fmt);
  uint32_t n = reef_vformat(buf, sizeof buf, fmt, args);
  va_end(args);
  return reef_log(level, buf, n);
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
  char buf[REEF_LOG_MAX + 1];
  va_list args;
  va_start(args, fmt);
  uint32_t n = reef_vformat(buf, sizeof buf, fmt, args);
  va_end(args);
  reef_fail_n(buf, n);
}

/* ---- Formatting --------------------------------------------------------------------------- */

typedef struct out_buf {
  char* buf;
  uint32_t cap; /* usable bytes, without the NUL */
  uint32_t len;
  bool full;
} out_buf;

/* Appends `n` bytes, or as many whole UTF-8 characters as fit, then stops appending. */
static void out_put(out_buf* o, const char* s, uint32_t n) {
  if (o->full) return;
  if (n > o->cap - o->len) {
    n = o->cap - o->len;
    while (n > 0 && ((uint8_t)s[n] & 0xc0) == 0x80) n--; /* s[n]: first byte not written */
    o->full = true;
  }
  __builtin_memcpy(o->buf + o->len, s, n);
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

uint32_t reef_vformat(char* buf, uint32_t cap, const char* fmt, va_list args) {
  out_buf o = {buf, cap - 1, 0, false};
  const char* p = fmt;
  while (*p != '\0') {
    if (*p != '%') {
      const char* run = p;
      while (*p != '\0' && *p != '%') p++;
      out_put(&o, run, (uint32_t)(p - run));
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
    if (conv == '\0') {
      out_put(&o, spec, (uint32_t)(p - spec));
      break;
    }
    p++;
    if (conv == 's') {
      const char* s = va_arg(args, const char*);
      if (s == NULL) s = "(null)";
      uint32_t n = 0;
      while ((max < 0 || n < (uint32_t)max) && s[n] != '\0') n++;
      out_put(&o, s, n);
    } else if (conv == 'd' || conv == 'i' || conv == 'u') {
      int64_t sv = 0;
      uint64_t uv = 0;
      if (conv == 'u') {
        uv = longs == 2   ? va_arg(args, unsigned long long)
             : longs == 1 ? va_arg(args, unsigned long)
                          : va_arg(args, unsigned);
        out_uint(&o, uv, false);
      } else {
        sv = longs == 2   ? va_arg(args, long long)
             : longs == 1 ? va_arg(args, long)
                          : va_arg(args, int);
        out_uint(&o, sv < 0 ? 0 - (uint64_t)sv : (uint64_t)sv, sv < 0);
      }
    } else if (conv == 'c' && !precision && longs == 0) {
      char ch = (char)va_arg(args, int);
      out_put(&o, &ch, 1);
    } else if (conv == '%' && !precision && longs == 0) {
      out_put(&o, "%", 1);
    } else {
      out_put(&o, spec, (uint32_t)(p - spec)); /* unsupported: copied literally */
    }
  }
  o.buf[o.len] = '\0';
  return o.len;
}

uint32_t reef_format(char* buf, uint32_t cap, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  uint32_t n = reef_vformat(buf, cap, fmt, args);
  va_end(args);
  return n;
}

/* ---- Entry points -------------------------------------------------------------------------- */

_Noreturn void reef__fail_no_state(void) {
  reef_fail(
      "reef: the handler returned no state (a writer failed: out of memory or a "
      "NaN/infinite float)");
}
