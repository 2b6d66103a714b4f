//! Reef Rust SDK: the glue behind the export macros (not part of the API; the macros of
//! lib.rs expand to `#[no_mangle] extern "C"` functions that call these).
//!
//! Memory: the host calls `reef_alloc(len)` exactly once per export call, then copies the
//! inputs into the buffer it returned. That buffer is one `Vec` reused by every call (it only
//! grows, except that a large one is given back when a much smaller call comes); the previous
//! call's result is freed there too, and every value a call decodes or builds is freed when it
//! drops at the call's end. So projector and effect instances, which the host reuses for
//! thousands of events, do not grow per call.
//!
//! Failures: an `Err` from a callback, a panic (through the panic hook installed on the first
//! call) and malformed input from the host all end the call through the `fail` import with
//! the message as the reason. The host starts the next call from a fresh instance after a
//! failed one (docs/abi.md); std's panic bookkeeping relies on that, since it counts panics
//! per instance and, from the third unfinished one on, aborts without calling the hook.

use std::cell::RefCell;
use std::fmt::Display;

use crate::actor::fail;
use crate::cbor::{self, Limits};
use crate::module::{Command, Decision, Effect, Event, Projector, Query};
use crate::record::{ActorRef, Record};
use crate::value::Value;

/// One buffer of the glue. A wasm guest runs on one thread, so plain statics do (cheaper than
/// `thread_local!`, whose lazy set-up would run at every actor invocation, since those start
/// from the initial memory); elsewhere each thread has its own.
struct Buffer(RefCell<Vec<u8>>);

#[cfg(target_arch = "wasm32")]
mod buffers {
    // SAFETY: wasm32-unknown-unknown guests are single-threaded.
    unsafe impl Sync for super::Buffer {}
    pub(super) static INPUT: super::Buffer = super::Buffer(std::cell::RefCell::new(Vec::new()));
    pub(super) static OUTPUT: super::Buffer = super::Buffer(std::cell::RefCell::new(Vec::new()));
    pub(super) fn with<R>(b: &'static super::Buffer, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        f(&mut b.0.borrow_mut())
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod buffers {
    use std::thread::LocalKey;
    thread_local! {
        pub(super) static INPUT: super::Buffer = const { super::Buffer(std::cell::RefCell::new(Vec::new())) };
        pub(super) static OUTPUT: super::Buffer = const { super::Buffer(std::cell::RefCell::new(Vec::new())) };
    }
    pub(super) fn with<R>(
        b: &'static LocalKey<super::Buffer>,
        f: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> R {
        b.with(|b| f(&mut b.0.borrow_mut()))
    }
}

use buffers::{with, INPUT, OUTPUT};

/// A buffer above this size is given back when a call needs at most a quarter of it.
const KEEP_BYTES: usize = 1 << 20;

/// `reef_alloc(len)`: a pointer to `len` writable bytes, or 0 when memory cannot grow.
pub fn alloc(len: i32) -> i32 {
    install_panic_hook();
    with(&OUTPUT, |o| *o = Vec::new());
    let need = len as u32 as usize;
    with(&INPUT, |buf| {
        if buf.capacity() > KEEP_BYTES && need <= buf.capacity() / 4 {
            *buf = Vec::new();
        }
        buf.clear();
        if buf.try_reserve_exact(need.max(16)).is_err() {
            return 0;
        }
        buf.as_mut_ptr() as usize as i32
    })
}

/// The bytes at (ptr, len) that the host passed, inside the buffer of `alloc`.
///
/// # Safety
/// Only for the pairs the host passes to an export (it bounds-checked them and wrote them).
pub unsafe fn bytes<'a>(ptr: i32, len: i32) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr as u32 as usize as *const u8, len as u32 as usize)
    }
}

/// Keeps `result` until the next call and returns it packed: ptr | len << 32.
pub fn out(result: Vec<u8>) -> i64 {
    with(&OUTPUT, |o| {
        *o = result;
        (o.as_ptr() as usize as u32 as u64 | (o.len() as u64) << 32) as i64
    })
}

fn install_panic_hook() {
    #[cfg(target_arch = "wasm32")]
    {
        // One thread per instance: a flag is enough (std::sync::Once costs more code).
        static mut INSTALLED: bool = false;
        // SAFETY: wasm32-unknown-unknown guests are single-threaded.
        if !unsafe { std::mem::replace(&mut INSTALLED, true) } {
            std::panic::set_hook(Box::new(|info| {
                let payload = info.payload();
                let what = match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>())
                {
                    (Some(s), _) => s,
                    (_, Some(s)) => s.as_str(),
                    _ => "panic",
                };
                match info.location() {
                    Some(at) => fail(&format!("panic: {} (at {}:{})", what, at.file(), at.line())),
                    None => fail(&format!("panic: {}", what)),
                }
            }));
        }
    }
}

