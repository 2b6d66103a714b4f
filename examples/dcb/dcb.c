/* The DCB examples' shared vocabulary (dcb.h): numbers, command inputs, event data and the
 * query, initial state and fold of a command's decision models. */
#include "dcb.h"

static uint32_t cstr_len(const char* z) {
  uint32_t n = 0;
  while (z[n] != '\0') n++;
  return n;
}

/* ---- Numbers ---------------------------------------------------------------------------- */

dcb_number dcb_read_number(reef_cbor item) {
  dcb_number n = {DCB_NUMBER_NONE, 0, 0.0};
  if (reef_read_int(&item, &n.i) == REEF_OK) {
    n.kind = DCB_NUMBER_INT;
  } else if (reef_read_float(&item, &n.f) == REEF_OK) {
    n.kind = DCB_NUMBER_FLOAT;
  }
  return n;
}

void dcb_write_number(reef_writer* w, dcb_number n) {
  switch (n.kind) {
    case DCB_NUMBER_INT:
      reef_write_int(w, n.i);
      return;
    case DCB_NUMBER_FLOAT:
      reef_write_float(w, n.f);
      return;
    case DCB_NUMBER_NONE:
      reef_write_null(w);
      return;
  }
}

reef_cbor dcb_number_value(dcb_number n) {
  reef_writer w = reef_writer_new();
  dcb_write_number(&w, n);
  return reef_writer_finish(&w);
}

dcb_number dcb_number_add(dcb_number n, int64_t k) {
  int64_t sum;
  if (n.kind == DCB_NUMBER_INT && __builtin_add_overflow(n.i, k, &sum)) {
    n.kind = DCB_NUMBER_FLOAT;
    n.f = (double)n.i + (double)k;
  } else if (n.kind == DCB_NUMBER_INT) {
    n.i = sum;
  } else if (n.kind == DCB_NUMBER_FLOAT) {
    n.f += (double)k;
  }
  return n;
}

static double as_double(dcb_number n) {
  return n.kind == DCB_NUMBER_INT ? (double)n.i : n.f;
}

bool dcb_number_ge(dcb_number a, dcb_number b) {
  if (a.kind == DCB_NUMBER_NONE || b.kind == DCB_NUMBER_NONE) return false;
  if (a.kind == DCB_NUMBER_INT && b.kind == DCB_NUMBER_INT) return a.i >= b.i;
  return as_double(a) >= as_double(b);
}

bool dcb_number_eq(dcb_number a, dcb_number b) {
  if (a.kind == DCB_NUMBER_NONE || b.kind == DCB_NUMBER_NONE) return false;
  if (a.kind == DCB_NUMBER_INT && b.kind == DCB_NUMBER_INT) return a.i == b.i;
  return as_double(a) == as_double(b);
}

/* Significant digits dcb_number_text gives a float. */
#define FLOAT_DIGITS 15

/* A finite nonzero float outside [1e-6, 1e15) in magnitude as JavaScript writes it, to
 * FLOAT_DIGITS significant digits: whole digits below 1e21 ("1234500000000000000"), else
 * an exponent ("1.2345e+21", "1e-7"). */
