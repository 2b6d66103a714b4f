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

/* A float in [1e-6, 1e15) in magnitude: its value rounded to FLOAT_DIGITS significant digits,
 * as an integer `scaled` with `fraction` digits after the decimal point; then printed with
 * the trailing zeros (and a bare point) dropped. */
static reef_str float_text(double f) {
  double magnitude = f < 0 ? -f : f;
  if (!(magnitude >= 1e-6 && magnitude < 1e15)) {
    reef_fail("dcb: a float outside [1e-6, 1e15) has no fixed-point JavaScript text");
  }
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

/* The cursor at field `key` of the input, or fails saying it must be `what`. */
static reef_cbor input_field(reef_cbor input, const char* key, const char* what) {
  reef_cbor value;
  if (reef_field(input, key, &value) != REEF_OK) {
    reef_failf("the command input needs %s field '%s'", what, key);
  }
  return value;
}

reef_str dcb_input_text(reef_cbor input, const char* key) {
  reef_cbor value = input_field(input, key, "a text");
  reef_str text;
  if (reef_read_text(&value, &text) != REEF_OK) {
    reef_failf("the command input field '%s' must be text", key);
  }
  return text;
}

dcb_number dcb_input_number(reef_cbor input, const char* key, reef_cbor* item) {
  reef_cbor value = input_field(input, key, "a number");
  dcb_number n = dcb_read_number(value);
  if (n.kind == DCB_NUMBER_NONE) reef_failf("the command input field '%s' must be a number", key);
  if (item != NULL && reef_skip(&value, item) != REEF_OK) {
    reef_failf("the command input field '%s' is malformed", key);
  }
  return n;
}

reef_cbor dcb_input_record(reef_cbor input, const char* key) {
  reef_cbor value = input_field(input, key, "an object");
  reef_cbor item;
  if (reef_peek(&value) != REEF_KIND_RECORD || reef_skip(&value, &item) != REEF_OK) {
    reef_failf("the command input field '%s' must be an object", key);
  }
  return item;
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

reef_cbor dcb_init(const dcb_model models[], uint32_t count, reef_writer* query) {
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
