/* Reef C guest SDK: the CBOR reader (reef_cbor.h). Every read works on a copy of the cursor
 * and commits it only on success, so a failed read changes nothing.
 *
 * Cost notes (guests run in an interpreter that charges per executed wasm instruction):
 *  - the head decoder and the per-kind checks are always inlined, with a fast path for the
 *    1-byte heads (small ints, short texts, small containers, simple values) that make up
 *    almost every message;
 *  - each reader tests the head's major type directly and only classifies the head
 *    (kind_error) on the failure path, to tell REEF_E_TYPE from REEF_E_MALFORMED;
 *  - record lookup reads keys and skips values with the same inlined code, and reef_fields
 *    finds several fields in one pass. */
#include "reef_cbor.h"

#define REEF_TAG_ACTOR 1380271430u /* 0x52454546, "REEF" */
#define REEF_ALWAYS_INLINE static inline __attribute__((always_inline))

enum {
  MAJOR_UINT,
  MAJOR_NINT,
  MAJOR_BYTES,
  MAJOR_TEXT,
  MAJOR_ARRAY,
  MAJOR_MAP,
  MAJOR_TAG,
  MAJOR_SIMPLE
};

/* Major-7 additional info values of the ABI subset. */
enum { SIMPLE_FALSE = 20, SIMPLE_TRUE = 21, SIMPLE_NULL = 22, FLOAT_HALF = 25, FLOAT_DOUBLE = 27 };

/* One decoded item head: major type, additional info and argument. */
typedef struct head {
  unsigned major;
  unsigned info;
  uint64_t arg;
} head;

/* The big-endian unsigned integer in the n bytes at p (the argument of a longer head). Out of
 * line: it takes and returns plain values, so cursors around it can stay in locals. */
__attribute__((noinline)) static uint64_t load_be(const uint8_t* p, uint32_t n) {
  uint32_t hi = n == 1 ? p[0] : (uint32_t)p[0] << 8 | p[1]; /* n is 1, 2, 4 or 8 */
  if (n <= 2) return hi;
  hi = hi << 16 | (uint32_t)p[2] << 8 | p[3];
  if (n == 4) return hi;
  uint32_t lo = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
  return (uint64_t)hi << 32 | lo;
}

/* Consumes one head. For major 7 the argument is the raw float bits or simple value.
 * Rejects reserved additional info (28-30) and indefinite lengths (31). 1-byte heads (info
 * < 24: the argument is the info itself) are the fast path. */
REEF_ALWAYS_INLINE int take_head(reef_cbor* c, head* h) {
  if (c->len == 0) return REEF_E_END;
  uint8_t ib = c->ptr[0];
  h->major = ib >> 5;
  h->info = ib & 31u;
  uint32_t size = 1;
  if (h->info < 24) {
    h->arg = h->info;
  } else {
    if (h->info > 27) return REEF_E_MALFORMED;
    uint32_t extra = 1u << (h->info - 24);
    if (c->len <= extra) return REEF_E_MALFORMED;
    h->arg = load_be(c->ptr + 1, extra);
    size += extra;
  }
  c->ptr += size;
  c->len -= size;
  return REEF_OK;
}

