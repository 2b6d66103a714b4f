//! Command deposit {"account_id": str, "amount": int, 1..10^12}: appends MoneyDeposited to an
//! open account, unless the new balance would not fit an int64 (rejected, HTTP 422).

use bank::{money_event, read_input, State};
use reef::{Decision, Event, Init, Value};

pub struct Deposit;

impl reef::Command for Deposit {
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
        if state.balance.checked_add(input.amount).is_none() {
            return Ok(Decision::reject(format!(
                "deposit of {} would overflow the balance {} of account {}",
                input.amount, state.balance, input.account_id
            )));
        }
        Ok(Decision::accept([money_event("MoneyDeposited", input.account_id, input.amount)]))
    }
}

// bank::fold reads only the state and the event.
reef::command!(Deposit, fold_ignores_input);

#[cfg(test)]
mod tests {
    use super::Deposit;
    use reef::{list, record, testing, Event, Value};

    fn event(position: i64, event_type: &str, data: Value) -> Value {
        let tags = vec!["account:a1".to_owned()];
        Event { position, event_type: event_type.into(), tags, data, ..Event::default() }.to_value()
    }

    #[test]
    fn deposits_into_open_accounts_only() {
        let input = record! {"account_id" => "a1", "amount" => 5};
        let opened = [event(1, "AccountOpened", Value::Null)];
        assert_eq!(
            testing::execute::<Deposit>(&input, &opened),
            Ok(record! {"events" => list![record! {
                "type" => "MoneyDeposited",
                "tags" => vec!["account:a1"],
                "data" => record! {"account_id" => "a1", "amount" => 5},
            }]})
        );
        assert_eq!(
            testing::execute::<Deposit>(&input, &[]),
            Ok(record! {"error" => "account a1 does not exist"})
        );
    }
}