fn fail_with(e: impl Display) -> ! {
    fail(&e.to_string())
}

fn decode(bytes: &[u8], limits: &Limits, what: &str) -> Value {
    match cbor::decode(bytes, limits) {
        Ok(v) => v,
        Err(e) => fail(&format!("reef: malformed {} from the host: {}", what, e)),
    }
}

fn encode(v: &Value, what: &str) -> Vec<u8> {
    match v.to_cbor() {
        Ok(b) => b,
        Err(e) => fail(&format!("reef: {} is not a value: {}", what, e)),
    }
}

fn event(bytes: &[u8]) -> Event {
    Event::from_value(decode(bytes, &Limits::MODULE, "event")).unwrap_or_else(|e| fail_with(e))
}

// ---- Actors and program units ----------------------------------------------------------------

/// `reef_handle` and the further handlers: state, sender, message -> the new state, as CBOR.
pub fn run_handle<E: Display>(
    f: impl FnOnce(Value, Option<ActorRef>, Value) -> Result<Value, E>,
    state: &[u8],
    sender: &[u8],
    message: &[u8],
) -> Vec<u8> {
    let state = decode(state, &Limits::HOST_INPUT, "state");
    let sender = match decode(sender, &Limits::HOST_INPUT, "sender") {
        Value::Null => None,
        Value::Actor(r) => Some(r),
        other => {
            fail(&format!("reef: the sender is neither null nor an actor ref but {}", other.kind()))
        }
    };
    let message = decode(message, &Limits::HOST_INPUT, "message");
    match f(state, sender, message) {
        Ok(v) => encode(&v, "the new state"),
        Err(e) => fail_with(e),
    }
}

/// `reef_on_shutdown`: state -> the final state, as CBOR.
pub fn run_shutdown<E: Display>(
    f: impl FnOnce(Value) -> Result<Value, E>,
    state: &[u8],
) -> Vec<u8> {
    match f(decode(state, &Limits::HOST_INPUT, "state")) {
        Ok(v) => encode(&v, "the final state"),
        Err(e) => fail_with(e),
    }
}

/// The export `reef_handle` (and every `handler!`): the inputs' (ptr, len) pairs in, the new
/// state packed out.
#[allow(clippy::too_many_arguments)]
pub fn handle<E: Display>(
    f: impl FnOnce(Value, Option<ActorRef>, Value) -> Result<Value, E>,
    sp: i32,
    sl: i32,
    fp: i32,
    fl: i32,
    mp: i32,
    ml: i32,
) -> i64 {
    out(unsafe { run_handle(f, bytes(sp, sl), bytes(fp, fl), bytes(mp, ml)) })
}

/// The export `reef_on_shutdown`.
pub fn shutdown<E: Display>(f: impl FnOnce(Value) -> Result<Value, E>, sp: i32, sl: i32) -> i64 {
    out(unsafe { run_shutdown(f, bytes(sp, sl)) })
}

// ---- Commands -----------------------------------------------------------------------------

/// `reef_command_init`: input -> {"query": query or null, "state": value}, as CBOR.
pub fn run_command_init<C: Command>(input: &[u8]) -> Vec<u8> {
    let input = decode(input, &Limits::MODULE, "input");
    let init = C::init(&input).unwrap_or_else(|e| fail_with(e));
    let query = init.query.as_ref().map_or(Value::Null, Query::to_value);
    encode(
        &Value::Record(Record::with_capacity(2).with("query", query).with("state", init.state)),
        "init's result",
    )
}