static reef_str scientific_text(double f) {
  double m = f < 0 ? -f : f;
  if (!(m > 0.0 && m - m == 0.0)) return reef_strf("%s", m == 0.0 ? "0" : "NaN");
  int exponent = 0;
  while (m >= 10.0) {
    m /= 10.0;
    exponent++;
  }
  while (m < 1.0) {
    m *= 10.0;
    exponent--;
  }
  uint64_t scaled = (uint64_t)(m * 1e14 + 0.5); /* FLOAT_DIGITS digits */
  if (scaled >= 1000000000000000ull) {
    scaled /= 10;
    exponent++;
  }
  char digits[FLOAT_DIGITS];
  for (int i = FLOAT_DIGITS - 1; i >= 0; i--) {
    digits[i] = (char)('0' + scaled % 10);
    scaled /= 10;
  }
  int significant = FLOAT_DIGITS;
  while (significant > 1 && digits[significant - 1] == '0') significant--;
  char* out = (char*)reef_arena_alloc(48);
  if (out == NULL) reef_fail("dcb: out of memory");
  uint32_t len = 0;
  if (f < 0) out[len++] = '-';
  if (exponent >= FLOAT_DIGITS && exponent < 21) { /* [1e15, 1e21): whole digits */
    for (int i = 0; i <= exponent; i++) out[len++] = i < FLOAT_DIGITS ? digits[i] : '0';
  } else {
    out[len++] = digits[0];
    if (significant > 1) out[len++] = '.';
    for (int i = 1; i < significant; i++) out[len++] = digits[i];
    out[len++] = 'e';
    out[len++] = exponent < 0 ? '-' : '+';
    int e = exponent < 0 ? -exponent : exponent;
    if (e >= 100) out[len++] = (char)('0' + e / 100);
    if (e >= 10) out[len++] = (char)('0' + e / 10 % 10);
    out[len++] = (char)('0' + e % 10);
  }
  reef_str s = {out, len};
  return s;
}

/* A float in [1e-6, 1e15) in magnitude: its value rounded to FLOAT_DIGITS significant digits,
 * as an integer `scaled` with `fraction` digits after the decimal point; then printed with
 * the trailing zeros (and a bare point) dropped. */
static reef_str float_text(double f) {
  double magnitude = f < 0 ? -f : f;
  if (!(magnitude >= 1e-6 && magnitude < 1e15)) return scientific_text(f);
  int integer_digits = 0;
  double power = 1.0;
  while (power <= magnitude) {
    power *= 10.0;
    integer_digits++;
  }
  int leading_zeros = 0; /* zeros right after the point, when magnitude < 1 */
  for (double m = magnitude * 10.0; integer_digits == 0 && m < 1.0; m *= 10.0) leading_zeros++;
  int fraction = FLOAT_DIGITS - integer_digits + leading_zeros; /* at most 21: exact powers */
  double scale = 1.0;
  for (int i = 0; i < fraction; i++) scale *= 10.0;
  uint64_t scaled = (uint64_t)(magnitude * scale + 0.5);

  char digits[32]; /* scaled in decimal, least significant first, padded to fraction + 1 */
  int n = 0;
  do {
    digits[n++] = (char)('0' + scaled % 10);
    scaled /= 10;
  } while (scaled != 0 || n <= fraction);
  int low = 0; /* drop trailing zeros of the fraction */
  while (low < fraction && digits[low] == '0') low++;

  char* out = (char*)reef_arena_alloc(40);
  if (out == NULL) reef_fail("dcb: out of memory");
  uint32_t len = 0;
  if (f < 0) out[len++] = '-';
  for (int i = n - 1; i >= low; i--) {
    if (i == fraction - 1) out[len++] = '.';
    out[len++] = digits[i];
  }
  reef_str s = {out, len};
  return s;
}

reef_str dcb_number_text(dcb_number n) {
  switch (n.kind) {
    case DCB_NUMBER_INT:
      return reef_strf("%lld", (long long)n.i);
    case DCB_NUMBER_FLOAT:
      if (n.f > -9e18 && n.f < 9e18 && n.f == (double)(int64_t)n.f) {
        return reef_strf("%lld", (long long)n.f);
      }
      return float_text(n.f);
    case DCB_NUMBER_NONE:
      break;
  }
  reef_str undefined = REEF_STR("undefined");
  return undefined;
}

/* ---- Command input ---------------------------------------------------------------------- */

/* The encoding of {}. */
static reef_cbor dcb_empty_record(void) {
  static const uint8_t kEmpty[1] = {0xa0};
  reef_cbor empty = {kEmpty, 1};
  return empty;
}

dcb_input dcb_input_of(reef_cbor input) {
  dcb_input in = {input, {"", 0}};
  if (reef_peek(&input) != REEF_KIND_RECORD) {
    in.error = reef_strf("the command input must be a JSON object, not %s",
                         reef_kind_name(reef_peek(&input)));
  }
  return in;
}