/* 1 for each byte of the NanoID alphabet A-Z a-z 0-9 _ -: one load per character. */
static const uint8_t kNanoidChar[256] = {
    ['-'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
    ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,
    ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1,
    ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
    ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['_'] = 1, ['a'] = 1, ['b'] = 1,
    ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
    ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* After a tag head with the actor tag: consumes the 21-character text, copying it to *out
 * (with a NUL) when out is not NULL. All characters are checked before anything is copied,
 * so a malformed ref leaves *out unchanged. */
static int take_actor_body(reef_cbor* c, reef_actor_ref* out) {
  reef_cbor t = *c;
  head h;
  if (take_head(&t, &h) != REEF_OK) return REEF_E_MALFORMED;
  if (h.major != MAJOR_TEXT || h.arg != REEF_ACTOR_REF_LEN || t.len < REEF_ACTOR_REF_LEN) {
    return REEF_E_MALFORMED;
  }
  unsigned valid = 1;
  for (unsigned i = 0; i < REEF_ACTOR_REF_LEN; i++) valid &= kNanoidChar[t.ptr[i]];
  if (!valid) return REEF_E_MALFORMED;
  if (out) {
    __builtin_memcpy(out->id, t.ptr, REEF_ACTOR_REF_LEN);
    out->id[REEF_ACTOR_REF_LEN] = '\0';
  }
  c->ptr = t.ptr + REEF_ACTOR_REF_LEN;
  c->len = t.len - REEF_ACTOR_REF_LEN;
  return REEF_OK;
}

/* Decodes IEEE 754 half precision (RFC 8949 appendix D) exactly. */
static double half_to_double(uint16_t bits) {
  int exp = (bits >> 10) & 0x1f;
  int mant = bits & 0x3ff;
  double value;
  if (exp == 0) {
    value = mant * (1.0 / 16777216.0); /* mant * 2^-24 */
  } else if (exp != 31) {
    value = (mant + 1024) * (1.0 / 16777216.0);
    for (int i = 1; i < exp; i++) value *= 2.0;
  } else {
    value = mant == 0 ? __builtin_inf() : __builtin_nan("");
  }
  return (bits & 0x8000) ? -value : value;
}

/* Decodes the argument of a major-7 float head; false for a non-float simple value. */
static bool float_of(const head* h, double* out) {
  if (h->info == 25) {
    *out = half_to_double((uint16_t)h->arg);
  } else if (h->info == 26) {
    uint32_t bits = (uint32_t)h->arg;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    *out = f;
  } else if (h->info == 27) {
    __builtin_memcpy(out, &h->arg, sizeof *out);
  } else {
    return false;
  }
  return true;
}

static bool is_finite(double d) {
  return d == d && d - d == 0.0;
}

/* Classifies a head (and, for tags, checks it is the actor tag). */
static reef_kind kind_of(const head* h) {
  switch (h->major) {
    case MAJOR_UINT:
    case MAJOR_NINT:
      return h->arg <= INT64_MAX ? REEF_KIND_INT : REEF_KIND_INVALID;
    case MAJOR_TEXT:
      return REEF_KIND_TEXT;
    case MAJOR_ARRAY:
      return REEF_KIND_LIST;
    case MAJOR_MAP:
      return REEF_KIND_RECORD;
    case MAJOR_TAG:
      return h->arg == REEF_TAG_ACTOR ? REEF_KIND_ACTOR_REF : REEF_KIND_INVALID;
    case MAJOR_SIMPLE:
      if (h->info == SIMPLE_FALSE || h->info == SIMPLE_TRUE) return REEF_KIND_BOOL;
      if (h->info == SIMPLE_NULL) return REEF_KIND_NULL;
      if (h->info >= FLOAT_HALF && h->info <= FLOAT_DOUBLE) return REEF_KIND_FLOAT;
      return REEF_KIND_INVALID;
    default:
      return REEF_KIND_INVALID; /* byte strings */
  }
}

/* The error for a head that is not the kind a reader wanted: REEF_E_MALFORMED when it is no
 * valid item head of the subset at all, else REEF_E_TYPE. */
static int kind_error(const head* h) {
  return kind_of(h) == REEF_KIND_INVALID ? REEF_E_MALFORMED : REEF_E_TYPE;
}

reef_kind reef_peek(const reef_cbor* c) {
  reef_cbor t = *c;
  head h;
  if (take_head(&t, &h) != REEF_OK) return REEF_KIND_INVALID;
  return kind_of(&h);
}

const char* reef_kind_name(reef_kind kind) {
  static const char* const names[] = {"invalid", "null", "bool",   "int",      "float",
                                      "text",    "list", "record", "actor ref"};
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "invalid";
}

/* Consumes a major-7 head with additional info lo..hi into *h (the reef_read_null/bool/float
 * check); maps a mismatch to REEF_E_TYPE or REEF_E_MALFORMED. */
REEF_ALWAYS_INLINE int take_simple(reef_cbor* c, unsigned lo, unsigned hi, head* h) {
  int rc = take_head(c, h);
  if (rc != REEF_OK) return rc;
  if (h->major != MAJOR_SIMPLE || h->info < lo || h->info > hi) return kind_error(h);
  return REEF_OK;
}

int reef_read_null(reef_cbor* c) {
  reef_cbor t = *c;
  head h;
  int rc = take_simple(&t, SIMPLE_NULL, SIMPLE_NULL, &h);
  if (rc == REEF_OK) *c = t;
  return rc;
}

int reef_read_bool(reef_cbor* c, bool* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_simple(&t, SIMPLE_FALSE, SIMPLE_TRUE, &h);
  if (rc != REEF_OK) return rc;
  *out = h.info == SIMPLE_TRUE;
  *c = t;
  return REEF_OK;
}

/* reef_read_int on a cursor the caller owns (no copy): on failure *c may have moved. */
REEF_ALWAYS_INLINE int take_int(reef_cbor* c, int64_t* out) {
  head h;
  int rc = take_head(c, &h);
  if (rc != REEF_OK) return rc;
  if (h.major > MAJOR_NINT) return kind_error(&h);
  if (h.arg > INT64_MAX) return REEF_E_MALFORMED; /* outside int64: the ABI rejects it */
  *out = h.major == MAJOR_UINT ? (int64_t)h.arg : -1 - (int64_t)h.arg;
  return REEF_OK;
}

int reef_read_int(reef_cbor* c, int64_t* out) {
  if (c->len != 0) { /* fast path: -24..23, a 1-byte head */
    uint8_t ib = c->ptr[0];
    if (ib < 0x18 || (ib >= 0x20 && ib < 0x38)) {
      *out = ib < 0x20 ? (int64_t)ib : -1 - (int64_t)(ib - 0x20);
      c->ptr += 1;
      c->len -= 1;
      return REEF_OK;
    }
  }
  reef_cbor t = *c;
  int64_t v;
  int rc = take_int(&t, &v);
  if (rc != REEF_OK) return rc;
  *out = v;
  *c = t;
  return REEF_OK;
}

int reef_read_float(reef_cbor* c, double* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_simple(&t, FLOAT_HALF, FLOAT_DOUBLE, &h);
  if (rc != REEF_OK) return rc;
  double d;
  float_of(&h, &d);
  if (!is_finite(d)) return REEF_E_MALFORMED;
  *out = d;
  *c = t;
  return REEF_OK;
}

/* reef_read_text on a cursor the caller owns (no copy): on failure *c may have moved. */
REEF_ALWAYS_INLINE int take_text(reef_cbor* c, reef_str* out) {
  if (c->len != 0 && c->ptr[0] >= 0x60 && c->ptr[0] < 0x78) { /* fast path: 1-byte head */
    uint32_t n = c->ptr[0] & 31u;
    if (n >= c->len) return REEF_E_MALFORMED;
    out->ptr = (const char*)c->ptr + 1;
    out->len = n;
    c->ptr += 1 + n;
    c->len -= 1 + n;
    return REEF_OK;
  }
  head h;
  int rc = take_head(c, &h);
  if (rc != REEF_OK) return rc;
  if (h.major != MAJOR_TEXT) return kind_error(&h);
  if (h.arg > c->len) return REEF_E_MALFORMED;
  out->ptr = (const char*)c->ptr;
  out->len = (uint32_t)h.arg;
  c->ptr += h.arg;
  c->len -= (uint32_t)h.arg;
  return REEF_OK;
}

int reef_read_text(reef_cbor* c, reef_str* out) {
  reef_cbor t = *c;
  reef_str s;
  int rc = take_text(&t, &s);
  if (rc != REEF_OK) return rc;
  *out = s;
  *c = t;
  return REEF_OK;
}

/* Consumes a list or record head. Every element takes at least one byte, so a count above
 * the bytes left (per_entry: 1 for a list, 2 for a record's key and value) is malformed. */
REEF_ALWAYS_INLINE int read_container(reef_cbor* c, unsigned major, uint32_t per_entry,
                                      uint32_t* count) {
  reef_cbor t = *c;
  head h;
  int rc = take_head(&t, &h);
  if (rc != REEF_OK) return rc;
  if (h.major != major) return kind_error(&h);
  if (h.arg > t.len / per_entry) return REEF_E_MALFORMED;
  *count = (uint32_t)h.arg;
  *c = t;
  return REEF_OK;
}

int reef_read_list(reef_cbor* c, uint32_t* count) {
  return read_container(c, MAJOR_ARRAY, 1, count);
}

int reef_read_record(reef_cbor* c, uint32_t* count) {
  return read_container(c, MAJOR_MAP, 2, count);
}

int reef_read_actor(reef_cbor* c, reef_actor_ref* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_head(&t, &h);
  if (rc != REEF_OK) return rc;
  if (h.major != MAJOR_TAG || h.arg != REEF_TAG_ACTOR) return kind_error(&h);
  rc = take_actor_body(&t, out); /* leaves *out unchanged on failure */
  if (rc != REEF_OK) return rc;
  *c = t;
  return REEF_OK;
}

int reef_skip(reef_cbor* c, reef_cbor* item) {
  if (c->len == 0) return REEF_E_END;
  reef_cbor t = *c;
  uint64_t pending = 1; /* items still to consume; never exceeds the bytes left */
  while (pending > 0) {
    head h;
    if (take_head(&t, &h) != REEF_OK) return REEF_E_MALFORMED;
    pending--;
    switch (h.major) {
      case MAJOR_UINT:
      case MAJOR_NINT:
        if (h.arg > INT64_MAX) return REEF_E_MALFORMED;
        break;
      case MAJOR_TEXT:
        if (h.arg > t.len) return REEF_E_MALFORMED;
        t.ptr += h.arg;
        t.len -= (uint32_t)h.arg;
        break;
      case MAJOR_ARRAY:
        if (h.arg > t.len) return REEF_E_MALFORMED;
        pending += h.arg;
        break;
      case MAJOR_MAP:
        if (h.arg > t.len / 2) return REEF_E_MALFORMED;
        pending += 2 * h.arg;
        break;
      case MAJOR_TAG:
        if (h.arg != REEF_TAG_ACTOR) return REEF_E_MALFORMED;
        if (take_actor_body(&t, NULL) != REEF_OK) return REEF_E_MALFORMED;
        break;
      case MAJOR_SIMPLE: {
        if (h.info >= SIMPLE_FALSE && h.info <= SIMPLE_NULL) break;
        double d;
        if (!float_of(&h, &d) || !is_finite(d)) return REEF_E_MALFORMED;
        break;
      }
      default:
        return REEF_E_MALFORMED; /* byte strings */
    }
    if (pending > t.len) return REEF_E_MALFORMED;
  }
  if (item) *item = reef_cbor_of(c->ptr, c->len - t.len);
  *c = t;
  return REEF_OK;
}

/* Skips one value inside a record. Small ints and short texts (the usual field values) are
 * handled inline; anything else goes through reef_skip. Errors are REEF_E_MALFORMED. */
REEF_ALWAYS_INLINE int skip_value(reef_cbor* c) {
  if (c->len != 0) {
    uint8_t ib = c->ptr[0];
    uint32_t n = 0; /* bytes of a 1-byte-head int or text, or 0: take the general path */
    if (ib < 0x18 || (ib >= 0x20 && ib < 0x38)) {
      n = 1;
    } else if (ib >= 0x60 && ib < 0x78) {
      n = 1u + (ib & 31u);
    }
    if (n != 0 && n <= c->len) {
      c->ptr += n;
      c->len -= n;
      return REEF_OK;
    }
  }
  reef_cbor t = *c; /* a copy, so that *c need not live in memory on the fast path */
  if (reef_skip(&t, NULL) != REEF_OK) return REEF_E_MALFORMED;
  *c = t;
  return REEF_OK;
}

/* True when the `n` bytes at a and b are equal. */
REEF_ALWAYS_INLINE bool bytes_eq(const char* a, const char* b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/* The one-pass scan behind reef_field and reef_fields. REQUIRES: values[i].ptr == NULL for
 * every i. Sets values[i] for every key found (the first field with that key wins; a found
 * value is never NULL, as it follows the record head and its key) and stops as soon as every
 * key is found. Keys are compared by length first, so most mismatches cost one comparison.
 * Returns REEF_OK, REEF_E_NOT_FOUND (some key is missing), REEF_E_TYPE (not a record) or
 * REEF_E_MALFORMED. */
REEF_ALWAYS_INLINE int scan_fields(reef_cbor record, uint32_t n, const reef_str keys[],
                                   reef_cbor values[]) {
  reef_cbor c = record; /* a local cursor: it never escapes, so it stays in wasm locals */
  uint32_t count;
  int rc = read_container(&c, MAJOR_MAP, 2, &count);
  if (rc != REEF_OK) return rc == REEF_E_END ? REEF_E_TYPE : rc;
  uint32_t missing = n;
  for (uint32_t f = 0; f < count && missing > 0; f++) {
    reef_str k;
    if (take_text(&c, &k) != REEF_OK) return REEF_E_MALFORMED; /* keys must be text */
    for (uint32_t i = 0; i < n; i++) {
      if (k.len == keys[i].len && values[i].ptr == NULL && bytes_eq(k.ptr, keys[i].ptr, k.len)) {
        values[i] = c;
        missing--;
        break; /* keys are distinct */
      }
    }
    if (missing > 0 && skip_value(&c) != REEF_OK) return REEF_E_MALFORMED;
  }
  return missing == 0 ? REEF_OK : REEF_E_NOT_FOUND;
}

int reef_field(reef_cbor record, const char* key, reef_cbor* value) {
  reef_str k = {key, 0};
  while (key[k.len] != '\0') k.len++;
  reef_cbor v = reef_cbor_of(NULL, 0);
  int rc = scan_fields(record, 1, &k, &v);
  if (rc == REEF_OK) *value = v;
  return rc;
}

int reef_fields(reef_cbor record, uint32_t n, const reef_str keys[], reef_cbor values[]) {
  for (uint32_t i = 0; i < n; i++) values[i] = reef_cbor_of(NULL, 0);
  return scan_fields(record, n, keys, values);
}

/* reef_field + one typed read; a field of another kind is REEF_E_TYPE. */
#define REEF_FIELD_READER(name, type, read)                \
  int name(reef_cbor record, const char* key, type* out) { \
    reef_cbor value;                                       \
    int rc = reef_field(record, key, &value);              \
    return rc == REEF_OK ? read(&value, out) : rc;         \
  }

REEF_FIELD_READER(reef_field_bool, bool, reef_read_bool)
REEF_FIELD_READER(reef_field_int, int64_t, reef_read_int)
REEF_FIELD_READER(reef_field_float, double, reef_read_float)
REEF_FIELD_READER(reef_field_text, reef_str, reef_read_text)
REEF_FIELD_READER(reef_field_actor, reef_actor_ref, reef_read_actor)
