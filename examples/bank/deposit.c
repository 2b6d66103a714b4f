/* Command deposit {"account_id": str, "amount": int, 1..10^12}: appends MoneyDeposited to an
 * open account, unless the new balance would not fit an int64 (rejected, HTTP 422). */
#include "bank.h"

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  bool open;
  int64_t balance;
  bank_read_state(state, &open, &balance);
  bank_input in = bank_read_input(input, 1);
  if (in.error != NULL) return reef_reject("%s", in.error);
  if (!open)
    return reef_reject("account %.*s does not exist", (int)in.account_id.len, in.account_id.ptr);
  int64_t after;
  if (__builtin_add_overflow(balance, in.amount, &after)) {
    return reef_reject("deposit of %lld would overflow the balance %lld of account %.*s",
                       (long long)in.amount, (long long)balance, (int)in.account_id.len,
                       in.account_id.ptr);
  }
  return bank_money_event("MoneyDeposited", in.account_id, in.amount);
}

REEF_COMMAND(bank_init, bank_fold, decide);
REEF_FOLD_IGNORES_INPUT; /* bank_fold reads only the state and the event */
