/* The C SDK's test guest: exports thin probes over the CBOR reader and writer so that
 * tests/guest/sdk_test.mjs can feed them arbitrary bytes (well-formed or not) and check the
 * results. It is also an actor whose handler echoes the message back as the new state, with a
 * shutdown hook.
 *
 * Probe exports take an input buffer obtained from reef_alloc (ptr, len). */
#include "reef.h"

static reef_cbor input(int32_t ptr, int32_t len) {
  return reef_cbor_of((const void*)(uintptr_t)(uint32_t)ptr, (uint32_t)len);
}

/* Copies one item from *in to w with typed reads only (recursively, at most 64 levels). */
static int copy_item(reef_cbor* in, reef_writer* w, int depth) {
  if (depth > 64) return REEF_E_LIMIT;
  int rc;
  switch (reef_peek(in)) {
    case REEF_KIND_NULL:
      if ((rc = reef_read_null(in)) == REEF_OK) reef_write_null(w);
      return rc;
    case REEF_KIND_BOOL: {
      bool b;
      if ((rc = reef_read_bool(in, &b)) == REEF_OK) reef_write_bool(w, b);
      return rc;
    }
    case REEF_KIND_INT: {
      int64_t i;
      if ((rc = reef_read_int(in, &i)) == REEF_OK) reef_write_int(w, i);
      return rc;
    }
    case REEF_KIND_FLOAT: {
      double d;
      if ((rc = reef_read_float(in, &d)) == REEF_OK) reef_write_float(w, d);
      return rc;
    }
    case REEF_KIND_TEXT: {
      reef_str s;
      if ((rc = reef_read_text(in, &s)) == REEF_OK) reef_write_str(w, s);
      return rc;
    }
    case REEF_KIND_ACTOR_REF: {
      reef_actor_ref r;
      if ((rc = reef_read_actor(in, &r)) == REEF_OK) reef_write_actor(w, &r);
      return rc;
    }
    case REEF_KIND_LIST: {
      uint32_t n;
      if ((rc = reef_read_list(in, &n)) != REEF_OK) return rc;
      reef_write_list(w, n);
      for (uint32_t i = 0; i < n; i++) {
        if ((rc = copy_item(in, w, depth + 1)) != REEF_OK) return rc;
      }
      return REEF_OK;
    }
    case REEF_KIND_RECORD: {
      uint32_t n;
      if ((rc = reef_read_record(in, &n)) != REEF_OK) return rc;
      reef_write_record(w, n);
      for (uint32_t i = 0; i < n; i++) {
        reef_str key;
        if ((rc = reef_read_text(in, &key)) != REEF_OK) return rc;
        reef_write_str(w, key);
        if ((rc = copy_item(in, w, depth + 1)) != REEF_OK) return rc;
      }
      return REEF_OK;
    }
    default:
      return reef_at_end(in) ? REEF_E_END : REEF_E_MALFORMED;
  }
}

/* Re-encodes exactly one item. Returns ptr | len << 32 of the copy, or a negative code. */
__attribute__((export_name("probe_roundtrip"))) int64_t probe_roundtrip(int32_t ptr, int32_t len) {
  reef_cbor in = input(ptr, len);
  reef_writer w = reef_writer_new();
  int rc = copy_item(&in, &w, 0);
  if (rc != REEF_OK) return rc;
  if (!reef_at_end(&in)) return REEF_E_MALFORMED; /* trailing bytes */
  if (w.error != REEF_OK) return w.error;
  reef_cbor out = reef_writer_finish(&w);
  return (int64_t)((uint64_t)(uintptr_t)out.ptr | ((uint64_t)out.len << 32));
}

/* Skips one item. Returns the bytes it spans, or a negative code. */
__attribute__((export_name("probe_skip"))) int32_t probe_skip(int32_t ptr, int32_t len) {
  reef_cbor in = input(ptr, len);
  reef_cbor item;
  int rc = reef_skip(&in, &item);
  return rc == REEF_OK ? (int32_t)item.len : rc;
}

/* Returns reef_peek's kind of the first item. */
__attribute__((export_name("probe_peek"))) int32_t probe_peek(int32_t ptr, int32_t len) {
  reef_cbor in = input(ptr, len);
  return (int32_t)reef_peek(&in);
}

static int64_t last_int;
static double last_float;

/* Reads the int field whose NUL-terminated key is at key_ptr; value via probe_last_int. */
__attribute__((export_name("probe_field_int"))) int32_t probe_field_int(int32_t ptr, int32_t len,
                                                                        int32_t key_ptr) {
  return reef_field_int(input(ptr, len), (const char*)(uintptr_t)(uint32_t)key_ptr, &last_int);
}

