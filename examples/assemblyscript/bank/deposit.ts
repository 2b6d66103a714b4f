// Command deposit {"account_id": str, "amount": int, 1..10^12}: appends MoneyDeposited to an
// open account, unless the new balance would not fit an i64 (rejected, HTTP 422).
// The same command as examples/bank/deposit.c.
import { Value, Decision, command } from "../../../sdk/assemblyscript/assembly";
import { Account, readInput, bankInit, bankFold, moneyEvent, addOverflows } from "./bank";
export * from "../../../sdk/assemblyscript/assembly/exports/command";
export * from "../../../sdk/assemblyscript/assembly/exports/fold_ignores_input";

function decide(state: Value, input: Value): Decision {
  const account = Account.of(state);
  const r = readInput(input, true);
  const error = r.error;
  if (error != null) return Decision.reject(error);
  if (!account.open) return Decision.reject(`account ${r.accountId} does not exist`);
  if (addOverflows(account.balance, r.amount, account.balance + r.amount)) {
    return Decision.reject(`deposit of ${r.amount} would overflow the balance ${account.balance} of account ${r.accountId}`);
  }
  return moneyEvent("MoneyDeposited", r.accountId, r.amount);
}

command(bankInit, bankFold, decide);
