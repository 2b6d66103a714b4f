//! Reef Rust SDK: write Reef guests in Rust (docs/abi.md, ABI `reef` v1).
//!
//! A guest is a `cdylib` built for `wasm32-unknown-unknown`. Values cross the edge as
//! [`Value`]s (the SDK does the CBOR); failures are Rust errors and panics.
//!
//! * Actors: `fn handle(state: Value, sender: Option<ActorRef>, message: Value) ->
//!   Result<Value, E>` (E: Display) and [`actor!`]`(handle)`; [`send`], [`send_from`],
//!   [`reply`], [`call`], [`self_ref`], the log macros [`info!`] & co, [`fail`].
//! * Program units: [`handler!`]`(export_name, func)` exports more handlers;
//!   [`unit_module!`] for a module without a default `reef_handle`.
//! * Event-sourced modules: implement [`Command`], [`Projector`] or [`Effect`] and name it
//!   with [`command!`], [`projector!`] or [`effect!`]; [`Event`], [`NewEvent`], [`Query`],
//!   [`Decision`], and the services [`now_ms`], [`random`], [`env`], [`sql_exec`],
//!   [`sql_query`], [`append`].
//!
//! ```
//! use reef::{ActorRef, Value};
//!
//! fn handle(state: Value, _sender: Option<ActorRef>, message: Value) -> reef::Result<Value> {
//!     let count = state.try_i64()?;
//!     let by = message.field("value")?.try_i64()?;
//!     count.checked_add(by).map(Value::from).ok_or_else(|| "overflow".into())
//! }
//! reef::actor!(handle);
//! ```
//!
//! Off wasm32 the host imports go to a test double ([`testing`]), so `cargo test` runs the
//! SDK's and a guest's unit tests on the build machine.

#![warn(missing_docs)]

mod actor;
pub mod cbor;
mod error;
mod host;
mod module;
mod record;
mod services;
mod value;

#[doc(hidden)]
pub mod rt;

#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

pub use actor::{call, cut_for_log, fail, log, reply, self_ref, send, send_from, Level, LOG_MAX};
pub use cbor::Limits;
pub use error::{Error, ErrorKind, Result};
pub use module::{Command, Decision, Effect, Event, Init, NewEvent, Projector, Query, QueryItem};
pub use record::{ActorRef, Record, ACTOR_REF_LEN};
pub use services::{append, env, now_ms, random, random_u64, sql_exec, sql_query};
pub use value::{Kind, Value};

/// A record value from `key => value` pairs (values: anything `Into<Value>`):
/// `reef::record! {"op" => "add", "value" => 5}`.
#[macro_export]
macro_rules! record {
    () => { $crate::Value::Record($crate::Record::new()) };
    ($($key:expr => $value:expr),+ $(,)?) => {{
        let mut r = $crate::Record::new();
        $( r.insert($key, $value); )+
        $crate::Value::Record(r)
    }};
}

/// A list value of items of any kinds: `reef::list![1, "two", 3.5]`.
#[macro_export]
macro_rules! list {
    ($($item:expr),* $(,)?) => { $crate::Value::List(vec![$($crate::Value::from($item)),*]) };
}

/// `return Err(reef::Error::msg(format!(...)))`.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)+) => { return Err($crate::Error::msg(format!($($arg)+)).into()) };
}

/// Logs a `format!` message at a level; messages over 512 bytes are cut, saying so.
#[macro_export]
macro_rules! log_at {
    ($level:expr, $($arg:tt)+) => { let _ = $crate::log($level, &format!($($arg)+)); };
}
/// `reef::trace!("x = {}", x)`: see [`log_at!`].
#[macro_export]
macro_rules! trace { ($($arg:tt)+) => { $crate::log_at!($crate::Level::Trace, $($arg)+) }; }
/// `reef::debug!(...)`: see [`log_at!`].
#[macro_export]
macro_rules! debug { ($($arg:tt)+) => { $crate::log_at!($crate::Level::Debug, $($arg)+) }; }
/// `reef::info!(...)`: see [`log_at!`].
#[macro_export]
macro_rules! info { ($($arg:tt)+) => { $crate::log_at!($crate::Level::Info, $($arg)+) }; }
/// `reef::warn!(...)`: see [`log_at!`].
#[macro_export]
macro_rules! warn { ($($arg:tt)+) => { $crate::log_at!($crate::Level::Warn, $($arg)+) }; }
/// `reef::error!(...)`: see [`log_at!`].
#[macro_export]
macro_rules! error { ($($arg:tt)+) => { $crate::log_at!($crate::Level::Error, $($arg)+) }; }
/// `reef::fatal!(...)`: see [`log_at!`].
#[macro_export]
macro_rules! fatal { ($($arg:tt)+) => { $crate::log_at!($crate::Level::Fatal, $($arg)+) }; }

