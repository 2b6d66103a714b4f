/* Test command (tests/unit/apps). Input {"tag": str, "expect": int?, "secret": str?,
 * "scope": str?}. Reads the events tagged `tag`, counts them (and keeps the last "secret" it
 * saw), then appends Counted {"count", "now", "random", "last_secret", "secret"?} tagged `tag`
 * — encrypted under `scope` when given — or rejects with "expected E events, found C" when
 * `expect` is given and differs. With "fail_with": str it fails at once with that reason. */
#include "reef.h"

static reef_cbor init(reef_cbor input, reef_writer* query) {
  reef_str tag;
  reef_str reason;
  if (reef_field_text(input, "fail_with", &reason) == REEF_OK) reef_fail_n(reason.ptr, reason.len);
  if (reef_field_text(input, "tag", &tag) != REEF_OK) reef_fail("input needs a string \"tag\"");
  reef_write_query(query, 1);
  reef_write_query_item(query, 0, NULL, 1, &tag);
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 2);
  reef_write_cstr(&w, "count");
  reef_write_int(&w, 0);
  reef_write_cstr(&w, "last_secret");
  reef_write_null(&w);
  return reef_writer_finish(&w);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  (void)input;
  int64_t count = 0;
  reef_field_int(state, "count", &count);
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 2);
  reef_write_cstr(&w, "count");
  reef_write_int(&w, count + 1);
  reef_write_cstr(&w, "last_secret");
  reef_cbor secret;
  if (reef_field(event->data, "secret", &secret) == REEF_OK) {
    reef_cbor item;
    reef_skip(&secret, &item);
    reef_write_cbor(&w, item);
  } else {
    reef_write_null(&w);
  }
  return reef_writer_finish(&w);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  int64_t count = 0, expect = -1;
  reef_field_int(state, "count", &count);
  reef_field_int(input, "expect", &expect);
  if (expect >= 0 && expect != count) {
    return reef_reject("expected %lld events, found %lld", (long long)expect, (long long)count);
  }
  reef_str tag, secret, scope;
  reef_field_text(input, "tag", &tag);
  bool has_secret = reef_field_text(input, "secret", &secret) == REEF_OK;
  bool has_scope = reef_field_text(input, "scope", &scope) == REEF_OK;
  int64_t random = 0;
  reef_random(&random, sizeof random);
  reef_cbor last_secret;
  reef_field(state, "last_secret", &last_secret);
  reef_cbor last_item;
  reef_skip(&last_secret, &last_item);
  reef_writer data = reef_writer_new();
  reef_write_record(&data, has_secret ? 5 : 4);
  reef_write_cstr(&data, "count");
  reef_write_int(&data, count);
  reef_write_cstr(&data, "now");
  reef_write_int(&data, reef_now_ms());
  reef_write_cstr(&data, "random");
  reef_write_int(&data, random);
  reef_write_cstr(&data, "last_secret");
  reef_write_cbor(&data, last_item);
  if (has_secret) {
    reef_write_cstr(&data, "secret");
    reef_write_str(&data, secret);
  }
  char* scope_z = NULL;
  if (has_scope) {
    scope_z = (char*)reef_arena_alloc(scope.len + 1);
    __builtin_memcpy(scope_z, scope.ptr, scope.len);
    scope_z[scope.len] = '\0';
  }
  reef_writer w = reef_writer_new();
  reef_write_decision(&w, 1);
  reef_write_new_event(&w, "Counted", 1, &tag, reef_writer_finish(&data), scope_z);
  return reef_writer_finish(&w);
}

REEF_COMMAND(init, fold, decide);
REEF_FOLD_IGNORES_INPUT;
