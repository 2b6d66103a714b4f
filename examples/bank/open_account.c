/* Command open-account {"account_id": str, "owner": str}: appends AccountOpened unless the
 * account exists. The owner's name is personal data: it is stored encrypted under the scope
 * "account:<id>", so DELETE /crypto-keys/account:<id> erases it (crypto-shredding). */
#include "bank.h"

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  bool open;
  int64_t balance;
  bank_read_state(state, &open, &balance);
  bank_input in = bank_read_input(input, 0);
  if (in.error != NULL) return reef_reject("%s", in.error);
  if (open)
    return reef_reject("account %.*s already exists", (int)in.account_id.len, in.account_id.ptr);
  if (in.owner.len == 0) return reef_reject("input needs a non-empty string \"owner\"");
  reef_str tag = reef_strf("account:%.*s", (int)in.account_id.len, in.account_id.ptr);
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 2);
  reef_write_cstr(&data, "account_id");
  reef_write_str(&data, in.account_id);
  reef_write_cstr(&data, "owner");
  reef_write_str(&data, in.owner);
  reef_writer w = reef_writer_new();
  reef_write_decision(&w, 1);
  /* The scope is the tag's text (reef_strf's texts are NUL-terminated). */
  reef_write_new_event(&w, "AccountOpened", 1, &tag, reef_writer_finish(&data), tag.ptr);
  return reef_writer_finish(&w);
}

REEF_COMMAND(bank_init, bank_fold, decide);
REEF_FOLD_IGNORES_INPUT; /* bank_fold reads only the state and the event */