/// The exports every module has: `reef_abi_version` (returns 1) and `reef_alloc`. Alone, it
/// makes a module whose handlers all come from [`handler!`]. Use once per crate.
#[macro_export]
macro_rules! unit_module {
    () => {
        #[no_mangle]
        pub extern "C" fn reef_abi_version() -> i32 {
            1
        }
        #[no_mangle]
        pub extern "C" fn reef_alloc(len: i32) -> i32 {
            $crate::rt::alloc(len)
        }
    };
}

/// Exports `handler` (a `fn(Value, Option<ActorRef>, Value) -> Result<Value, E: Display>`)
/// under the export name `name`, an identifier (program.json: `"handler": "name"`).
#[macro_export]
macro_rules! handler {
    ($name:ident, $handler:path) => {
        #[no_mangle]
        pub extern "C" fn $name(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32) -> i64 {
            $crate::rt::handle($handler, sp, sl, fp, fl, mp, ml)
        }
    };
}

/// An actor: the common exports and `reef_handle` calling `handle`; with
/// `on_shutdown = hook` (a `fn(Value) -> Result<Value, E>`) also `reef_on_shutdown`.
/// Use once per crate: `reef::actor!(handle);`.
#[macro_export]
macro_rules! actor {
    ($handle:path) => {
        $crate::unit_module!();
        $crate::handler!(reef_handle, $handle);
    };
    ($handle:path, on_shutdown = $shutdown:path) => {
        $crate::actor!($handle);
        #[no_mangle]
        pub extern "C" fn reef_on_shutdown(sp: i32, sl: i32) -> i64 {
            $crate::rt::shutdown($shutdown, sp, sl)
        }
    };
}

/// A command module from a type implementing [`Command`]: `reef::command!(Deposit);`, or
/// `reef::command!(Deposit, fold_ignores_input);` when `fold` does not read the input (the
/// export `reef_command_fold_ignores_input`: docs/abi.md "The fold cache").
#[macro_export]
macro_rules! command {
    ($command:ty) => {
        $crate::unit_module!();
        #[no_mangle]
        pub extern "C" fn reef_command_init(ip: i32, il: i32) -> i64 {
            $crate::rt::command_init::<$command>(ip, il)
        }
        #[no_mangle]
        pub extern "C" fn reef_command_fold(
            sp: i32,
            sl: i32,
            ip: i32,
            il: i32,
            ep: i32,
            el: i32,
        ) -> i64 {
            $crate::rt::command_fold::<$command>(sp, sl, ip, il, ep, el)
        }
        #[no_mangle]
        pub extern "C" fn reef_command_decide(sp: i32, sl: i32, ip: i32, il: i32) -> i64 {
            $crate::rt::command_decide::<$command>(sp, sl, ip, il)
        }
    };
    ($command:ty, fold_ignores_input) => {
        $crate::command!($command);
        #[no_mangle]
        pub extern "C" fn reef_command_fold_ignores_input() {}
    };
}

/// A projector module from a type implementing [`Projector`]: `reef::projector!(Balances);`.
#[macro_export]
macro_rules! projector {
    ($projector:ty) => {
        $crate::unit_module!();
        #[no_mangle]
        pub extern "C" fn reef_query() -> i64 {
            $crate::rt::projector_query::<$projector>()
        }
        #[no_mangle]
        pub extern "C" fn reef_project(ep: i32, el: i32) -> i32 {
            $crate::rt::project::<$projector>(ep, el)
        }
    };
}

/// An effect module from a type implementing [`Effect`]: `reef::effect!(Alert);`.
#[macro_export]
macro_rules! effect {
    ($effect:ty) => {
        $crate::unit_module!();
        #[no_mangle]
        pub extern "C" fn reef_query() -> i64 {
            $crate::rt::effect_query::<$effect>()
        }
        #[no_mangle]
        pub extern "C" fn reef_partition_key(ep: i32, el: i32) -> i64 {
            $crate::rt::partition_key::<$effect>(ep, el)
        }
        #[no_mangle]
        pub extern "C" fn reef_effect(ep: i32, el: i32) -> i32 {
            $crate::rt::effect::<$effect>(ep, el)
        }
    };
}
