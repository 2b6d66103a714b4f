//! Reef Rust SDK: a test double of the host, for `cargo test` on the build machine.
//!
//! Off wasm32 the imports of module "reef" land here. The double keeps one [`MockHost`] per
//! thread (each test runs on its own thread): it checks arguments like the host (codes -1 and
//! -2 of docs/abi.md, the 512-byte log limit, 4,096 sends, call timeouts), records sends,
//! logs, SQL and appends, and answers `self`, `env`, `now_ms`, `random`, `call` and
//! `sql_query` from its fields. `fail` unwinds with a [`Failure`]; [`catch_fail`] turns that
//! into `Err(reason)`. [`handle`] and friends run a handler through the same glue as the
//! wasm exports, with CBOR in and out, so guest crates can unit-test their handlers natively.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};

use crate::actor::Level;
use crate::cbor::{self, Limits};
use crate::record::{ActorRef, Record};
use crate::value::Value;

/// Who a recorded send came from.
#[derive(Clone, Debug, PartialEq)]
pub enum SentAs {
    /// `send`: this actor.
    SelfActor,
    /// `send_from` with an actor ref.
    Actor(ActorRef),
    /// `send_from` with null: the host.
    Host,
}

/// One recorded send.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// Who it came from.
    pub sender: SentAs,
    /// Whom it goes to.
    pub target: ActorRef,
    /// The message.
    pub message: Value,
}

/// A call's answer from [`MockHost::on_call`]: the reply, or an import code (-3 unavailable,
/// -4 timed out, -5 no reply, -6 cycle).
pub type CallAnswer = std::result::Result<Value, i32>;

/// What answers `call(target, message)`.
pub type OnCall = Box<dyn FnMut(&ActorRef, &Value) -> CallAnswer>;

/// What answers `sql_query(sql, params)` with rows.
pub type OnSqlQuery = Box<dyn FnMut(&str, &[Value]) -> Vec<Record>>;

/// The state of the double for the current thread. Fields are public: set them before the
/// code under test runs, read them after.
pub struct MockHost {
    /// What `self` answers (default `devActorRef000000000A`, as `reef wasm handle`).
    pub self_ref: ActorRef,
    /// What `now_ms` answers.
    pub now_ms: i64,
    /// The module's environment variables, for `env`.
    pub env: BTreeMap<String, String>,
    /// Every send, in order.
    pub sends: Vec<Sent>,
    /// Every log line, in order.
    pub logs: Vec<(Level, String)>,
    /// Answers `call(target, message)`; `None` answers -3 (unavailable).
    pub on_call: Option<OnCall>,
    /// Every call made: target and message.
    pub calls: Vec<(ActorRef, Value)>,
    /// Answers `sql_query(sql, params)` with rows; `None` answers no rows.
    pub on_sql_query: Option<OnSqlQuery>,
    /// Every `sql_exec` statement with its params.
    pub sql_execs: Vec<(String, Vec<Value>)>,
    /// What `sql_exec` returns (rows changed).
    pub sql_exec_result: i64,
    /// Every appended new event, in order; `append` returns its count as the position.
    pub appended: Vec<Value>,
    reply: Option<Vec<u8>>,
    random_counter: u64,
}

impl Default for MockHost {
    fn default() -> MockHost {
        MockHost {
            self_ref: ActorRef::parse("devActorRef000000000A").unwrap(),
            now_ms: 1_764_547_200_000,
            env: BTreeMap::new(),
            sends: Vec::new(),
            logs: Vec::new(),
            on_call: None,
            calls: Vec::new(),
            on_sql_query: None,
            sql_execs: Vec::new(),
            sql_exec_result: 1,
            appended: Vec::new(),
            reply: None,
            random_counter: 0,
        }
    }
}

thread_local! {
    static HOST: RefCell<MockHost> = RefCell::new(MockHost::default());
    static CATCHING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Resets this thread's double to its defaults.
pub fn reset() {
    HOST.with(|h| *h.borrow_mut() = MockHost::default());
}

/// Runs `f` on this thread's double (to set it up or read what was recorded).
pub fn with<R>(f: impl FnOnce(&mut MockHost) -> R) -> R {
    HOST.with(|h| f(&mut h.borrow_mut()))
}

/// The panic payload of the double's `fail`: the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure(pub String);

/// Runs `f`; `Err(reason)` when it called `fail` (directly, or through an `Err` of a handler)
/// or panicked (then the reason is "panic: <message>", as the wasm panic hook says it, without
/// the location), just as either ends an invocation on wasm.
pub fn catch_fail<R>(f: impl FnOnce() -> R) -> std::result::Result<R, String> {
    // Panics caught here are results, not noise: the hook stays quiet for them.
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(|c| c.get()) == 0 {
                previous(info);
            }
        }));
    });
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    match result {
        Ok(r) => Ok(r),
        Err(payload) => Err(match payload.downcast::<Failure>() {
            Ok(failure) => failure.0,
            Err(other) => match (other.downcast_ref::<&str>(), other.downcast_ref::<String>()) {
                (Some(s), _) => format!("panic: {}", s),
                (_, Some(s)) => format!("panic: {}", s),
                _ => "panic".to_owned(),
            },
        }),
    }
}