/* The cursor at field `key` of the input, or an empty cursor (and the error, if it is the
 * first) when the input has no such field or an earlier problem. */
static reef_cbor input_field(dcb_input* in, const char* key, const char* what) {
  reef_cbor value = {NULL, 0};
  if (in->error.len > 0) return value;
  if (reef_field(in->record, key, &value) != REEF_OK) {
    in->error = reef_strf("the command input needs %s field '%s'", what, key);
  }
  return value;
}

/* Records that field `key` has the wrong kind, unless an earlier problem was found. */
static void field_error(dcb_input* in, const char* key, const char* what) {
  if (in->error.len == 0)
    in->error = reef_strf("the command input field '%s' must be %s", key, what);
}

reef_str dcb_input_text(dcb_input* in, const char* key) {
  reef_cbor value = input_field(in, key, "a text");
  reef_str text = {"", 0};
  if (reef_at_end(&value)) return text;
  if (reef_read_text(&value, &text) != REEF_OK) {
    field_error(in, key, "text");
  } else if (text.len > DCB_MAX_TEXT) {
    field_error(in, key, "text of at most 512 bytes");
    text.len = 0;
  }
  return text;
}

dcb_number dcb_input_number(dcb_input* in, const char* key, reef_cbor* item) {
  reef_cbor value = input_field(in, key, "a number");
  dcb_number n = dcb_read_number(value);
  if (!reef_at_end(&value) && n.kind == DCB_NUMBER_NONE) field_error(in, key, "a number");
  if (item != NULL) {
    if (n.kind == DCB_NUMBER_NONE || reef_skip(&value, item) != REEF_OK) *item = reef_value_null();
  }
  return n;
}

reef_cbor dcb_input_record(dcb_input* in, const char* key) {
  reef_cbor value = input_field(in, key, "an object");
  reef_cbor item;
  if (reef_at_end(&value)) return dcb_empty_record();
  if (reef_peek(&value) != REEF_KIND_RECORD || reef_skip(&value, &item) != REEF_OK) {
    field_error(in, key, "an object");
    return dcb_empty_record();
  }
  return item;
}

reef_cbor dcb_reject_input(const dcb_input* in) {
  return reef_reject("%.*s", (int)in->error.len, in->error.ptr);
}

reef_str dcb_tag(const char* prefix, reef_str value) {
  uint32_t prefix_len = cstr_len(prefix);
  char* tag = (char*)reef_arena_alloc(prefix_len + value.len);
  if (tag == NULL) reef_fail("dcb: out of memory");
  __builtin_memcpy(tag, prefix, prefix_len);
  __builtin_memcpy(tag + prefix_len, value.ptr, value.len);
  reef_str s = {tag, prefix_len + value.len};
  return s;
}

/* ---- Event data ------------------------------------------------------------------------- */

dcb_number dcb_data_number(const reef_event* event, const char* key) {
  reef_cbor value = {NULL, 0};
  reef_field(event->data, key, &value); /* leaves value empty when absent */
  return dcb_read_number(value);
}

bool dcb_data_text_is(const reef_event* event, const char* key, reef_str value) {
  reef_str text;
  if (reef_field_text(event->data, key, &text) != REEF_OK) return false;
  return text.len == value.len && __builtin_memcmp(text.ptr, value.ptr, text.len) == 0;
}

int64_t dcb_days_ago(const reef_event* event, int64_t now_ms) {
  return (now_ms - event->timestamp_ms) / 86400000;
}

/* ---- Decision models -------------------------------------------------------------------- */

reef_cbor dcb_apply_true(reef_cbor state, const reef_event* event, const dcb_model* model) {
  (void)state;
  (void)event;
  (void)model;
  return reef_value_bool(true);
}

reef_cbor dcb_apply_false(reef_cbor state, const reef_event* event, const dcb_model* model) {
  (void)state;
  (void)event;
  (void)model;
  return reef_value_bool(false);
}

