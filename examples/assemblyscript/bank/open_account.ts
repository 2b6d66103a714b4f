// Command open-account {"account_id": str, "owner": str}: appends AccountOpened unless the
// account exists. The owner's name is personal data: it is stored encrypted under the scope
// "account:<id>", so DELETE /crypto-keys/account:<id> erases it (crypto-shredding). The same
// command as examples/bank/open_account.c.
import { Value, Decision, NewEvent, command } from "../../../sdk/assemblyscript/assembly";
import { Account, readInput, bankInit, bankFold, accountTag } from "./bank";
export * from "../../../sdk/assemblyscript/assembly/exports/command";
export * from "../../../sdk/assemblyscript/assembly/exports/fold_ignores_input";

function decide(state: Value, input: Value): Decision {
  const account = Account.of(state);
  const r = readInput(input, false);
  const error = r.error;
  if (error != null) return Decision.reject(error);
  if (account.open) return Decision.reject(`account ${r.accountId} already exists`);
  if (r.owner.length == 0) return Decision.reject("input needs a non-empty string \"owner\"");
  const tag = accountTag(r.accountId);
  const data = Value.record().setString("account_id", r.accountId).setString("owner", r.owner);
  return Decision.accept([new NewEvent("AccountOpened", [tag], data).withEncryptionScope(tag)]);
}

command(bankInit, bankFold, decide);
