//! Reef Rust SDK: the host services of event-sourced modules (docs/abi.md "Imports"):
//! time, randomness, environment variables, SQL on the module's database and append.
//!
//! In a command, `now_ms` is fixed for the whole execution and `random` is derived from the
//! execution id, so a retried execution decides the same way (and a fold that calls either
//! is not cached).

use crate::cbor::{self, Limits};
use crate::error::{Error, ErrorKind, Result};
use crate::host;
use crate::module::NewEvent;
use crate::record::Record;
use crate::value::Value;

/// Unix time in ms (fixed for a whole command execution).
pub fn now_ms() -> i64 {
    host::now_ms()
}

/// Fills `buf` with random bytes (at most 65,536 per call; [`ErrorKind::Limit`] above).
pub fn random(buf: &mut [u8]) -> Result<()> {
    if host::random(buf) >= 0 {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Limit,
            format!("random: {} bytes exceeds 65536 per call", buf.len()),
        ))
    }
}

/// A random u64 (see [`random`]).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // 8 bytes are always within the limit.
    let _ = random(&mut b);
    u64::from_le_bytes(b)
}

/// Calls `import(out)` with a buffer of `cap` bytes, again with the returned length while
/// the answer did not fit (the "call again with a buffer of the returned length" protocol).
/// Returns the answer, or the import's negative code.
fn read_sized(
    mut cap: usize,
    mut import: impl FnMut(&mut [u8]) -> i32,
) -> std::result::Result<Vec<u8>, i32> {
    loop {
        let mut buf = vec![0u8; cap];
        let n = import(&mut buf);
        if n < 0 {
            return Err(n);
        }
        let n = n as usize;
        if n <= cap {
            buf.truncate(n);
            return Ok(buf);
        }
        cap = n;
    }
}

/// The module's environment variable `key` (set with `PUT /{kind}/{name}/env/{key}`), or
/// `None` when it is unset. Any other answer of the host (it has none today) fails the call
/// rather than pass for an unset variable.
pub fn env(key: &str) -> Option<String> {
    match read_sized(256, |out| host::env(key.as_bytes(), out)) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(-6) => None,
        Err(code) => crate::fail(&format!("env {:?}: the host answered {}", key, code)),
    }
}

fn params_cbor(params: &[Value]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    cbor::write_head(&mut out, 4, params.len() as u64);
    for p in params {
        cbor::encode_into(p, &mut out)?;
    }
    Ok(out)
}

/// Runs one SQL statement on the module's own database (projectors and effects) with
/// `params` (null, bool, int, float or string) bound to `?1`, `?2`, ...; returns the rows
/// changed. A SQL error, or a statement the host forbids (transactions, ATTACH, PRAGMA
/// writes, the host's `reef_*` tables), fails the call. Error [`ErrorKind::Invalid`] for a
/// NaN or infinite float parameter.
pub fn sql_exec(sql: &str, params: &[Value]) -> Result<i64> {
    let p = params_cbor(params)?;
    Ok(host::sql_exec(sql.as_bytes(), &p))
}

/// Runs one query and returns its rows, each a record column → value (INTEGER int, REAL
/// float, TEXT string, NULL null; a BLOB column fails the call). Errors:
/// [`ErrorKind::Invalid`] (the host refused the call, or a NaN parameter),
/// [`ErrorKind::Malformed`] (rows that are not a list of records).
pub fn sql_query(sql: &str, params: &[Value]) -> Result<Vec<Record>> {
    let p = params_cbor(params)?;
    let bytes = read_sized(4096, |out| host::sql_query(sql.as_bytes(), &p, out)).map_err(|rc| {
        Error::new(ErrorKind::Invalid, format!("sql_query: the host refused the call ({})", rc))
    })?;
    let rows = match cbor::decode(&bytes, &Limits::MODULE)? {
        Value::List(rows) => rows,
        _ => return Err(Error::new(ErrorKind::Malformed, "sql_query: rows are not a list")),
    };
    rows.into_iter()
        .map(|row| match row {
            Value::Record(r) => Ok(r),
            _ => Err(Error::new(ErrorKind::Malformed, "sql_query: a row is not a record")),
        })
        .collect()
}

/// Effects only: appends `events` without a condition (they carry the triggering event's
/// correlation id, and its id as causation id); returns the last position. An append the
/// store refuses fails the call (the effect retries the event).
pub fn append(events: &[NewEvent]) -> Result<i64> {
    let list: Value = events.iter().map(NewEvent::to_value).collect();
    Ok(host::append(&list.to_cbor()?))
}
