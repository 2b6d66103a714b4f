/* Reef C guest SDK: the CBOR reader (reef_cbor.h). Every read works on a copy of the cursor
 * and commits it only on success, so a failed read changes nothing. */
#include "reef_cbor.h"

#define REEF_TAG_ACTOR 1380271430u /* 0x52454546, "REEF" */

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

/* One decoded item head: major type, additional info and argument. */
typedef struct head {
  unsigned major;
  unsigned info;
  uint64_t arg;
} head;

static uint64_t load_be(const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

/* Consumes one head. For major 7 the argument is the raw float bits or simple value.
 * Rejects reserved additional info (28-30) and indefinite lengths (31). */
static int take_head(reef_cbor* c, head* h) {
  if (c->len == 0) return REEF_E_END;
  uint8_t ib = c->ptr[0];
  h->major = ib >> 5;
  h->info = ib & 31u;
  unsigned extra = 0;
  if (h->info < 24) {
    h->arg = h->info;
  } else if (h->info <= 27) {
    extra = 1u << (h->info - 24);
    if (c->len < 1 + extra) return REEF_E_MALFORMED;
    h->arg = load_be(c->ptr + 1, extra);
  } else {
    return REEF_E_MALFORMED;
  }
  c->ptr += 1 + extra;
  c->len -= 1 + extra;
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

static bool is_nanoid_char(uint8_t ch) { return kNanoidChar[ch] != 0; }

/* After a tag head with the actor tag: consumes the 21-character text. */
static int take_actor_body(reef_cbor* c, reef_actor_ref* out) {
  head h;
  int rc = take_head(c, &h);
  if (rc != REEF_OK) return REEF_E_MALFORMED;
  if (h.major != MAJOR_TEXT || h.arg != REEF_ACTOR_REF_LEN || c->len < REEF_ACTOR_REF_LEN) {
    return REEF_E_MALFORMED;
  }
  for (unsigned i = 0; i < REEF_ACTOR_REF_LEN; i++) {
    if (!is_nanoid_char(c->ptr[i])) return REEF_E_MALFORMED;
    if (out) out->id[i] = (char)c->ptr[i];
  }
  if (out) out->id[REEF_ACTOR_REF_LEN] = '\0';
  c->ptr += REEF_ACTOR_REF_LEN;
  c->len -= REEF_ACTOR_REF_LEN;
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
      if (h->info == 20 || h->info == 21) return REEF_KIND_BOOL;
      if (h->info == 22) return REEF_KIND_NULL;
      if (h->info >= 25 && h->info <= 27) return REEF_KIND_FLOAT;
      return REEF_KIND_INVALID;
    default:
      return REEF_KIND_INVALID; /* byte strings */
  }
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

/* Consumes a head of the expected kind into *h; maps mismatches to REEF_E_TYPE. */
static int take_kind(reef_cbor* c, reef_kind want, head* h) {
  if (c->len == 0) return REEF_E_END;
  int rc = take_head(c, h);
  if (rc != REEF_OK) return rc;
  reef_kind got = kind_of(h);
  if (got == REEF_KIND_INVALID) return REEF_E_MALFORMED;
  return got == want ? REEF_OK : REEF_E_TYPE;
}

int reef_read_null(reef_cbor* c) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, REEF_KIND_NULL, &h);
  if (rc == REEF_OK) *c = t;
  return rc;
}

int reef_read_bool(reef_cbor* c, bool* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, REEF_KIND_BOOL, &h);
  if (rc != REEF_OK) return rc;
  *out = h.info == 21;
  *c = t;
  return REEF_OK;
}

int reef_read_int(reef_cbor* c, int64_t* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, REEF_KIND_INT, &h);
  if (rc != REEF_OK) return rc;
  *out = h.major == MAJOR_UINT ? (int64_t)h.arg : -1 - (int64_t)h.arg;
  *c = t;
  return REEF_OK;
}

int reef_read_float(reef_cbor* c, double* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, REEF_KIND_FLOAT, &h);
  if (rc != REEF_OK) return rc;
  double d;
  float_of(&h, &d);
  if (!is_finite(d)) return REEF_E_MALFORMED;
  *out = d;
  *c = t;
  return REEF_OK;
}

int reef_read_text(reef_cbor* c, reef_str* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, REEF_KIND_TEXT, &h);
  if (rc != REEF_OK) return rc;
  if (h.arg > t.len) return REEF_E_MALFORMED;
  out->ptr = (const char*)t.ptr;
  out->len = (uint32_t)h.arg;
  t.ptr += h.arg;
  t.len -= (uint32_t)h.arg;
  *c = t;
  return REEF_OK;
}

/* Every element takes at least one byte, so a count above the bytes left is malformed. */
static int read_container(reef_cbor* c, reef_kind kind, uint32_t per_entry, uint32_t* count) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, kind, &h);
  if (rc != REEF_OK) return rc;
  if (h.arg > t.len / per_entry) return REEF_E_MALFORMED;
  *count = (uint32_t)h.arg;
  *c = t;
  return REEF_OK;
}

int reef_read_list(reef_cbor* c, uint32_t* count) {
  return read_container(c, REEF_KIND_LIST, 1, count);
}

int reef_read_record(reef_cbor* c, uint32_t* count) {
  return read_container(c, REEF_KIND_RECORD, 2, count);
}

int reef_read_actor(reef_cbor* c, reef_actor_ref* out) {
  reef_cbor t = *c;
  head h;
  int rc = take_kind(&t, REEF_KIND_ACTOR_REF, &h);
  if (rc != REEF_OK) return rc;
  reef_actor_ref ref;
  rc = take_actor_body(&t, &ref);
  if (rc != REEF_OK) return rc;
  *out = ref;
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
    switch (kind_of(&h)) {
      case REEF_KIND_INT:
      case REEF_KIND_BOOL:
      case REEF_KIND_NULL:
        break;
      case REEF_KIND_FLOAT: {
        double d;
        float_of(&h, &d);
        if (!is_finite(d)) return REEF_E_MALFORMED;
        break;
      }
      case REEF_KIND_TEXT:
        if (h.arg > t.len) return REEF_E_MALFORMED;
        t.ptr += h.arg;
        t.len -= (uint32_t)h.arg;
        break;
      case REEF_KIND_LIST:
        if (h.arg > t.len) return REEF_E_MALFORMED;
        pending += h.arg;
        break;
      case REEF_KIND_RECORD:
        if (h.arg > t.len / 2) return REEF_E_MALFORMED;
        pending += 2 * h.arg;
        break;
      case REEF_KIND_ACTOR_REF:
        if (take_actor_body(&t, NULL) != REEF_OK) return REEF_E_MALFORMED;
        break;
      default:
        return REEF_E_MALFORMED;
    }
    if (pending > t.len) return REEF_E_MALFORMED;
  }
  if (item) *item = reef_cbor_of(c->ptr, c->len - t.len);
  *c = t;
  return REEF_OK;
}

int reef_field(reef_cbor record, const char* key, reef_cbor* value) {
  uint32_t count;
  int rc = reef_read_record(&record, &count);
  if (rc != REEF_OK) return rc == REEF_E_END ? REEF_E_TYPE : rc;
  for (uint32_t i = 0; i < count; i++) {
    reef_str k;
    rc = reef_read_text(&record, &k);
    if (rc != REEF_OK) return REEF_E_MALFORMED; /* keys must be text */
    if (reef_str_eq(k, key)) {
      *value = record;
      return REEF_OK;
    }
    rc = reef_skip(&record, NULL);
    if (rc != REEF_OK) return REEF_E_MALFORMED;
  }
  return REEF_E_NOT_FOUND;
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
