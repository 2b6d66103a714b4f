//! Reef Rust SDK: the error type of every fallible SDK function.
//!
//! An [`Error`] has a [`ErrorKind`] (what went wrong, to match on) and an English message (what
//! a human reads; `Display` prints it). Handlers return `Result<_, E: Display>`, so `?` on any
//! SDK call works, and a failing handler ends its invocation with the message as the reason.

use std::fmt;

/// What went wrong. The first two are also what the host's `i32` imports report (codes -1
/// and -2 of docs/abi.md); the call kinds are the codes -3 to -6 of the `call` import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument was refused: malformed CBOR, not a value, a bad ref, a timeout outside
    /// 1..=600,000 ms, a float that is NaN or infinite.
    Invalid,
    /// A limit was exceeded: a value limit (depth, nodes, string bytes, encoded size), a log
    /// message over 512 bytes, more than 4,096 sends in one transition, random over 64 KiB.
    Limit,
    /// Bytes that are not one CBOR item of the ABI v1 subset (or are cut short).
    Malformed,
    /// A value of another kind than asked for (an int where a string was expected, ...).
    Type,
    /// A number that does not fit the requested type.
    Range,
    /// A record has no field with the requested key.
    NotFound,
    /// `call`: the target is unknown, stopped or failed, or its mailbox stayed full.
    Unavailable,
    /// `call`: no reply within the timeout.
    Timeout,
    /// `call`: the callee failed, was killed, or committed without replying.
    NoReply,
    /// `call`: the target waits (directly or through others) for this actor.
    Cycle,
    /// A failure of the guest's own, made with [`Error::msg`] (or from a `String` / `&str`).
    Failed,
}

impl ErrorKind {
    /// A short English description, as the C SDK's `reef_strerror` words it.
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid argument",
            ErrorKind::Limit => "limit exceeded",
            ErrorKind::Malformed => "malformed CBOR",
            ErrorKind::Type => "wrong kind of value",
            ErrorKind::Range => "number out of range",
            ErrorKind::NotFound => "field not found",
            ErrorKind::Unavailable => "the target took no message",
            ErrorKind::Timeout => "no reply within the timeout",
            ErrorKind::NoReply => "the callee ended without replying",
            ErrorKind::Cycle => "call cycle",
            ErrorKind::Failed => "failed",
        }
    }
}

/// An SDK error: a kind and a message. `Display` prints the message only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with `message` (the message should say what and why).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    /// An error of the kind's own description ("field not found", "call cycle", ...).
    pub fn of_kind(kind: ErrorKind) -> Error {
        Error::new(kind, kind.description())
    }

    /// A guest's own failure (kind [`ErrorKind::Failed`]) with any printable message.
    pub fn msg(message: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Failed, message.to_string())
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message (what `Display` prints).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with `context: ` put before its message (kind unchanged).
    pub fn context(self, context: impl fmt::Display) -> Error {
        Error { kind: self.kind, message: format!("{}: {}", context, self.message) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::new(ErrorKind::Failed, message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Error {
        Error::new(ErrorKind::Failed, message)
    }
}

/// The SDK's result type: `Result<T, reef::Error>` unless another error type is named.
pub type Result<T, E = Error> = std::result::Result<T, E>;
