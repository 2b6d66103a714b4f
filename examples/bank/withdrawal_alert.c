/* Effect withdrawal-alert: for every MoneyWithdrawn of at least LARGE_AMOUNT (env var,
 * default 1000) it logs a warning and appends LargeWithdrawalNoticed {"account_id", "amount",
 * "withdrawal_position"} tagged "account:<id>" and "alert" — standing in for a notification
 * (an e-mail, a webhook) that a real deployment would send. Events of one account are handled
 * in order (partition key = the account id); at-least-once, so a notification may repeat
 * after a crash. */
#include "reef.h"

static const reef_str kTypes[] = {REEF_STR("MoneyWithdrawn")};

static void query(reef_writer* w) {
  reef_write_query(w, 1);
  reef_write_query_item(w, 1, kTypes, 0, NULL);
}

static reef_str partition_key(const reef_event* event) {
  reef_str account_id = {NULL, 0};
  reef_field_text(event->data, "account_id", &account_id);
  return account_id;
}

/* LARGE_AMOUNT, a whole number below 2^63; a bad value fails the attempt, naming
 * it (the effect retries, so fixing the variable heals it). */
static int64_t large_amount(void) {
  reef_str text;
  if (reef_env("LARGE_AMOUNT", &text) != REEF_OK) return 1000;
  int64_t value = 0;
  bool valid = text.len > 0;
  for (uint32_t i = 0; i < text.len && valid; i++) {
    int digit = text.ptr[i] - '0';
    /* value * 10 + digit <= INT64_MAX, checked without a 128-bit multiply (no libc here) */
    valid = digit >= 0 && digit <= 9 && value <= (INT64_MAX - digit) / 10;
    if (valid) value = value * 10 + digit;
  }
  if (!valid) {
    reef_failf("LARGE_AMOUNT must be a whole number below 2^63, not \"%.*s\"", (int)text.len,
               text.ptr);
  }
  return value;
}

static int handle(const reef_event* event) {
  reef_str account_id;
  int64_t amount;
  if (reef_field_text(event->data, "account_id", &account_id) != REEF_OK ||
      reef_field_int(event->data, "amount", &amount) != REEF_OK) {
    return REEF_OK; /* not ours to judge: nothing to notify */
  }
  if (amount < large_amount()) return REEF_OK;
  reef_logf(REEF_WARN, "large withdrawal: %lld from account %.*s", (long long)amount,
            (int)account_id.len, account_id.ptr);
  reef_str tags[2] = {reef_strf("account:%.*s", (int)account_id.len, account_id.ptr),
                      REEF_STR("alert")};
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 3);
  reef_write_cstr(&data, "account_id");
  reef_write_str(&data, account_id);
  reef_write_cstr(&data, "amount");
  reef_write_int(&data, amount);
  reef_write_cstr(&data, "withdrawal_position");
  reef_write_int(&data, event->position);
  reef_writer events = reef_writer_new();
  reef_write_list(&events, 1);
  reef_write_new_event(&events, "LargeWithdrawalNoticed", 2, tags, reef_writer_finish(&data), NULL);
  reef_append(reef_writer_finish(&events));
  return REEF_OK;
}

REEF_EFFECT(query, partition_key, handle);
