// Command withdraw {"account_id": str, "amount": int, 1..10^12}: appends MoneyWithdrawn when the
// balance covers it. Two concurrent withdrawals of the same account see each other: the host
// runs executions with the same query in turn, and the DCB condition catches any other writer
// (the execution then runs again on the new balance). The same command as
// examples/bank/withdraw.c.
import { Value, Decision, command } from "../../../sdk/assemblyscript/assembly";
import { Account, readInput, bankInit, bankFold, moneyEvent } from "./bank";
export * from "../../../sdk/assemblyscript/assembly/exports/command";
export * from "../../../sdk/assemblyscript/assembly/exports/fold_ignores_input";

function decide(state: Value, input: Value): Decision {
  const account = Account.of(state);
  const r = readInput(input, true);
  const error = r.error;
  if (error != null) return Decision.reject(error);
  if (!account.open) return Decision.reject(`account ${r.accountId} does not exist`);
  if (account.balance < r.amount) {
    return Decision.reject(`insufficient funds: balance ${account.balance}, withdrawal ${r.amount}`);
  }
  return moneyEvent("MoneyWithdrawn", r.accountId, r.amount);
}

command(bankInit, bankFold, decide);
