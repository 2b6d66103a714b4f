/* Projector balances: the read model of the bank example, one row per account in the
 * projector's own database (projectors/balances.sqlite):
 *   accounts(account_id TEXT PRIMARY KEY, owner TEXT, balance INTEGER)
 * owner is NULL once the account's key is shredded (the event's data reads as null then) —
 * after a replay, or for events projected after the shred.
 * Read it with POST /projectors/balances/query {"sql": "SELECT * FROM accounts"}. */
#include "reef.h"

static const reef_str kTypes[] = {REEF_STR("AccountOpened"), REEF_STR("MoneyDeposited"),
                                  REEF_STR("MoneyWithdrawn")};

/* Runs once when the projector starts, with its database open: creates the table. */
static void query(reef_writer* w) {
  reef_sql_exec(
      "CREATE TABLE IF NOT EXISTS accounts (account_id TEXT PRIMARY KEY, owner TEXT, "
      "balance INTEGER NOT NULL DEFAULT 0)",
      (reef_cbor){NULL, 0});
  reef_write_query(w, 1);
  reef_write_query_item(w, 3, kTypes, 0, NULL);
}

/* The account's balance in the read model; 0 for an account without a row. */
static int64_t current_balance(reef_str account_id) {
  reef_writer params = reef_writer_new();
  reef_write_list(&params, 1);
  reef_write_str(&params, account_id);
  reef_cbor rows = reef_sql_query("SELECT balance FROM accounts WHERE account_id = ?1",
                                  reef_writer_finish(&params));
  uint32_t count;
  if (reef_read_list(&rows, &count) != REEF_OK) reef_fail("balances: malformed rows");
  int64_t balance = 0;
  if (count == 1 && reef_field_int(rows, "balance", &balance) != REEF_OK) {
    reef_fail("balances: a stored balance is not an integer");
  }
  return balance;
}

static int project(const reef_event* event) {
  reef_str account_id;
  if (reef_field_text(event->data, "account_id", &account_id) != REEF_OK) {
    /* Shredded AccountOpened: the account id is still in the tag "account:<id>". */
    reef_cbor tags = event->tags;
    uint32_t n;
    reef_str tag;
    if (reef_read_list(&tags, &n) != REEF_OK || n == 0 || reef_read_text(&tags, &tag) != REEF_OK ||
        tag.len <= 8) {
      reef_fail("balances: event without an account id");
    }
    account_id.ptr = tag.ptr + 8;
    account_id.len = tag.len - 8;
  }
  reef_writer params = reef_writer_new();
  if (reef_str_eq(event->type, "AccountOpened")) {
    reef_str owner;
    bool has_owner = reef_field_text(event->data, "owner", &owner) == REEF_OK;
    reef_write_list(&params, 2);
    reef_write_str(&params, account_id);
    if (has_owner) {
      reef_write_str(&params, owner);
    } else {
      reef_write_null(&params);
    }
    reef_sql_exec(
        "INSERT INTO accounts (account_id, owner) VALUES (?1, ?2) "
        "ON CONFLICT (account_id) DO UPDATE SET owner = ?2",
        reef_writer_finish(&params));
    return REEF_OK;
  }
  int64_t amount;
  if (reef_field_int(event->data, "amount", &amount) != REEF_OK) {
    reef_fail("balances: money event without an integer amount");
  }
  /* The new balance in checked arithmetic: SQLite would turn an overflowing integer sum into
   * a float, so the sum is done here and an overflow stops the projector, naming the event. */
  int64_t balance = current_balance(account_id);
  bool overflow = reef_str_eq(event->type, "MoneyWithdrawn")
                      ? __builtin_sub_overflow(balance, amount, &balance)
                      : __builtin_add_overflow(balance, amount, &balance);
  if (overflow) {
    reef_failf("balances: event %lld (%.*s of %lld) overflows the balance of account %.*s",
               (long long)event->position, (int)event->type.len, event->type.ptr, (long long)amount,
               (int)account_id.len, account_id.ptr);
  }
  reef_write_list(&params, 2);
  reef_write_str(&params, account_id);
  reef_write_int(&params, balance);
  reef_sql_exec(
      "INSERT INTO accounts (account_id, balance) VALUES (?1, ?2) "
      "ON CONFLICT (account_id) DO UPDATE SET balance = ?2",
      reef_writer_finish(&params));
  return REEF_OK;
}

REEF_PROJECTOR(query, project);
