//! Command withdraw {"account_id": str, "amount": int, 1..10^12}: appends MoneyWithdrawn when
//! the balance covers it. Two concurrent withdrawals of the same account see each other: the
//! host runs executions with the same query in turn, and the DCB condition catches any other
//! writer (the execution is then retried on the new balance).

use bank::{money_event, read_input, State};
use reef::{Decision, Event, Init, Value};

pub struct Withdraw;

impl reef::Command for Withdraw {
    fn init(input: &Value) -> reef::Result<Init> {
        bank::init(input)
    }

    fn fold(state: Value, _input: &Value, event: &Event) -> reef::Result<Value> {
        bank::fold(state, event)
    }

    fn decide(state: Value, input: &Value) -> reef::Result<Decision> {
        let state = State::read(&state)?;
        let input = match read_input(input, true) {
            Ok(input) => input,
            Err(why) => return Ok(Decision::reject(why)),
        };
        if !state.open {
            return Ok(Decision::reject(format!("account {} does not exist", input.account_id)));
        }
        if state.balance < input.amount {
            return Ok(Decision::reject(format!(
                "insufficient funds: balance {}, withdrawal {}",
                state.balance, input.amount
            )));
        }
        Ok(Decision::accept([money_event("MoneyWithdrawn", input.account_id, input.amount)]))
    }
}

// bank::fold reads only the state and the event.
reef::command!(Withdraw, fold_ignores_input);
