// Effect withdrawal-alert: for every MoneyWithdrawn of at least LARGE_AMOUNT (env var, default
// 1000) it logs a warning and appends LargeWithdrawalNoticed {"account_id", "amount",
// "withdrawal_position"} tagged "account:<id>" and "alert", standing in for a notification (an
// e-mail, a webhook) that a real deployment would send. Events of one account are handled in
// order (partition key = the account id); at-least-once, so a notification may repeat after a
// crash. The same effect as examples/bank/withdrawal_alert.c.
import { Value, Event, Query, NewEvent, effect, env, append, log } from "../../../sdk/assemblyscript/assembly";
import { accountTag } from "./bank";
export * from "../../../sdk/assemblyscript/assembly/exports/effect";

function query(): Query {
  return Query.types(["MoneyWithdrawn"]);
}

function partitionKey(event: Event): string | null {
  const id = event.data.field("account_id");
  return id != null && id.isString() ? id.asString() : null;
}

/** LARGE_AMOUNT, a whole number below 2^63; a bad value fails the attempt, naming it (the
 * effect retries, so fixing the variable heals it). */
function largeAmount(): i64 {
  const text = env("LARGE_AMOUNT");
  if (text == null) return 1000;
  let value: i64 = 0;
  let valid = text.length > 0;
  for (let i = 0; i < text.length && valid; i++) {
    const digit = <i64>text.charCodeAt(i) - 0x30;
    valid = digit >= 0 && digit <= 9 && value <= (i64.MAX_VALUE - digit) / 10;
    if (valid) value = value * 10 + digit;
  }
  if (!valid) throw new Error(`LARGE_AMOUNT must be a whole number below 2^63, not "${text}"`);
  return value;
}

function handle(event: Event): void {
  const id = event.data.field("account_id");
  const a = event.data.field("amount");
  if (id == null || !id.isString() || a == null || !a.isInt()) return; // not ours to judge
  const accountId = id.asString(), amount = a.asInt();
  if (amount < largeAmount()) return;
  log.warn(`large withdrawal: ${amount} from account ${accountId}`);
  const data = Value.record()
    .setString("account_id", accountId)
    .setInt("amount", amount)
    .setInt("withdrawal_position", event.position);
  append([new NewEvent("LargeWithdrawalNoticed", [accountTag(accountId), "alert"], data)]);
}

effect(query, partitionKey, handle);