reef_cbor dcb_apply_increment(reef_cbor state, const reef_event* event, const dcb_model* model) {
  (void)event;
  (void)model;
  return dcb_number_value(dcb_number_add(dcb_read_number(state), 1));
}

static void check_count(uint32_t count) {
  if (count > DCB_MAX_MODELS) reef_failf("dcb: more than %d decision models", DCB_MAX_MODELS);
}

reef_cbor dcb_init(const dcb_input* in, const dcb_model models[], uint32_t count,
                   reef_writer* query) {
  if (in->error.len > 0) return reef_value_null();
  check_count(count);
  reef_write_query(query, count);
  for (uint32_t m = 0; m < count; m++) {
    reef_str types[DCB_MAX_HANDLERS];
    uint32_t type_count = models[m].handler_count;
    if (type_count > DCB_MAX_HANDLERS) reef_failf("dcb: %s has too many handlers", models[m].name);
    for (uint32_t h = 0; h < type_count; h++) {
      types[h].ptr = models[m].handlers[h].type;
      types[h].len = cstr_len(models[m].handlers[h].type);
    }
    reef_write_query_item(query, type_count, types, models[m].tag_count, models[m].tags);
  }
  reef_writer state = reef_writer_new();
  reef_write_record(&state, count);
  for (uint32_t m = 0; m < count; m++) {
    reef_write_cstr(&state, models[m].name);
    reef_write_cbor(&state, models[m].initial);
  }
  return reef_writer_finish(&state);
}

/* The handler of `model` for `event`, or NULL when the model does not see the event. */
static const dcb_handler* handler_for(const dcb_model* model, const reef_event* event) {
  for (uint32_t t = 0; t < model->tag_count; t++) {
    if (!reef_event_has_tag(event, model->tags[t])) return NULL;
  }
  for (uint32_t h = 0; h < model->handler_count; h++) {
    if (reef_str_eq(event->type, model->handlers[h].type)) return &model->handlers[h];
  }
  return NULL;
}

/* The state of each model (one pass over the state record); fails when one is missing. */
static void read_states(reef_cbor state, const dcb_model models[], uint32_t count,
                        reef_cbor values[]) {
  reef_str keys[DCB_MAX_MODELS];
  for (uint32_t m = 0; m < count; m++) {
    keys[m].ptr = models[m].name;
    keys[m].len = cstr_len(models[m].name);
  }
  if (reef_fields(state, count, keys, values) != REEF_OK) {
    reef_fail("dcb: the state record lacks a decision model");
  }
  for (uint32_t m = 0; m < count; m++) {
    reef_cbor item;
    if (reef_skip(&values[m], &item) != REEF_OK) reef_fail("dcb: malformed state");
    values[m] = item;
  }
}

reef_cbor dcb_fold(reef_cbor state, const dcb_model models[], uint32_t count,
                   const reef_event* event) {
  check_count(count);
  const dcb_handler* handlers[DCB_MAX_MODELS];
  bool any = false;
  for (uint32_t m = 0; m < count; m++) {
    handlers[m] = handler_for(&models[m], event);
    any = any || handlers[m] != NULL;
  }
  if (!any) return state;
  reef_cbor values[DCB_MAX_MODELS];
  read_states(state, models, count, values);
  reef_writer next = reef_writer_new();
  reef_write_record(&next, count);
  for (uint32_t m = 0; m < count; m++) {
    reef_write_cstr(&next, models[m].name);
    reef_write_cbor(
        &next, handlers[m] != NULL ? handlers[m]->apply(values[m], event, &models[m]) : values[m]);
  }
  return reef_writer_finish(&next);
}

bool dcb_state_bool(reef_cbor state, const char* name) {
  bool value = false;
  reef_field_bool(state, name, &value);
  return value;
}

dcb_number dcb_state_number(reef_cbor state, const char* name) {
  reef_cbor value = {NULL, 0};
  reef_field(state, name, &value);
  return dcb_read_number(value);
}