/// `reef_command_fold`: state, input and a page of events -> the state after them, as CBOR.
pub fn run_command_fold<C: Command>(state: &[u8], input: &[u8], events: &[u8]) -> Vec<u8> {
    let mut state = decode(state, &Limits::MODULE, "state");
    let input = decode(input, &Limits::MODULE, "input");
    let events = match decode(events, &Limits::MODULE, "events") {
        Value::List(events) => events,
        _ => fail("reef: command fold: events must be a list"),
    };
    for e in events {
        let e = Event::from_value(e).unwrap_or_else(|e| fail_with(e));
        state = C::fold(state, &input, &e).unwrap_or_else(|e| fail_with(e));
    }
    encode(&state, "fold's state")
}

/// `reef_command_decide`: state, input -> {"events": [...]} or {"error": "..."}, as CBOR.
pub fn run_command_decide<C: Command>(state: &[u8], input: &[u8]) -> Vec<u8> {
    let state = decode(state, &Limits::MODULE, "state");
    let input = decode(input, &Limits::MODULE, "input");
    let decision: Decision = C::decide(state, &input).unwrap_or_else(|e| fail_with(e));
    encode(&decision.to_value(), "the decision")
}

/// The export `reef_command_init`.
pub fn command_init<C: Command>(ip: i32, il: i32) -> i64 {
    out(unsafe { run_command_init::<C>(bytes(ip, il)) })
}

/// The export `reef_command_fold`.
pub fn command_fold<C: Command>(sp: i32, sl: i32, ip: i32, il: i32, ep: i32, el: i32) -> i64 {
    out(unsafe { run_command_fold::<C>(bytes(sp, sl), bytes(ip, il), bytes(ep, el)) })
}

/// The export `reef_command_decide`.
pub fn command_decide<C: Command>(sp: i32, sl: i32, ip: i32, il: i32) -> i64 {
    out(unsafe { run_command_decide::<C>(bytes(sp, sl), bytes(ip, il)) })
}

// ---- Projectors and effects -----------------------------------------------------------------

/// `reef_query` of a projector or an effect: the query, as CBOR.
pub fn run_query(f: impl FnOnce() -> crate::Result<Query>) -> Vec<u8> {
    encode(&f().unwrap_or_else(|e| fail_with(e)).to_value(), "the query")
}

/// `reef_project`: one event; returns only when it was handled.
pub fn run_project<P: Projector>(e: &[u8]) {
    P::project(&event(e)).unwrap_or_else(|e| fail_with(e))
}

/// `reef_partition_key`: one event -> a string or null, as CBOR.
pub fn run_partition_key<F: Effect>(e: &[u8]) -> Vec<u8> {
    let key = F::partition_key(&event(e)).unwrap_or_else(|e| fail_with(e));
    encode(&Value::from(key), "the partition key")
}

/// `reef_effect`: one event; returns only when it was handled.
pub fn run_effect<F: Effect>(e: &[u8]) {
    F::handle(&event(e)).unwrap_or_else(|e| fail_with(e))
}

/// The export `reef_query` of a projector.
pub fn projector_query<P: Projector>() -> i64 {
    out(run_query(P::query))
}

/// The export `reef_query` of an effect.
pub fn effect_query<F: Effect>() -> i64 {
    out(run_query(F::query))
}

/// The export `reef_project`: 0 when handled (a failure never returns).
pub fn project<P: Projector>(ep: i32, el: i32) -> i32 {
    unsafe { run_project::<P>(bytes(ep, el)) };
    0
}

/// The export `reef_partition_key`.
pub fn partition_key<F: Effect>(ep: i32, el: i32) -> i64 {
    out(unsafe { run_partition_key::<F>(bytes(ep, el)) })
}

/// The export `reef_effect`: 0 when handled (a failure never returns).
pub fn effect<F: Effect>(ep: i32, el: i32) -> i32 {
    unsafe { run_effect::<F>(bytes(ep, el)) };
    0
}
