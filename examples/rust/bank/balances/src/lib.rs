//! Projector balances: the read model of the bank example, one row per account in the
//! projector's own database (projectors/<name>.sqlite):
//!   accounts(account_id TEXT PRIMARY KEY, owner TEXT, balance INTEGER)
//! owner is NULL once the account's key is shredded (the event's data reads as null then):
//! after a replay, or for events projected after the shred.
//! Read it with POST /projectors/<name>/query {"sql": "SELECT * FROM accounts"}.

use reef::{Event, Query, Value};

pub struct Balances;

/// The account's balance in the read model; 0 for an account without a row.
fn current_balance(account_id: &str) -> reef::Result<i64> {
    let rows =
        reef::sql_query("SELECT balance FROM accounts WHERE account_id = ?1", &[account_id.into()])
            .map_err(|_| reef::Error::msg("balances: malformed rows"))?;
    match rows.first() {
        Some(row) if rows.len() == 1 => row
            .get("balance")
            .and_then(Value::as_i64)
            .ok_or_else(|| "balances: a stored balance is not an integer".into()),
        _ => Ok(0),
    }
}

/// The event's account id: from its data, or, for a shredded AccountOpened (data null), from
/// its tag "account:<id>".
fn account_id(event: &Event) -> reef::Result<&str> {
    if let Some(id) = event.data.get("account_id").and_then(Value::as_str) {
        return Ok(id);
    }
    match event.tags.first().filter(|t| t.len() > 8).and_then(|t| t.get(8..)) {
        Some(id) => Ok(id),
        None => Err("balances: event without an account id".into()),
    }
}

impl reef::Projector for Balances {
    /// Runs once when the projector starts, with its database open: creates the table.
    fn query() -> reef::Result<Query> {
        reef::sql_exec(
            "CREATE TABLE IF NOT EXISTS accounts (account_id TEXT PRIMARY KEY, owner TEXT, \
             balance INTEGER NOT NULL DEFAULT 0)",
            &[],
        )?;
        Ok(Query::of_types(["AccountOpened", "MoneyDeposited", "MoneyWithdrawn"]))
    }

    fn project(event: &Event) -> reef::Result<()> {
        let account_id = account_id(event)?;
        if event.event_type == "AccountOpened" {
            let owner = event.data.get("owner").and_then(Value::as_str);
            reef::sql_exec(
                "INSERT INTO accounts (account_id, owner) VALUES (?1, ?2) \
                 ON CONFLICT (account_id) DO UPDATE SET owner = ?2",
                &[account_id.into(), owner.into()],
            )?;
            return Ok(());
        }
        let amount = event
            .data
            .get("amount")
            .and_then(Value::as_i64)
            .ok_or("balances: money event without an integer amount")?;
        // The new balance in checked arithmetic: SQLite would turn an overflowing integer sum
        // into a float, so the sum is done here and an overflow stops the projector.
        let balance = current_balance(account_id)?;
        let next = if event.event_type == "MoneyWithdrawn" {
            balance.checked_sub(amount)
        } else {
            balance.checked_add(amount)
        };
        let next = next.ok_or_else(|| {
            format!(
                "balances: event {} ({} of {}) overflows the balance of account {}",
                event.position, event.event_type, amount, account_id
            )
        })?;
        reef::sql_exec(
            "INSERT INTO accounts (account_id, balance) VALUES (?1, ?2) \
             ON CONFLICT (account_id) DO UPDATE SET balance = ?2",
            &[account_id.into(), next.into()],
        )?;
        Ok(())
    }
}

reef::projector!(Balances);
