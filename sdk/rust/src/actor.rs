//! Reef Rust SDK: what an actor can do while its handler runs (docs/abi.md "Imports the host
//! provides"): send, send_from, reply, call, its own ref, logs and fail.
//!
//! Sends are effects of the transition: the host queues them and delivers them only if the
//! invocation commits. A call happens at once and waits for the reply. Logs and `fail` also
//! work in event-sourced modules.

use crate::cbor::{self, Limits};
use crate::error::{Error, ErrorKind, Result};
use crate::host;
use crate::record::ActorRef;
use crate::value::Value;

/// Longest log message the host takes, in bytes.
pub const LOG_MAX: usize = 512;

/// Log levels of the `log` import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// 0: the finest detail.
    Trace = 0,
    /// 1: for debugging.
    Debug = 1,
    /// 2: what happened.
    Info = 2,
    /// 3: something to look at.
    Warn = 3,
    /// 4: something went wrong.
    Error = 4,
    /// 5: something went badly wrong.
    Fatal = 5,
}

impl Level {
    /// The level of an import code 0..=5.
    pub fn from_i32(level: i32) -> Option<Level> {
        Some(match level {
            0 => Level::Trace,
            1 => Level::Debug,
            2 => Level::Info,
            3 => Level::Warn,
            4 => Level::Error,
            5 => Level::Fatal,
            _ => return None,
        })
    }
}

/// An import's -1 / -2 as an error naming `what`.
fn host_error(rc: i32, what: &str) -> Error {
    match rc {
        -2 => Error::new(ErrorKind::Limit, format!("{}: limit exceeded", what)),
        _ => Error::new(ErrorKind::Invalid, format!("{}: invalid argument", what)),
    }
}

fn status(rc: i32, what: &str) -> Result<()> {
    if rc >= 0 {
        Ok(())
    } else {
        Err(host_error(rc, what))
    }
}

fn encode_ref(r: &ActorRef) -> Vec<u8> {
    let mut b = Vec::with_capacity(27);
    cbor::write_actor(&mut b, r);
    b
}

/// Sends `message` to `target` with this actor as the sender; delivered when the invocation
/// commits. Errors: [`ErrorKind::Invalid`] (a float that is NaN or infinite, or the host
/// refused the value), [`ErrorKind::Limit`] (value limits, more than 4,096 sends in one
/// transition). An unknown or stopped target is not an error here: the host then fails the
/// whole transition when it commits.
pub fn send(target: &ActorRef, message: &Value) -> Result<()> {
    let msg = message.to_cbor()?;
    status(host::send(&encode_ref(target), &msg), "send")
}

/// Sends `message` to `target` with an explicit sender: an actor ref, or `None` to send it
/// as the host (forwarding a request, say). Errors as for [`send`].
pub fn send_from(sender: Option<&ActorRef>, target: &ActorRef, message: &Value) -> Result<()> {
    let msg = message.to_cbor()?;
    let from = match sender {
        Some(r) => encode_ref(r),
        None => vec![0xf6],
    };
    status(host::send_from(&from, &encode_ref(target), &msg), "send_from")
}

/// Replies `message` to the sender of the message being handled (a handler's `sender`).
/// Returns `Ok(true)` when it was sent, `Ok(false)` when there is no sender (a message from
/// the host expects no reply: nothing to do). Errors as for [`send`].
pub fn reply(sender: Option<&ActorRef>, message: &Value) -> Result<bool> {
    match sender {
        Some(to) => send(to, message).map(|_| true),
        None => Ok(false),
    }
}

/// Sends `message` to `target` at once and waits for its reply, at most `timeout_ms`
/// (1..=600,000) ms; the callee answers with [`reply`]. The message is delivered even if
/// this invocation fails later (a call is an effect when it is made). Errors:
/// [`ErrorKind::Unavailable`], [`ErrorKind::Timeout`], [`ErrorKind::NoReply`],
/// [`ErrorKind::Cycle`], [`ErrorKind::Invalid`] (bad timeout or value),
/// [`ErrorKind::Limit`], [`ErrorKind::Malformed`] (an unexpected host answer).
pub fn call(target: &ActorRef, message: &Value, timeout_ms: u32) -> Result<Value> {
    if timeout_ms == 0 || timeout_ms > 600_000 {
        return Err(Error::new(
            ErrorKind::Invalid,
            format!("call: timeout {} ms is outside 1..=600000", timeout_ms),
        ));
    }
    let msg = message.to_cbor()?;
    let n = host::call(&encode_ref(target), &msg, timeout_ms as i32);
    let kind = match n {
        -1 => ErrorKind::Invalid,
        -2 => ErrorKind::Limit,
        -3 => ErrorKind::Unavailable,
        -4 => ErrorKind::Timeout,
        -5 => ErrorKind::NoReply,
        -6 => ErrorKind::Cycle,
        n if n <= 0 => ErrorKind::Malformed,
        _ => {
            let mut buf = vec![0u8; n as usize];
            if host::call_reply(&mut buf) != n {
                return Err(Error::new(ErrorKind::Malformed, "call: the host gave no reply"));
            }
            return cbor::decode(&buf, &Limits::HOST_INPUT).map_err(|e| e.context("call: the reply"));
        }
    };
    Err(Error::new(kind, format!("call to {}: {}", target, kind.description())))
}

/// This actor's ref. Error [`ErrorKind::Malformed`] for an unexpected host answer.
pub fn self_ref() -> Result<ActorRef> {
    let mut buf = [0u8; 64];
    let n = host::self_ref(&mut buf);
    if n <= 0 || n as usize > buf.len() {
        return Err(Error::new(ErrorKind::Malformed, "self: unexpected answer from the host"));
    }
    match cbor::decode(&buf[..n as usize], &Limits::HOST_INPUT) {
        Ok(Value::Actor(r)) => Ok(r),
        _ => Err(Error::new(ErrorKind::Malformed, "self: the host's answer is no actor ref")),
    }
}

/// `message` as it fits the 512-byte log limit: itself, or its first bytes (cut at a
/// character boundary) ending with " [cut: N bytes in all]". The bool says whether it was cut.
pub fn cut_for_log(message: &str) -> (std::borrow::Cow<'_, str>, bool) {
    if message.len() <= LOG_MAX {
        return (message.into(), false);
    }
    let marker = format!(" [cut: {} bytes in all]", message.len());
    let mut keep = LOG_MAX - marker.len();
    while !message.is_char_boundary(keep) {
        keep -= 1;
    }
    (format!("{}{}", &message[..keep], marker).into(), true)
}

/// Logs `message` at `level`. A message over 512 bytes is logged as its first bytes ending
/// with " [cut: N bytes in all]" and the result is [`ErrorKind::Limit`] (it was still
/// logged). The `trace!` .. `fatal!` macros format and log, ignoring the result.
pub fn log(level: Level, message: &str) -> Result<()> {
    let (text, cut) = cut_for_log(message);
    status(host::log(level as i32, text.as_bytes()), "log")?;
    if cut {
        return Err(Error::new(
            ErrorKind::Limit,
            format!("log: a message of {} bytes was cut to {}", message.len(), LOG_MAX),
        ));
    }
    Ok(())
}

/// Ends the invocation as a failure with `reason`: nothing commits, no send is delivered.
/// (A module's call fails the same way: HTTP 500 for a command, a stopped projector, a
/// retried effect event.) Never returns.
pub fn fail(reason: &str) -> ! {
    host::fail(reason.as_bytes())
}
