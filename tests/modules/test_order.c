/* Test command place-order (tests/integration/examples_test.cc): idempotency by tag, the way the
 * issue's testers wrote it from the docs. Input {"token": str}. Reads the events tagged
 * "order:<token>" (the tag built with reef_strf); rejects "order <token> was already placed"
 * when there is one, else appends OrderPlaced {"token"} with that tag. */
#include "reef.h"

static reef_str order_tag(reef_cbor input) {
  reef_str token;
  if (reef_field_text(input, "token", &token) != REEF_OK)
    reef_fail("input needs a string \"token\"");
  return reef_strf("order:%.*s", (int)token.len, token.ptr);
}

static reef_cbor init(reef_cbor input, reef_writer* query) {
  reef_str tag = order_tag(input);
  reef_write_query(query, 1);
  reef_write_query_item(query, 0, NULL, 1, &tag);
  return reef_value_bool(false);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  (void)state;
  (void)input;
  (void)event;
  return reef_value_bool(true);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  bool placed = false;
  reef_read_bool(&state, &placed);
  reef_str tag = order_tag(input);
  if (placed) return reef_reject("order %.*s was already placed", (int)tag.len - 6, tag.ptr + 6);
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 1);
  reef_write_cstr(&data, "token");
  reef_write_text(&data, tag.ptr + 6, tag.len - 6);
  return reef_accept("OrderPlaced", 1, &tag, reef_writer_finish(&data));
}

REEF_COMMAND(init, fold, decide);
