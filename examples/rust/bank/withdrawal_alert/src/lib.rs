//! Effect withdrawal-alert: for every MoneyWithdrawn of at least LARGE_AMOUNT (env var,
//! default 1000) it logs a warning and appends LargeWithdrawalNoticed {"account_id", "amount",
//! "withdrawal_position"} tagged "account:<id>" and "alert", standing in for a notification
//! (an e-mail, a webhook) that a real deployment would send. Events of one account are handled
//! in order (partition key = the account id); at-least-once, so a notification may repeat
//! after a crash.

use reef::{record, Event, NewEvent, Query, Value};

pub struct WithdrawalAlert;

/// LARGE_AMOUNT, a whole number below 2^63 (digits only); a bad value fails the attempt,
/// naming it (the effect retries, so fixing the variable heals it).
fn large_amount() -> reef::Result<i64> {
    let text = match reef::env("LARGE_AMOUNT") {
        Some(text) => text,
        None => return Ok(1000),
    };
    // Digits only (no sign, no spaces), and the parse refuses 2^63 and above.
    let digits = !text.is_empty() && text.bytes().all(|c| c.is_ascii_digit());
    match text.parse::<i64>() {
        Ok(value) if digits => Ok(value),
        _ => reef::bail!("LARGE_AMOUNT must be a whole number below 2^63, not \"{}\"", text),
    }
}

impl reef::Effect for WithdrawalAlert {
    fn query() -> reef::Result<Query> {
        Ok(Query::of_types(["MoneyWithdrawn"]))
    }

    fn partition_key(event: &Event) -> reef::Result<Option<String>> {
        Ok(event.data.get("account_id").and_then(Value::as_str).map(str::to_owned))
    }

    fn handle(event: &Event) -> reef::Result<()> {
        let (account_id, amount) = match (
            event.data.get("account_id").and_then(Value::as_str),
            event.data.get("amount").and_then(Value::as_i64),
        ) {
            (Some(id), Some(amount)) => (id, amount),
            _ => return Ok(()), // not ours to judge: nothing to notify
        };
        if amount < large_amount()? {
            return Ok(());
        }
        reef::warn!("large withdrawal: {} from account {}", amount, account_id);
        let notice = NewEvent::new("LargeWithdrawalNoticed")
            .tags([bank_tag(account_id), "alert".to_owned()])
            .data(record! {
                "account_id" => account_id,
                "amount" => amount,
                "withdrawal_position" => event.position,
            });
        reef::append(&[notice])?;
        Ok(())
    }
}

fn bank_tag(account_id: &str) -> String {
    format!("account:{}", account_id)
}

reef::effect!(WithdrawalAlert);
