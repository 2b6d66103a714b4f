//! Command open-account {"account_id": str, "owner": str}: appends AccountOpened unless the
//! account exists. The owner's name is personal data: it is stored encrypted under the scope
//! "account:<id>", so DELETE /crypto-keys/account:<id> erases it (crypto-shredding).

use bank::{account_tag, read_input, State};
use reef::{record, Decision, Event, Init, NewEvent, Value};

pub struct OpenAccount;

impl reef::Command for OpenAccount {
    fn init(input: &Value) -> reef::Result<Init> {
        bank::init(input)
    }

    fn fold(state: Value, _input: &Value, event: &Event) -> reef::Result<Value> {
        bank::fold(state, event)
    }

    fn decide(state: Value, input: &Value) -> reef::Result<Decision> {
        let state = State::read(&state)?;
        let input = match read_input(input, false) {
            Ok(input) => input,
            Err(why) => return Ok(Decision::reject(why)),
        };
        if state.open {
            return Ok(Decision::reject(format!("account {} already exists", input.account_id)));
        }
        if input.owner.is_empty() {
            return Ok(Decision::reject("input needs a non-empty string \"owner\""));
        }
        let tag = account_tag(input.account_id);
        let opened = NewEvent::new("AccountOpened")
            .tag(tag.as_str())
            .data(record! {"account_id" => input.account_id, "owner" => input.owner})
            .encryption_scope(tag);
        Ok(Decision::accept([opened]))
    }
}

// bank::fold reads only the state and the event.
reef::command!(OpenAccount, fold_ignores_input);
