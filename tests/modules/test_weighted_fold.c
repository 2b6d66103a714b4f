/* Test command (tests/unit/apps): a fold that reads the env. Input {"tag": str}. Folds the
 * events tagged `tag`, adding env WEIGHT (a decimal number, default 1) per event, then rejects
 * with "wsum=N" (it appends nothing). Declares that its fold ignores the input. */
#include "reef.h"

static reef_cbor sum(int64_t wsum) {
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 1);
  reef_write_cstr(&w, "wsum");
  reef_write_int(&w, wsum);
  return reef_writer_finish(&w);
}

static reef_cbor init(reef_cbor input, reef_writer* query) {
  reef_str tag;
  if (reef_field_text(input, "tag", &tag) != REEF_OK) reef_fail("input needs a string \"tag\"");
  reef_write_query(query, 1);
  reef_write_query_item(query, 0, NULL, 1, &tag);
  return sum(0);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  (void)input;
  (void)event;
  int64_t wsum = 0, weight = 0;
  reef_field_int(state, "wsum", &wsum);
  reef_str text;
  if (reef_env("WEIGHT", &text) == REEF_OK) {
    for (uint32_t i = 0; i < text.len && text.ptr[i] >= '0' && text.ptr[i] <= '9'; ++i) {
      weight = weight * 10 + (text.ptr[i] - '0');
    }
  } else {
    weight = 1;
  }
  return sum(wsum + weight);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  (void)input;
  int64_t wsum = 0;
  reef_field_int(state, "wsum", &wsum);
  return reef_reject("wsum=%lld", (long long)wsum);
}

REEF_COMMAND(init, fold, decide);
REEF_FOLD_IGNORES_INPUT;
