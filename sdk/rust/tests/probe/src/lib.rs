//! The Rust SDK's test guest (tests/wasm_host.mjs runs it in Node). Message {"op": ...}:
//!   echo      -> the message is the new state
//!   panic     -> panics with a formatted message; unwrap / index: std's own panics
//!   err       -> returns an Err
//!   nan       -> returns a NaN state (not a value)
//!   self      -> the state is this actor's ref
//!   send_from -> send_from(sender or null, target, "hi") and reply(sender, "replied")
//!   call      -> call(target, message, timeout_ms): the reply, or {"error": kind}
//!   log       -> logs `text` at `level`; the state is whether it was cut
//!   grow      -> allocates `bytes` bytes, returns their count
//! Also: reef_on_shutdown (state -> {"shut": state}) and a second handler "probe_other".

use reef::{record, ActorRef, Level, Value};

fn handle(state: Value, sender: Option<ActorRef>, message: Value) -> reef::Result<Value> {
    let _ = state;
    match message.field("op")?.try_str()? {
        "echo" => Ok(message),
        "panic" => panic!("probe panic {}", message["n"].as_i64().unwrap_or(0)),
        "unwrap" => Ok(Value::from(None::<i64>.unwrap())),
        "index" => {
            let v = vec![1, 2, 3];
            let i = message["i"].as_i64().unwrap_or(10) as usize;
            Ok(Value::from(v[i]))
        }
        "err" => Err(reef::Error::msg("probe error")),
        "nan" => Ok(Value::Float(f64::NAN)),
        "self" => Ok(reef::self_ref()?.into()),
        "send_from" => {
            let target = message.field("target")?.try_actor()?;
            reef::send_from(sender.as_ref(), target, &"hi".into())?;
            let replied = reef::reply(sender.as_ref(), &"replied".into())?;
            Ok(replied.into())
        }
        "call" => {
            let target = message.field("target")?.try_actor()?;
            let timeout = message["timeout_ms"].as_i64().unwrap_or(1000) as u32;
            match reef::call(target, &message["message"], timeout) {
                Ok(reply) => Ok(record! {"reply" => reply}),
                Err(e) => {
                    Ok(record! {"error" => format!("{:?}", e.kind()), "message" => e.to_string()})
                }
            }
        }
        "log" => {
            let level = Level::from_i32(message["level"].as_i64().unwrap_or(2) as i32)
                .ok_or("bad level")?;
            Ok(reef::log(level, message.field("text")?.try_str()?).is_err().into())
        }
        "grow" => {
            let n = message.field("bytes")?.try_i64()? as usize;
            let v = vec![7u8; n];
            Ok(Value::from(v.iter().filter(|&&b| b == 7).count() as i64))
        }
        other => reef::bail!("probe: unknown op '{}'", other),
    }
}

fn shutdown(state: Value) -> Result<Value, String> {
    Ok(record! {"shut" => state})
}

fn other(_state: Value, _sender: Option<ActorRef>, message: Value) -> Result<Value, String> {
    Ok(record! {"other" => message})
}

reef::actor!(handle, on_shutdown = shutdown);
reef::handler!(probe_other, other);
