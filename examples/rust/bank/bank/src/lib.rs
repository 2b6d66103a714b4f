//! The bank example in Rust (the same app as examples/bank/*.c): three commands, a projector
//! and an effect over one event model. Every event carries the tag "account:<id>".
//!
//!   AccountOpened    {"account_id": str, "owner": str}   owner encrypted, scope "account:<id>"
//!   MoneyDeposited   {"account_id": str, "amount": int}
//!   MoneyWithdrawn   {"account_id": str, "amount": int}
//!
//! This crate holds what the three commands share: reading and checking the input and folding
//! an account's events into its state {"open": bool, "balance": int}. A bad input is the
//! caller's mistake, rejected with the reason (HTTP 422), never a module failure; every sum is
//! checked arithmetic, so no balance can wrap around.

use reef::{record, Event, Init, NewEvent, Query, Value};

/// Largest amount one deposit or withdrawal may move: 10^12 (cents, say).
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;
/// Longest account id, in bytes: its tag "account:<id>" is also the owner's encryption scope,
/// which the host limits to 256 bytes.
pub const MAX_ACCOUNT_ID: usize = 248;

/// A checked command input {"account_id": str, "amount"?: int, "owner"?: str}.
pub struct Input<'a> {
    pub account_id: &'a str,
    /// 0 when the command takes no amount.
    pub amount: i64,
    /// Empty when the input has none.
    pub owner: &'a str,
}

/// Reads and checks the input; the error is the rejection message (the C example's texts).
pub fn read_input(input: &Value, need_amount: bool) -> Result<Input<'_>, &'static str> {
    if input.as_record().is_none() {
        return Err("input must be a JSON object with a string \"account_id\"");
    }
    let account_id =
        match input.get("account_id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() && id.len() <= MAX_ACCOUNT_ID && !has_control(id) => id,
            _ => return Err(
                "input needs a string \"account_id\" of 1 to 248 bytes without control characters",
            ),
        };
    let mut amount = 0;
    if need_amount {
        amount = match input.get("amount").and_then(Value::as_i64) {
            Some(a) if (1..=MAX_AMOUNT).contains(&a) => a,
            _ => return Err("input needs an integer \"amount\" from 1 to 1000000000000"),
        };
    }
    let owner = match input.get("owner") {
        None => "",
        Some(Value::Str(owner)) => owner.as_str(),
        Some(_) => return Err("input field \"owner\" must be a string"),
    };
    Ok(Input { account_id, amount, owner })
}

/// True when `id` has a control character (bytes 0-31 and 127).
fn has_control(id: &str) -> bool {
    id.bytes().any(|c| c < 0x20 || c == 0x7f)
}

/// The tag of an account's events, also the scope its owner's name is encrypted under.
pub fn account_tag(account_id: &str) -> String {
    format!("account:{}", account_id)
}

/// An account's state, folded from its events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub open: bool,
    pub balance: i64,
}

impl State {
    /// Reads {"open": bool, "balance": int}.
    pub fn read(state: &Value) -> reef::Result<State> {
        match (
            state.get("open").and_then(Value::as_bool),
            state.get("balance").and_then(Value::as_i64),
        ) {
            (Some(open), Some(balance)) => Ok(State { open, balance }),
            _ => Err("bank: malformed state".into()),
        }
    }

    pub fn to_value(self) -> Value {
        record! {"open" => self.open, "balance" => self.balance}
    }
}

/// init of every bank command: the account's events (every event tagged with it), or
/// nothing when the input has no usable account id (decide then rejects).
pub fn init(input: &Value) -> reef::Result<Init> {
    let state = State::default().to_value();
    Ok(match read_input(input, false) {
        Ok(input) => Init::with_query(Query::of_tags([account_tag(input.account_id)]), state),
        Err(_) => Init::without_query(state),
    })
}

/// fold of every bank command. Events appended past the commands (anyone may append to the
/// store) that would overflow the balance fail the execution loudly instead of wrapping.
pub fn fold(state: Value, event: &Event) -> reef::Result<Value> {
    let mut s = State::read(&state)?;
    let amount = event.data.get("amount").and_then(Value::as_i64).unwrap_or(0);
    let balance = match event.event_type.as_str() {
        "AccountOpened" => {
            s.open = true;
            Some(s.balance)
        }
        "MoneyDeposited" => s.balance.checked_add(amount),
        "MoneyWithdrawn" => s.balance.checked_sub(amount),
        _ => Some(s.balance),
    };
    s.balance = balance.ok_or_else(|| {
        format!(
            "bank: event {} ({} of {}) overflows the balance",
            event.position, event.event_type, amount
        )
    })?;
    Ok(s.to_value())
}

/// One event {"account_id": id, "amount": amount} of `event_type`, tagged with the account.
pub fn money_event(event_type: &str, account_id: &str, amount: i64) -> NewEvent {
    NewEvent::new(event_type)
        .tag(account_tag(account_id))
        .data(record! {"account_id" => account_id, "amount" => amount})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_checked_with_the_c_examples_words() {
        let ok = record! {"account_id" => "a1", "amount" => 5, "owner" => "Ada"};
        let input = read_input(&ok, true).unwrap();
        assert_eq!((input.account_id, input.amount, input.owner), ("a1", 5, "Ada"));
        let err = |v: Value, need: bool| read_input(&v, need).err().unwrap();
        assert_eq!(
            err(Value::Null, false),
            "input must be a JSON object with a string \"account_id\""
        );
        assert_eq!(
            err(record! {"account_id" => "a\u{1}"}, false),
            "input needs a string \"account_id\" of 1 to 248 bytes without control characters"
        );
        assert_eq!(
            err(record! {"account_id" => "a", "amount" => 0}, true),
            "input needs an integer \"amount\" from 1 to 1000000000000"
        );
        assert_eq!(
            err(record! {"account_id" => "a", "owner" => 1}, false),
            "input field \"owner\" must be a string"
        );
    }

    #[test]
    fn fold_checks_the_balance() {
        let mut event =
            Event { position: 3, event_type: "AccountOpened".into(), ..Event::default() };
        let state = fold(State::default().to_value(), &event).unwrap();
        assert_eq!(State::read(&state).unwrap(), State { open: true, balance: 0 });
        event.event_type = "MoneyWithdrawn".into();
        event.data = record! {"amount" => 5};
        let state = fold(state, &event).unwrap();
        assert_eq!(State::read(&state).unwrap().balance, -5);
        event.data = record! {"amount" => i64::MAX};
        assert_eq!(
            fold(state, &event).unwrap_err().to_string(),
            "bank: event 3 (MoneyWithdrawn of 9223372036854775807) overflows the balance"
        );
    }
}
