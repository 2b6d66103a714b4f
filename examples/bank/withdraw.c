/* Command withdraw {"account_id": str, "amount": int, 1..10^12}: appends MoneyWithdrawn when the
 * balance covers it. Two concurrent withdrawals of the same account see each other: the host
 * runs executions with the same query in turn, and the DCB condition catches any other writer
 * (the execution is then retried on the new balance). */
#include "bank.h"

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  bool open;
  int64_t balance;
  bank_read_state(state, &open, &balance);
  bank_input in = bank_read_input(input, 1);
  if (in.error != NULL) return reef_reject("%s", in.error);
  if (!open)
    return reef_reject("account %.*s does not exist", (int)in.account_id.len, in.account_id.ptr);
  if (balance < in.amount) {
    return reef_reject("insufficient funds: balance %lld, withdrawal %lld", (long long)balance,
                       (long long)in.amount);
  }
  return bank_money_event("MoneyWithdrawn", in.account_id, in.amount);
}

REEF_COMMAND(bank_init, bank_fold, decide);
REEF_FOLD_IGNORES_INPUT; /* bank_fold reads only the state and the event */
