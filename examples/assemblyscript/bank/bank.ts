// The bank example in AssemblyScript: what the three command modules share (examples/bank/bank.h
// in C, with the same events, rejections and state). Every event carries the tag
// "account:<id>".
//
//   AccountOpened    {"account_id": str, "owner": str}   owner encrypted, scope "account:<id>"
//   MoneyDeposited   {"account_id": str, "amount": int}
//   MoneyWithdrawn   {"account_id": str, "amount": int}
//
// The input is checked (a bad one is rejected with the reason, HTTP 422, never a module
// failure), and every sum is checked arithmetic, so no balance can wrap around. The state of an
// account is {"open": bool, "balance": int}.
import { Value, Event, Query, NewEvent, Decision, Init } from "../../../sdk/assemblyscript/assembly";

/** Largest amount one deposit or withdrawal may move: 10^12 (cents, say). */
export const MAX_AMOUNT: i64 = 1000000000000;
/** Longest account id in UTF-8 bytes: its tag "account:<id>" is also the owner's encryption
 * scope, which the host limits to 256 bytes. */
export const MAX_ACCOUNT_ID: i32 = 248;

/** A command's input, read and checked. */
export class BankInput {
  accountId: string = "";
  /** 0 when the input has none. */
  amount: i64 = 0;
  /** "" when the input has none. */
  owner: string = "";
  /** null, or why the input is unusable (decide rejects with it). */
  error: string | null = null;
}

/** True when `id` has a control character (U+0000-U+001F, U+007F). */
function hasControl(id: string): bool {
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

/** Reads {"account_id": str, "amount"?: int, "owner"?: str}. A bad input is the caller's
 * mistake, not the module's: `error` says what is wrong and decide rejects with it. */
export function readInput(input: Value, needAmount: bool): BankInput {
  const r = new BankInput();
  if (!input.isRecord()) {
    r.error = "input must be a JSON object with a string \"account_id\"";
    return r;
  }
  const id = input.field("account_id");
  if (id == null || !id.isString() || id.asString().length == 0 ||
      String.UTF8.byteLength(id.asString()) > MAX_ACCOUNT_ID || hasControl(id.asString())) {
    r.error = "input needs a string \"account_id\" of 1 to 248 bytes without control characters";
    return r;
  }
  r.accountId = id.asString();
  if (needAmount) {
    const amount = input.field("amount");
    if (amount == null || !amount.isInt() || amount.asInt() <= 0 || amount.asInt() > MAX_AMOUNT) {
      r.error = "input needs an integer \"amount\" from 1 to 1000000000000";
      return r;
    }
    r.amount = amount.asInt();
  }
  const owner = input.field("owner");
  if (owner != null) {
    if (!owner.isString()) r.error = "input field \"owner\" must be a string";
    else r.owner = owner.asString();
  }
  return r;
}

/** The tag of an account, also the scope its owner's name is encrypted under. */
export function accountTag(accountId: string): string {
  return "account:" + accountId;
}

/** An account's state. */
export class Account {
  constructor(public open: bool, public balance: i64) {}

  static of(state: Value): Account {
    const open = state.field("open"), balance = state.field("balance");
    if (open == null || !open.isBool() || balance == null || !balance.isInt()) {
      throw new Error("bank: malformed state");
    }
    return new Account(open.asBool(), balance.asInt());
  }

  toValue(): Value {
    return Value.record().setBool("open", this.open).setInt("balance", this.balance);
  }
}

/** init: every event tagged with the account; nothing (and decide rejects) when the input has
 * no usable account id. */
export function bankInit(input: Value): Init {
  const r = readInput(input, false);
  const query = r.error == null ? Query.tags([accountTag(r.accountId)]) : null;
  return new Init(query, new Account(false, 0).toValue());
}

/** fold: one event. The events were checked when these commands appended them, but anyone may
 * append to the store: an amount that would overflow the balance fails the execution loudly
 * (HTTP 500) instead of wrapping around. Reads only the state and the event (the modules
 * declare fold_ignores_input). */
export function bankFold(state: Value, input: Value, event: Event): Value {
  const account = Account.of(state);
  let amount: i64 = 0;
  let balance = account.balance;
  let overflow = false;
  if (event.type == "AccountOpened") {
    account.open = true;
  } else if (event.type == "MoneyDeposited" || event.type == "MoneyWithdrawn") {
    const a = event.data.field("amount");
    if (a != null && a.isInt()) amount = a.asInt();
    const deposit = event.type == "MoneyDeposited";
    const next = deposit ? balance + amount : balance - amount;
    overflow = deposit ? addOverflows(balance, amount, next) : subOverflows(balance, amount, next);
    balance = next;
  }
  if (overflow) {
    throw new Error(`bank: event ${event.position} (${event.type} of ${amount}) overflows the balance`);
  }
  account.balance = balance;
  return account.toValue();
}

/** True when a + b, computed as `sum` with wrap-around, overflowed i64. */
export function addOverflows(a: i64, b: i64, sum: i64): bool {
  return ((sum ^ a) & (sum ^ b)) < 0;
}

/** True when a - b, computed as `diff` with wrap-around, overflowed i64. */
export function subOverflows(a: i64, b: i64, diff: i64): bool {
  return ((a ^ b) & (a ^ diff)) < 0;
}

/** A decision appending one {"account_id": id, "amount": amount} event of `type`. */
export function moneyEvent(type: string, accountId: string, amount: i64): Decision {
  const data = Value.record().setString("account_id", accountId).setInt("amount", amount);
  return Decision.accept([new NewEvent(type, [accountTag(accountId)], data)]);
}