fn roundtrip(bytes: Vec<u8>, limits: &Limits) -> Value {
    cbor::decode(&bytes, limits).expect("the glue returned a value the host would refuse")
}

/// Runs an actor handler like the `reef_handle` export does: inputs encoded to CBOR, the
/// result encoded and decoded again. `Err(reason)` when the invocation failed.
pub fn handle<E: std::fmt::Display>(
    f: fn(Value, Option<ActorRef>, Value) -> std::result::Result<Value, E>,
    state: &Value,
    sender: Option<&ActorRef>,
    message: &Value,
) -> std::result::Result<Value, String> {
    let (s, m) = (state.to_cbor().unwrap(), message.to_cbor().unwrap());
    let from = Value::from(sender.copied()).to_cbor().unwrap();
    catch_fail(|| roundtrip(crate::rt::run_handle(f, &s, &from, &m), &Limits::ACTOR))
}

/// Runs a command's init, fold (over `events`, one page) and decide like the host does for
/// one execution; returns the decision as a value ({"events": [...]} or {"error": "..."}).
pub fn execute<C: crate::module::Command>(
    input: &Value,
    events: &[Value],
) -> std::result::Result<Value, String> {
    let i = input.to_cbor().unwrap();
    catch_fail(|| {
        let init = roundtrip(crate::rt::run_command_init::<C>(&i), &Limits::MODULE);
        let mut state = init["state"].to_cbor().unwrap();
        if !events.is_empty() {
            let page = Value::from(events.to_vec()).to_cbor().unwrap();
            state = crate::rt::run_command_fold::<C>(&state, &i, &page);
        }
        roundtrip(crate::rt::run_command_decide::<C>(&state, &i), &Limits::MODULE)
    })
}

/// Runs a projector's `project` on one event value, like the `reef_project` export.
pub fn project<P: crate::module::Projector>(event: &Value) -> std::result::Result<(), String> {
    let e = event.to_cbor().unwrap();
    catch_fail(|| crate::rt::run_project::<P>(&e))
}

/// Runs an effect's `handle` on one event value, like the `reef_effect` export.
pub fn effect<F: crate::module::Effect>(event: &Value) -> std::result::Result<(), String> {
    let e = event.to_cbor().unwrap();
    catch_fail(|| crate::rt::run_effect::<F>(&e))
}

/// The host side of the imports, checking arguments like docs/abi.md says.
#[allow(clippy::missing_safety_doc)]
pub(crate) mod double {
    use super::*;

    unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
        if len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(ptr, len)
        }
    }

    /// Copies `data` into (ptr, cap) when it fits; returns its length.
    unsafe fn write_out(data: &[u8], ptr: *mut u8, cap: usize) -> i32 {
        if data.len() <= cap && !data.is_empty() {
            std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len());
        }
        data.len() as i32
    }

    /// A value from the guest: -1 when malformed, -2 over a limit.
    fn value(b: &[u8]) -> std::result::Result<Value, i32> {
        cbor::decode(b, &Limits::ACTOR).map_err(|e| match e.kind() {
            crate::ErrorKind::Limit => -2,
            _ => -1,
        })
    }

    fn actor(b: &[u8]) -> std::result::Result<ActorRef, i32> {
        match value(b)? {
            Value::Actor(a) => Ok(a),
            _ => Err(-1),
        }
    }

    fn record_send(sender: SentAs, target: &[u8], msg: &[u8]) -> i32 {
        let sent = match (actor(target), value(msg)) {
            (Ok(target), Ok(message)) => Sent { sender, target, message },
            (Err(rc), _) | (_, Err(rc)) => return rc,
        };
        with(|h| {
            if h.sends.len() >= 4096 {
                return -2;
            }
            h.sends.push(sent);
            0
        })
    }

    pub unsafe fn send(tp: *const u8, tl: usize, mp: *const u8, ml: usize) -> i32 {
        record_send(SentAs::SelfActor, bytes(tp, tl), bytes(mp, ml))
    }

    pub unsafe fn send_from(
        sp: *const u8,
        sl: usize,
        tp: *const u8,
        tl: usize,
        mp: *const u8,
        ml: usize,
    ) -> i32 {
        let sender = match value(bytes(sp, sl)) {
            Ok(Value::Null) => SentAs::Host,
            Ok(Value::Actor(a)) => SentAs::Actor(a),
            Ok(_) => return -1,
            Err(rc) => return rc,
        };
        record_send(sender, bytes(tp, tl), bytes(mp, ml))
    }

    pub unsafe fn call(tp: *const u8, tl: usize, mp: *const u8, ml: usize, timeout_ms: i32) -> i32 {
        let (target, message) = match (actor(bytes(tp, tl)), value(bytes(mp, ml))) {
            (Ok(t), Ok(m)) => (t, m),
            (Err(rc), _) | (_, Err(rc)) => return rc,
        };
        if !(1..=600_000).contains(&timeout_ms) {
            return -1;
        }
        let mut answer = with(|h| {
            h.calls.push((target, message.clone()));
            h.reply = None;
            h.on_call.take()
        });
        let result = match answer.as_mut() {
            Some(f) => f(&target, &message),
            None => Err(-3),
        };
        with(|h| {
            h.on_call = answer;
            match result {
                Ok(reply) => {
                    let b = reply.to_cbor().expect("on_call answered an unencodable value");
                    let n = b.len() as i32;
                    h.reply = Some(b);
                    n
                }
                Err(code) => code,
            }
        })
    }

    pub unsafe fn call_reply(ptr: *mut u8, cap: usize) -> i32 {
        match with(|h| h.reply.clone()) {
            Some(b) => write_out(&b, ptr, cap),
            None => -1,
        }
    }

    pub unsafe fn log(level: i32, mp: *const u8, ml: usize) -> i32 {
        let msg = bytes(mp, ml);
        let level = match Level::from_i32(level) {
            Some(l) => l,
            None => return -1,
        };
        if msg.len() > crate::actor::LOG_MAX {
            return -2;
        }
        match std::str::from_utf8(msg) {
            Ok(text) => with(|h| h.logs.push((level, text.to_owned()))),
            Err(_) => return -1,
        }
        0
    }

    pub unsafe fn self_(ptr: *mut u8, cap: usize) -> i32 {
        let mut b = Vec::new();
        cbor::write_actor(&mut b, &with(|h| h.self_ref));
        write_out(&b, ptr, cap)
    }

    pub unsafe fn fail(mp: *const u8, ml: usize) -> ! {
        let reason = String::from_utf8_lossy(bytes(mp, ml)).into_owned();
        panic::panic_any(Failure(reason))
    }

    pub unsafe fn now_ms() -> i64 {
        with(|h| h.now_ms)
    }

    pub unsafe fn random(ptr: *mut u8, len: usize) -> i32 {
        if len > 65_536 {
            return -2;
        }
        let seed = with(|h| {
            h.random_counter += 1;
            h.random_counter
        });
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for i in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *ptr.add(i) = x as u8;
        }
        0
    }

    pub unsafe fn env(kp: *const u8, kl: usize, op: *mut u8, cap: usize) -> i32 {
        let key = String::from_utf8_lossy(bytes(kp, kl)).into_owned();
        match with(|h| h.env.get(&key).cloned()) {
            Some(v) => write_out(v.as_bytes(), op, cap),
            None => -6,
        }
    }

    fn sql_args(sql: &[u8], params: &[u8]) -> (String, Vec<Value>) {
        let sql = std::str::from_utf8(sql).expect("SQL must be UTF-8").to_owned();
        match cbor::decode(params, &Limits::MODULE) {
            Ok(Value::List(items)) => (sql, items),
            other => panic!("sql params must be a CBOR list, got {:?}", other),
        }
    }

    pub unsafe fn sql_exec(sp: *const u8, sl: usize, pp: *const u8, pl: usize) -> i64 {
        let (sql, params) = sql_args(bytes(sp, sl), bytes(pp, pl));
        with(|h| {
            h.sql_execs.push((sql, params));
            h.sql_exec_result
        })
    }

    pub unsafe fn sql_query(
        sp: *const u8,
        sl: usize,
        pp: *const u8,
        pl: usize,
        op: *mut u8,
        cap: usize,
    ) -> i32 {
        let (sql, params) = sql_args(bytes(sp, sl), bytes(pp, pl));
        let mut answer = with(|h| h.on_sql_query.take());
        let rows = match answer.as_mut() {
            Some(f) => f(&sql, &params),
            None => Vec::new(),
        };
        with(|h| h.on_sql_query = answer);
        let b =
            Value::from(rows.into_iter().map(Value::Record).collect::<Vec<_>>()).to_cbor().unwrap();
        write_out(&b, op, cap)
    }

    pub unsafe fn append(ep: *const u8, el: usize) -> i64 {
        let events = match cbor::decode(bytes(ep, el), &Limits::MODULE) {
            Ok(Value::List(items)) => items,
            other => panic!("append takes a CBOR list of new events, got {:?}", other),
        };
        with(|h| {
            h.appended.extend(events);
            h.appended.len() as i64
        })
    }
}
