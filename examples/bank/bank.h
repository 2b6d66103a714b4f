/* The bank example (README's tour): three commands, a projector and an effect over one event
 * model. Every event carries the tag "account:<id>".
 *
 *   AccountOpened    {"account_id": str, "owner": str}   owner encrypted, scope "account:<id>"
 *   MoneyDeposited   {"account_id": str, "amount": int}
 *   MoneyWithdrawn   {"account_id": str, "amount": int}
 *
 * This header holds what the three command modules share: reading and checking the input and
 * folding an account's events into its state {"open": bool, "balance": int}.
 *
 * Examples are what users copy, so these check everything that comes from outside: the input
 * is validated (a bad one is rejected with the reason, HTTP 422, never a module failure), and
 * every sum is checked arithmetic (__builtin_add_overflow), so no balance can wrap around. */
#ifndef BANK_H
#define BANK_H

#include "reef.h"

/* Largest amount one deposit or withdrawal may move: 10^12 (cents, say). */
#define BANK_MAX_AMOUNT 1000000000000LL
/* Longest account id, in bytes: its tag "account:<id>" is also the owner's encryption scope,
 * which the host limits to 256 bytes (docs/abi.md). */
#define BANK_MAX_ACCOUNT_ID 248u

typedef struct bank_input {
  reef_str account_id;
  int64_t amount;    /* 0 when the input has none */
  reef_str owner;    /* empty when the input has none */
  const char* error; /* NULL, or why the input is unusable (decide rejects with it) */
} bank_input;

/* True when `id` has a control character (bytes 0-31 and 127). A NUL would end the text where
 * reef_strf's "%.*s" formats the tag, so "a\u0000x" would act on account "a". */
static inline bool bank_has_control(reef_str id) {
  for (uint32_t i = 0; i < id.len; ++i) {
    unsigned char c = (unsigned char)id.ptr[i];
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

/* Reads {"account_id": str, "amount"?: int, "owner"?: str}. A bad input is not a module failure
 * but the caller's mistake: `error` says what is wrong and decide rejects with it (HTTP 422). */
static inline bank_input bank_read_input(reef_cbor input, int need_amount) {
  bank_input in = {{"", 0}, 0, {"", 0}, NULL};
  if (reef_peek(&input) != REEF_KIND_RECORD) {
    in.error = "input must be a JSON object with a string \"account_id\"";
  } else if (reef_field_text(input, "account_id", &in.account_id) != REEF_OK ||
             in.account_id.len == 0 || in.account_id.len > BANK_MAX_ACCOUNT_ID ||
             bank_has_control(in.account_id)) {
    in.error = "input needs a string \"account_id\" of 1 to 248 bytes without control characters";
  } else if (need_amount && (reef_field_int(input, "amount", &in.amount) != REEF_OK ||
                             in.amount <= 0 || in.amount > BANK_MAX_AMOUNT)) {
    in.error = "input needs an integer \"amount\" from 1 to 1000000000000";
  } else if (reef_field_text(input, "owner", &in.owner) == REEF_E_TYPE) {
    in.error = "input field \"owner\" must be a string";
  }
  return in;
}

/* The query of one account: every event tagged with it. */
static inline void bank_account_query(reef_writer* query, reef_str account_id) {
  reef_str tag = reef_strf("account:%.*s", (int)account_id.len, account_id.ptr);
  reef_write_query(query, 1);
  reef_write_query_item(query, 0, 0, 1, &tag);
}

/* The state {"open": bool, "balance": int}. */
static inline reef_cbor bank_state(bool open, int64_t balance) {
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 2);
  reef_write_cstr(&w, "open");
  reef_write_bool(&w, open);
  reef_write_cstr(&w, "balance");
  reef_write_int(&w, balance);
  return reef_writer_finish(&w);
}

static inline void bank_read_state(reef_cbor state, bool* open, int64_t* balance) {
  if (reef_field_bool(state, "open", open) != REEF_OK ||
      reef_field_int(state, "balance", balance) != REEF_OK) {
    reef_fail("bank: malformed state");
  }
}

/* Reads nothing (and decide rejects) when the input has no account id. */
static inline reef_cbor bank_init(reef_cbor input, reef_writer* query) {
  bank_input in = bank_read_input(input, 0);
  if (in.error == NULL) bank_account_query(query, in.account_id);
  return bank_state(false, 0);
}

/* Folds one event. The events were checked when they were appended by these commands, but
 * anyone may append to the store: an amount that would overflow the balance fails the
 * execution loudly (HTTP 500) instead of wrapping around. */
static inline reef_cbor bank_fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  (void)input;
  bool open;
  int64_t balance;
  bank_read_state(state, &open, &balance);
  int64_t amount = 0;
  bool overflow = false;
  if (reef_str_eq(event->type, "AccountOpened")) {
    open = true;
  } else if (reef_str_eq(event->type, "MoneyDeposited")) {
    reef_field_int(event->data, "amount", &amount);
    overflow = __builtin_add_overflow(balance, amount, &balance);
  } else if (reef_str_eq(event->type, "MoneyWithdrawn")) {
    reef_field_int(event->data, "amount", &amount);
    overflow = __builtin_sub_overflow(balance, amount, &balance);
  }
  if (overflow) {
    reef_failf("bank: event %lld (%.*s of %lld) overflows the balance", (long long)event->position,
               (int)event->type.len, event->type.ptr, (long long)amount);
  }
  return bank_state(open, balance);
}

/* One event {"account_id": id, "amount": amount} of `type`, tagged with the account. */
static inline reef_cbor bank_money_event(const char* type, reef_str account_id, int64_t amount) {
  reef_str tag = reef_strf("account:%.*s", (int)account_id.len, account_id.ptr);
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 2);
  reef_write_cstr(&data, "account_id");
  reef_write_str(&data, account_id);
  reef_write_cstr(&data, "amount");
  reef_write_int(&data, amount);
  return reef_accept(type, 1, &tag, reef_writer_finish(&data));
}

#endif /* BANK_H */
