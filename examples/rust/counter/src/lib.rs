//! The counter actor of spec 001 in Rust: the same behaviour as examples/counter/counter.c.
//!
//! State: an integer.
//! Messages (records):
//!   {"op": "add",  "value": N}               -> state + N
//!   {"op": "send", "value": N, "target": @A} -> sends {"op": "add", "value": N} to actor A;
//!                                               state + 1
//!   {"op": "get"}                            -> replies with the state to the sender (an
//!                                               actor, or a caller); state unchanged
//! Anything else fails the invocation with a reason, so nothing commits; so does a sum that
//! would overflow an int64.

use reef::{record, ActorRef, Error, ErrorKind, Value};

/// The integer field "value", or an error naming the op that needed it.
fn value_of(message: &Value, op: &str) -> Result<i64, String> {
    let why = match message.get("value") {
        Some(Value::Int(value)) => return Ok(*value),
        Some(_) => ErrorKind::Type.description(),
        None => ErrorKind::NotFound.description(),
    };
    Err(format!("counter: op '{}' needs an integer field 'value' ({})", op, why))
}

fn add(count: i64, value: i64) -> Result<i64, String> {
    count
        .checked_add(value)
        .ok_or_else(|| format!("counter: {} + {} overflows int64", count, value))
}

fn describe(e: Error) -> String {
    e.kind().description().to_owned()
}

pub fn handle(state: Value, sender: Option<ActorRef>, message: Value) -> Result<Value, String> {
    let count = state
        .as_i64()
        .ok_or_else(|| format!("counter: state must be an integer, got {}", state.kind().name()))?;
    let op = message
        .get("op")
        .and_then(Value::as_str)
        .ok_or("counter: message must be a record with a text field 'op' (add, send or get)")?;
    match op {
        "add" => Ok(add(count, value_of(&message, op)?)?.into()),
        "send" => {
            let value = value_of(&message, op)?;
            let target = message
                .get("target")
                .and_then(Value::as_actor)
                .ok_or("counter: op 'send' needs an actor ref field 'target'")?;
            reef::send(target, &record! {"op" => "add", "value" => value})
                .map_err(|e| format!("counter: send to {} failed: {}", target, describe(e)))?;
            Ok(add(count, 1)?.into())
        }
        "get" => {
            // A message from the host (no sender) has no one to reply to: nothing to do.
            reef::reply(sender.as_ref(), &Value::from(count))
                .map_err(|e| format!("counter: reply failed: {}", describe(e)))?;
            Ok(count.into())
        }
        _ => Err(format!("counter: unknown op '{}'; expected add, send or get", op)),
    }
}

reef::actor!(handle);

#[cfg(test)]
mod tests {
    // Natively (`cargo test`), reef::testing plays the host.
    use super::handle;
    use reef::testing::{self, SentAs};
    use reef::{record, ActorRef, Value};

    #[test]
    fn add_send_get() {
        testing::reset();
        let run =
            |state: i64, message: Value| testing::handle(handle, &state.into(), None, &message);
        assert_eq!(run(1, record! {"op" => "add", "value" => 2}), Ok(Value::Int(3)));
        let target = ActorRef::parse("AAAAAAAAAAAAAAAAAAAAB").unwrap();
        assert_eq!(
            run(1, record! {"op" => "send", "value" => 5, "target" => target}),
            Ok(Value::Int(2))
        );
        let sent = testing::with(|host| host.sends.clone());
        assert_eq!(sent[0].sender, SentAs::SelfActor);
        assert_eq!(sent[0].message, record! {"op" => "add", "value" => 5});
        let caller = ActorRef::parse("__caller_000000000001").unwrap();
        let got = testing::handle(handle, &7.into(), Some(&caller), &record! {"op" => "get"});
        assert_eq!(got, Ok(Value::Int(7)));
        assert_eq!(testing::with(|host| host.sends[1].message.clone()), Value::Int(7));
    }

    #[test]
    fn failures() {
        let run = |state: Value, message: Value| testing::handle(handle, &state, None, &message);
        assert_eq!(
            run(i64::MAX.into(), record! {"op" => "add", "value" => 1}),
            Err("counter: 9223372036854775807 + 1 overflows int64".to_owned())
        );
        assert_eq!(
            run(1.into(), record! {"op" => "add"}),
            Err("counter: op 'add' needs an integer field 'value' (field not found)".to_owned())
        );
        assert_eq!(
            run("x".into(), record! {"op" => "get"}),
            Err("counter: state must be an integer, got text".to_owned())
        );
    }
}
