//! The counter unit of the example program (examples/program/counter.c) in Rust: a module
//! with no default reef_handle whose handler is exported as "counter_handle", the name a
//! unit's "handler" field gives in program.json.
//!
//! State: an integer (the manifest's initial_state).
//! Messages (records):
//!   {"op": "add"}  -> state + 1, replies {"count": <new state>}
//!   {"op": "get"}  -> state unchanged, replies {"count": <state>}
//!   {"op": "fail"} -> fails the invocation (nothing commits)
//! Anything else is the caller's mistake: it replies {"error": "<why>"} and keeps its state.
//! Replies go to the sender (the host's reply address when a client invokes the unit and
//! waits: `reef invoke counter '{"op": "add"}'`); a message without a sender gets none.

use reef::{record, ActorRef, Value};

fn reply_with(sender: Option<&ActorRef>, reply: Value) -> Result<(), String> {
    reef::reply(sender, &reply).map(|_| ()).map_err(|e| format!("counter: reply failed: {}", e))
}

pub fn handle(state: Value, sender: Option<ActorRef>, message: Value) -> Result<Value, String> {
    let count = state
        .as_i64()
        .ok_or_else(|| format!("counter: state must be an integer, got {}", state.kind()))?;
    let sender = sender.as_ref();
    let refuse =
        |why: String| reply_with(sender, record! {"error" => why}).map(|_| Value::from(count));
    if message.as_record().is_none() {
        return refuse(format!(
            "counter: the message must be an object with a text field \"op\" (add, get or fail), not {}",
            message.kind()
        ));
    }
    match message.get("op").and_then(Value::as_str) {
        None => {
            refuse("counter: the message needs a text field \"op\" (add, get or fail)".to_owned())
        }
        Some("add") => match count.checked_add(1) {
            Some(next) => reply_with(sender, record! {"count" => next}).map(|_| next.into()),
            None => refuse(format!("counter: {} + 1 would overflow", count)),
        },
        Some("get") => reply_with(sender, record! {"count" => count}).map(|_| count.into()),
        Some("fail") => Err("counter: failed on request (op 'fail')".to_owned()),
        Some(op) => refuse(format!("counter: unknown op \"{}\"; expected add, get or fail", op)),
    }
}

reef::unit_module!();
reef::handler!(counter_handle, handle);