/* reef_fields with the keys "op", "value" and "x". Returns its code; probe_last_int gets, for
 * key i, (offset of its value from ptr, or 255 when missing) << 8 * i. */
__attribute__((export_name("probe_fields"))) int32_t probe_fields(int32_t ptr, int32_t len) {
  static const reef_str keys[3] = {REEF_STR("op"), REEF_STR("value"), REEF_STR("x")};
  reef_cbor values[3];
  int rc = reef_fields(input(ptr, len), 3, keys, values);
  last_int = 0;
  for (int i = 0; i < 3; i++) {
    uint32_t at = reef_at_end(&values[i]) ? 255u : (uint32_t)(values[i].ptr - input(ptr, len).ptr);
    last_int |= (int64_t)at << (8 * i);
  }
  return rc;
}

/* Reads one int; the value via probe_last_int. */
__attribute__((export_name("probe_read_int"))) int32_t probe_read_int(int32_t ptr, int32_t len) {
  reef_cbor in = input(ptr, len);
  return reef_read_int(&in, &last_int);
}

/* Reads one float; the value via probe_last_float. */
__attribute__((export_name("probe_read_float"))) int32_t probe_read_float(int32_t ptr,
                                                                          int32_t len) {
  reef_cbor in = input(ptr, len);
  return reef_read_float(&in, &last_float);
}

__attribute__((export_name("probe_last_int"))) int64_t probe_last_int(void) {
  return last_int;
}
__attribute__((export_name("probe_last_float"))) double probe_last_float(void) {
  return last_float;
}

/* Formats "%s|%.*s|%d|%lld|%u|%c|%%" with fixed arguments into the `cap` bytes at out_ptr
 * (from reef_alloc); returns what reef_format returns. Checks formatting and truncation. */
__attribute__((export_name("probe_format"))) int32_t probe_format(int32_t out_ptr, int32_t cap) {
  char* out = (char*)(uintptr_t)(uint32_t)out_ptr;
  return reef_format(out, (uint32_t)cap, "%s|%.*s|%d|%lld|%u|%c|%%", "ab", 2, "xyz", -42,
                     (long long)INT64_MIN, 7u, 'Z');
}

/* Formats "a%xb%d" (an unsupported conversion first) into the `cap` bytes at out_ptr; returns
 * what reef_format returns. The format string is not a literal, so the compiler does not
 * refuse it. */
__attribute__((export_name("probe_format_unsupported"))) int32_t probe_format_unsupported(
    int32_t out_ptr, int32_t cap) {
  static const char* volatile fmt = "a%xb%d";
  char* out = (char*)(uintptr_t)(uint32_t)out_ptr;
  return reef_format(out, (uint32_t)cap, fmt, 1u, 2);
}

/* reef_strf("order:%.*s", the input text). Returns ptr | len << 32 of the result. */
__attribute__((export_name("probe_strf"))) int64_t probe_strf(int32_t ptr, int32_t len) {
  reef_str s = reef_strf("order:%.*s", (int)len, (const char*)(uintptr_t)(uint32_t)ptr);
  return (int64_t)((uint64_t)(uintptr_t)s.ptr | ((uint64_t)s.len << 32));
}

/* reef_logf(REEF_INFO, "%.*s", the input text); returns its code. */
__attribute__((export_name("probe_logf"))) int32_t probe_logf(int32_t ptr, int32_t len) {
  return reef_logf(REEF_INFO, "%.*s", (int)len, (const char*)(uintptr_t)(uint32_t)ptr);
}

/* reef_failf("failed: %.*s", the input text): never returns. */
__attribute__((export_name("probe_failf"))) void probe_failf(int32_t ptr, int32_t len) {
  reef_failf("failed: %.*s", (int)len, (const char*)(uintptr_t)(uint32_t)ptr);
}

static reef_cbor echo(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)state;
  (void)sender;
  return message;
}

/* Shutdown hook: the final state is the record {"stopped": <old state>}. */
static reef_cbor shutdown(reef_cbor state) {
  reef_cbor old;
  if (reef_skip(&state, &old) != REEF_OK) reef_fail("sdk_probe: malformed state");
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 1);
  reef_write_cstr(&w, "stopped");
  reef_write_cbor(&w, old);
  return reef_writer_finish(&w);
}

REEF_ACTOR_WITH_SHUTDOWN(echo, shutdown);
