/* Reef C guest SDK: event-sourced modules (reef_module.h): event decoding, queries,
 * decisions, the host services and the export glue of REEF_COMMAND / REEF_PROJECTOR /
 * REEF_EFFECT. */
#include "reef_module.h"

#define REEF_IMPORT(name) __attribute__((import_module("reef"), import_name(name)))

REEF_IMPORT("now_ms") int64_t reef__import_now_ms(void);
REEF_IMPORT("random") int32_t reef__import_random(void* buf_ptr, uint32_t len);
REEF_IMPORT("env")
int32_t reef__import_env(const void* key_ptr, uint32_t key_len, void* out_ptr, uint32_t out_cap);
REEF_IMPORT("sql_exec")
int64_t reef__import_sql_exec(const void* sql_ptr, uint32_t sql_len, const void* params_ptr,
                              uint32_t params_len);
REEF_IMPORT("sql_query")
int32_t reef__import_sql_query(const void* sql_ptr, uint32_t sql_len, const void* params_ptr,
                               uint32_t params_len, void* out_ptr, uint32_t out_cap);
REEF_IMPORT("append") int64_t reef__import_append(const void* events_ptr, uint32_t events_len);

static uint32_t cstr_len(const char* z) {
  uint32_t n = 0;
  while (z[n] != '\0') n++;
  return n;
}

/* ---- Events ---------------------------------------------------------------------------- */

enum {
  EV_POSITION,
  EV_ID,
  EV_TYPE,
  EV_TAGS,
  EV_DATA,
  EV_TIMESTAMP,
  EV_CORRELATION,
  EV_CAUSATION,
  EV_METADATA,
  EV_FIELDS
};
static const reef_str kEventKeys[EV_FIELDS] = {
    REEF_STR("position"),       REEF_STR("id"),           REEF_STR("type"),
    REEF_STR("tags"),           REEF_STR("data"),         REEF_STR("timestamp_ms"),
    REEF_STR("correlation_id"), REEF_STR("causation_id"), REEF_STR("metadata")};
static const uint8_t kCborNull[1] = {0xf6};

int reef_event_read(reef_cbor* cursor, reef_event* out) {
  reef_cbor item;
  int rc = reef_skip(cursor, &item);
  if (rc != REEF_OK) return rc;
  reef_cbor f[EV_FIELDS];
  rc = reef_fields(item, EV_FIELDS, kEventKeys, f);
  if (rc != REEF_OK && rc != REEF_E_NOT_FOUND) return rc;
  reef_str empty = {"", 0};
  out->correlation_id = empty;
  out->causation_id = empty;
  if (reef_read_int(&f[EV_POSITION], &out->position) != REEF_OK ||
      reef_read_text(&f[EV_ID], &out->id) != REEF_OK ||
      reef_read_text(&f[EV_TYPE], &out->type) != REEF_OK ||
      reef_read_int(&f[EV_TIMESTAMP], &out->timestamp_ms) != REEF_OK) {
    return REEF_E_MALFORMED;
  }
  if (reef_skip(&f[EV_TAGS], &out->tags) != REEF_OK) return REEF_E_MALFORMED;
  if (reef_skip(&f[EV_DATA], &out->data) != REEF_OK) return REEF_E_MALFORMED;
  if (!reef_at_end(&f[EV_CORRELATION])) reef_read_text(&f[EV_CORRELATION], &out->correlation_id);
  if (!reef_at_end(&f[EV_CAUSATION])) reef_read_text(&f[EV_CAUSATION], &out->causation_id);
  out->metadata = (reef_cbor){kCborNull, sizeof kCborNull};
  if (!reef_at_end(&f[EV_METADATA]) && reef_skip(&f[EV_METADATA], &out->metadata) != REEF_OK) {
    return REEF_E_MALFORMED;
  }
  return REEF_OK;
}

