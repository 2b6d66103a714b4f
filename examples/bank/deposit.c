/* Command deposit {"account_id": str, "amount": int > 0}: appends MoneyDeposited to an open
 * account. */
#include "bank.h"

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  bool open;
  int64_t balance;
  bank_read_state(state, &open, &balance);
  bank_input in = bank_read_input(input, 1);
  if (in.error != NULL) return reef_reject("%s", in.error);
  if (!open) return reef_reject("account %.*s does not exist", (int)in.account_id.len, in.account_id.ptr);
  return bank_money_event("MoneyDeposited", in.account_id, in.amount);
}

REEF_COMMAND(bank_init, bank_fold, decide);
