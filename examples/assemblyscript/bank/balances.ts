// Projector balances: the read model of the bank example, one row per account in the
// projector's own database:
//   accounts(account_id TEXT PRIMARY KEY, owner TEXT, balance INTEGER)
// owner is NULL once the account's key is shredded (the event's data reads as null then).
// Read it with POST /projectors/<name>/query {"sql": "SELECT * FROM accounts"}. The same
// projector as examples/bank/balances.c.
import { Value, Event, Query, projector, sqlExec, sqlQuery } from "../../../sdk/assemblyscript/assembly";
import { addOverflows, subOverflows } from "./bank";
export * from "../../../sdk/assemblyscript/assembly/exports/projector";

const TYPES = ["AccountOpened", "MoneyDeposited", "MoneyWithdrawn"];

/** Runs once when the projector starts, with its database open: creates the table. */
function query(): Query {
  sqlExec("CREATE TABLE IF NOT EXISTS accounts (account_id TEXT PRIMARY KEY, owner TEXT, " +
    "balance INTEGER NOT NULL DEFAULT 0)");
  return Query.types(TYPES);
}

/** The account's balance in the read model; 0 for an account without a row. */
function currentBalance(accountId: string): i64 {
  const rows = sqlQuery("SELECT balance FROM accounts WHERE account_id = ?1", [Value.str(accountId)]);
  if (rows.length != 1) return 0;
  const balance = rows[0].field("balance");
  if (balance == null || !balance.isInt()) throw new Error("balances: a stored balance is not an integer");
  return balance.asInt();
}

/** The event's account id: from its data, or (a shredded AccountOpened reads as null) from
 * its first tag, "account:<id>". */
function accountIdOf(event: Event): string {
  const id = event.data.field("account_id");
  if (id != null && id.isString()) return id.asString();
  if (event.tags.length == 0 || String.UTF8.byteLength(event.tags[0]) <= 8) {
    throw new Error("balances: event without an account id");
  }
  return event.tags[0].substring(8);
}

function project(event: Event): void {
  const accountId = accountIdOf(event);
  if (event.type == "AccountOpened") {
    const owner = event.data.field("owner");
    sqlExec("INSERT INTO accounts (account_id, owner) VALUES (?1, ?2) " +
      "ON CONFLICT (account_id) DO UPDATE SET owner = ?2",
      [Value.str(accountId), owner != null && owner.isString() ? owner : Value.null()]);
    return;
  }
  const a = event.data.field("amount");
  if (a == null || !a.isInt()) throw new Error("balances: money event without an integer amount");
  const amount = a.asInt();
  // The new balance in checked arithmetic: SQLite would turn an overflowing integer sum into a
  // float, so the sum is done here and an overflow stops the projector, naming the event.
  const balance = currentBalance(accountId);
  const withdrawn = event.type == "MoneyWithdrawn";
  const next = withdrawn ? balance - amount : balance + amount;
  if (withdrawn ? subOverflows(balance, amount, next) : addOverflows(balance, amount, next)) {
    throw new Error(`balances: event ${event.position} (${event.type} of ${amount}) overflows the balance of account ${accountId}`);
  }
  sqlExec("INSERT INTO accounts (account_id, balance) VALUES (?1, ?2) " +
    "ON CONFLICT (account_id) DO UPDATE SET balance = ?2",
    [Value.str(accountId), Value.int(next)]);
}

projector(query, project);