bool reef_event_has_tag(const reef_event* event, reef_str tag) {
  reef_cbor c = event->tags;
  uint32_t count;
  if (reef_read_list(&c, &count) != REEF_OK) return false;
  for (uint32_t i = 0; i < count; i++) {
    reef_str t;
    if (reef_read_text(&c, &t) != REEF_OK) return false;
    if (t.len == tag.len && __builtin_memcmp(t.ptr, tag.ptr, t.len) == 0) return true;
  }
  return false;
}

/* reef__vstrf, failing the invocation when it cannot give the whole text. */
static reef_str vstrf(const char* what, const char* fmt, va_list args) {
  reef_str s;
  int rc = reef__vstrf(&s, fmt, args);
  if (rc == REEF_E_NOMEM) reef_failf("%s: out of memory for the text of \"%s\"", what, fmt);
  if (rc != REEF_OK) reef_failf("%s: %.*s", what, (int)s.len, s.ptr);
  return s;
}

reef_str reef_strf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  reef_str s = vstrf("reef_strf", fmt, args);
  va_end(args);
  return s;
}

/* ---- Queries --------------------------------------------------------------------------- */

void reef_write_query(reef_writer* w, uint32_t item_count) {
  reef_write_list(w, item_count);
}

static void write_str_list(reef_writer* w, uint32_t count, const reef_str items[]) {
  reef_write_list(w, count);
  for (uint32_t i = 0; i < count; i++) reef_write_str(w, items[i]);
}

void reef_write_query_item(reef_writer* w, uint32_t type_count, const reef_str types[],
                           uint32_t tag_count, const reef_str tags[]) {
  reef_write_record(w, (type_count > 0) + (tag_count > 0));
  if (type_count > 0) {
    reef_write_cstr(w, "types");
    write_str_list(w, type_count, types);
  }
  if (tag_count > 0) {
    reef_write_cstr(w, "tags");
    write_str_list(w, tag_count, tags);
  }
}

/* ---- Decisions ------------------------------------------------------------------------- */

void reef_write_decision(reef_writer* w, uint32_t event_count) {
  reef_write_record(w, 1);
  reef_write_cstr(w, "events");
  reef_write_list(w, event_count);
}

void reef_write_new_event(reef_writer* w, const char* type, uint32_t tag_count,
                          const reef_str tags[], reef_cbor data, const char* encryption_scope) {
  reef_write_record(w, encryption_scope != NULL ? 4 : 3);
  reef_write_cstr(w, "type");
  reef_write_cstr(w, type);
  reef_write_cstr(w, "tags");
  write_str_list(w, tag_count, tags);
  reef_write_cstr(w, "data");
  if (data.ptr == NULL || data.len == 0) {
    reef_write_null(w);
  } else {
    reef_write_cbor(w, data);
  }
  if (encryption_scope != NULL) {
    reef_write_cstr(w, "encryption_scope");
    reef_write_cstr(w, encryption_scope);
  }
}

reef_cbor reef_accept(const char* type, uint32_t tag_count, const reef_str tags[], reef_cbor data) {
  reef_writer w = reef_writer_new();
  reef_write_decision(&w, 1);
  reef_write_new_event(&w, type, tag_count, tags, data, NULL);
  return reef_writer_finish(&w);
}

reef_cbor reef_reject(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  reef_str message = vstrf("reef_reject", fmt, args);
  va_end(args);
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 1);
  reef_write_cstr(&w, "error");
  reef_write_str(&w, message);
  return reef_writer_finish(&w);
}

/* ---- Host services --------------------------------------------------------------------- */

int64_t reef_now_ms(void) {
  return reef__import_now_ms();
}

int reef_random(void* buf, uint32_t len) {
  return reef__import_random(buf, len) >= 0 ? REEF_OK : REEF_E_LIMIT;
}

int reef_env(const char* key, reef_str* out) {
  uint32_t key_len = cstr_len(key);
  uint32_t cap = 256;
  for (;;) {
    char* buf = (char*)reef_arena_alloc(cap);
    if (buf == NULL) return REEF_E_NOMEM;
    int32_t n = reef__import_env(key, key_len, buf, cap);
    if (n < 0) return REEF_E_NOT_FOUND;
    if ((uint32_t)n <= cap) {
      out->ptr = buf;
      out->len = (uint32_t)n;
      return REEF_OK;
    }
    cap = (uint32_t)n;
  }
}

/* The params span to pass: an empty list when the caller gave none. */
static reef_cbor params_or_empty(reef_cbor params) {
  static const uint8_t kEmptyList[1] = {0x80};
  if (params.ptr == NULL || params.len == 0) {
    reef_cbor empty = {kEmptyList, 1};
    return empty;
  }
  return params;
}

int64_t reef_sql_exec(const char* sql, reef_cbor params) {
  reef_cbor p = params_or_empty(params);
  return reef__import_sql_exec(sql, cstr_len(sql), p.ptr, p.len);
}

reef_cbor reef_sql_query(const char* sql, reef_cbor params) {
  reef_cbor p = params_or_empty(params);
  uint32_t sql_len = cstr_len(sql);
  uint32_t cap = 4096;
  for (;;) {
    uint8_t* buf = (uint8_t*)reef_arena_alloc(cap);
    if (buf == NULL) reef_fail("reef_sql_query: out of memory for the rows");
    int32_t n = reef__import_sql_query(sql, sql_len, p.ptr, p.len, buf, cap);
    if (n < 0) reef_fail("reef_sql_query: the host refused the call");
    if ((uint32_t)n <= cap) {
      reef_cbor rows = {buf, (uint32_t)n};
      return rows;
    }
    cap = (uint32_t)n;
  }
}

int64_t reef_append(reef_cbor events) {
  return reef__import_append(events.ptr, events.len);
}

/* ---- Export glue ----------------------------------------------------------------------- */

int64_t reef__command_init(reef_command_init_fn init, reef_cbor input) {
  reef_writer query = reef_writer_new();
  reef_cbor state = init(input, &query);
  if (state.ptr == NULL || state.len == 0) reef_fail("command init returned no state");
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 2);
  reef_write_cstr(&w, "query");
  if (query.len == 0) {
    reef_write_null(&w);
  } else {
    reef_cbor q = reef_writer_finish(&query);
    if (q.ptr == NULL) reef_fail("command init: writing the query failed");
    reef_write_cbor(&w, q);
  }
  reef_write_cstr(&w, "state");
  reef_write_cbor(&w, state);
  return reef__pack(reef_writer_finish(&w));
}

int64_t reef__command_fold(reef_command_fold_fn fold, reef_cbor state, reef_cbor input,
                           reef_cbor events) {
  uint32_t count;
  if (reef_read_list(&events, &count) != REEF_OK) reef_fail("command fold: events must be a list");
  for (uint32_t i = 0; i < count; i++) {
    reef_event event;
    if (reef_event_read(&events, &event) != REEF_OK) reef_fail("command fold: malformed event");
    state = fold(state, input, &event);
    if (state.ptr == NULL || state.len == 0) reef_fail("command fold returned no state");
  }
  return reef__pack(state);
}

int32_t reef__handle_event(int (*handler)(const reef_event*), reef_cbor event) {
  reef_event e;
  if (reef_event_read(&event, &e) != REEF_OK) reef_fail("malformed event from the host");
  return handler(&e);
}

int64_t reef__partition_key(reef_partition_key_fn key, reef_cbor event) {
  reef_event e;
  if (reef_event_read(&event, &e) != REEF_OK) reef_fail("malformed event from the host");
  reef_str k = key(&e);
  reef_writer w = reef_writer_new();
  if (k.ptr == NULL) {
    reef_write_null(&w);
  } else {
    reef_write_str(&w, k);
  }
  return reef__pack(reef_writer_finish(&w));
}

int64_t reef__query(reef_query_fn query) {
  reef_writer w = reef_writer_new();
  query(&w);
  reef_cbor q = reef_writer_finish(&w);
  if (q.ptr == NULL) reef_fail("query: nothing written (an empty query is reef_write_query(w, 0))");
  return reef__pack(q);
}
