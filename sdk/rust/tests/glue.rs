//! The export glue, run natively through reef::testing: actor handlers (results, errors,
//! panics, unencodable states), commands (init, fold over a page, decide), projectors and
//! effects, and the shapes of events, queries, new events and decisions.

use reef::testing;
use reef::{
    list, record, ActorRef, Decision, Event, Init, NewEvent, Query, QueryItem, Record, Value,
};

fn counter(state: Value, sender: Option<ActorRef>, message: Value) -> Result<Value, reef::Error> {
    let count = state.try_i64()?;
    match message.field("op")?.try_str()? {
        "add" => {
            Ok(count.checked_add(message.field("value")?.try_i64()?).ok_or("overflow")?.into())
        }
        "get" => {
            reef::reply(sender.as_ref(), &count.into())?;
            Ok(state)
        }
        "panic" => panic!("asked to panic at {}", count),
        "nan" => Ok(Value::Float(f64::NAN)),
        "sender" => Ok(sender.map(Value::from).into()),
        other => reef::bail!("unknown op '{}'", other),
    }
}

#[test]
fn actor_handlers_commit_or_fail_with_the_reason() {
    testing::reset();
    let run = |state: Value, message: Value| testing::handle(counter, &state, None, &message);
    assert_eq!(run(1.into(), record! {"op" => "add", "value" => 2}), Ok(Value::Int(3)));
    assert_eq!(run(i64::MAX.into(), record! {"op" => "add", "value" => 1}), Err("overflow".into()));
    assert_eq!(run(1.into(), record! {"op" => "add"}), Err("field 'value' not found".into()));
    assert_eq!(run(1.into(), Value::from(5)), Err("expected record, got int".into()));
    assert_eq!(run("x".into(), record! {"op" => "get"}), Err("expected int, got text".into()));
    assert_eq!(run(1.into(), record! {"op" => "zap"}), Err("unknown op 'zap'".into()));
    assert_eq!(run(7.into(), record! {"op" => "panic"}), Err("panic: asked to panic at 7".into()));
    let nan = run(1.into(), record! {"op" => "nan"}).unwrap_err();
    assert_eq!(nan, "reef: the new state is not a value: a NaN or infinite float is not a value");
}

#[test]
fn actor_handlers_see_the_sender_and_reply_to_it() {
    testing::reset();
    let from = ActorRef::parse("__reply_address_00001").unwrap();
    let get = record! {"op" => "get"};
    assert_eq!(testing::handle(counter, &Value::from(4), Some(&from), &get), Ok(Value::Int(4)));
    let sent = testing::with(|h| h.sends.clone());
    assert_eq!((sent.len(), sent[0].target, sent[0].message.clone()), (1, from, Value::from(4)));
    // No sender: no reply, not an error.
    assert_eq!(testing::handle(counter, &Value::from(4), None, &get), Ok(Value::Int(4)));
    assert_eq!(testing::with(|h| h.sends.len()), 1);
    let who = record! {"op" => "sender"};
    assert_eq!(
        testing::handle(counter, &Value::from(0), Some(&from), &who),
        Ok(Value::Actor(from))
    );
    assert_eq!(testing::handle(counter, &Value::from(0), None, &who), Ok(Value::Null));
}

fn event(position: i64, event_type: &str, tags: &[&str], data: Value) -> Value {
    Event {
        position,
        id: format!("0190a6c8-7f3e-4c3a-9d2e-{:012}", position),
        event_type: event_type.to_owned(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        data,
        timestamp_ms: 1_764_547_200_000 + position,
        ..Event::default()
    }
    .to_value()
}

/// A command that sums the "n" of the events tagged with the input's "key" and accepts when
/// the sum stays at most the input's "max".
struct Sum;

impl reef::Command for Sum {
    fn init(input: &Value) -> reef::Result<Init> {
        Ok(match input.get("key").and_then(Value::as_str) {
            Some(key) => Init::with_query(Query::of_tags([format!("key:{}", key)]), 0),
            None => Init::without_query(0),
        })
    }
    fn fold(state: Value, _input: &Value, event: &Event) -> reef::Result<Value> {
        Ok((state.try_i64()? + event.data.field("n")?.try_i64()?).into())
    }
    fn decide(state: Value, input: &Value) -> reef::Result<Decision> {
        let key = match input.get("key").and_then(Value::as_str) {
            Some(key) => key,
            None => return Ok(Decision::reject("no key")),
        };
        let (sum, max) = (state.try_i64()?, input.field("max")?.try_i64()?);
        if sum > max {
            return Ok(Decision::reject(format!("sum {} is over {}", sum, max)));
        }
        Ok(Decision::accept([NewEvent::new("Checked")
            .tag(format!("key:{}", key))
            .data(record! {"sum" => sum})]))
    }
}

#[test]
fn commands_init_fold_and_decide() {
    let events = [
        event(1, "Added", &["key:a"], record! {"n" => 2}),
        event(2, "Added", &["key:a"], record! {"n" => 3}),
    ];
    let accepted = testing::execute::<Sum>(&record! {"key" => "a", "max" => 10}, &events).unwrap();
    assert_eq!(
        accepted,
        record! {"events" => list![record! {"type" => "Checked", "tags" => vec!["key:a"], "data" => record! {"sum" => 5}}]}
    );
    let rejected = testing::execute::<Sum>(&record! {"key" => "a", "max" => 4}, &events).unwrap();
    assert_eq!(rejected, record! {"error" => "sum 5 is over 4"});
    assert_eq!(testing::execute::<Sum>(&Value::Null, &[]).unwrap(), record! {"error" => "no key"});
    // An Err of fold or decide fails the execution with its message (HTTP 500).
    let bad = [event(1, "Added", &["key:a"], Value::Null)];
    assert_eq!(
        testing::execute::<Sum>(&record! {"key" => "a", "max" => 1}, &bad),
        Err("expected record, got null".into())
    );
    assert_eq!(
        testing::execute::<Sum>(&record! {"key" => "a"}, &[]),
        Err("field 'max' not found".into())
    );
    // A malformed event from the host.
    let broken = [record! {"position" => 1}];
    let e = testing::execute::<Sum>(&record! {"key" => "a", "max" => 1}, &broken).unwrap_err();
    assert_eq!(e, "malformed event from the host: no field 'id'");
}

#[test]
fn events_read_every_field() {
    let mut v = event(7, "T", &["a", "b"], record! {"x" => 1});
    let r = v.as_record_mut().unwrap();
    r.insert("correlation_id", "req-7");
    r.insert("causation_id", "exec-1");
    r.insert("metadata", record! {"minutesAgo" => 5});
    r.insert("unknown_future_field", true);
    let e = Event::from_value(v.clone()).unwrap();
    assert_eq!((e.position, e.event_type.as_str(), e.timestamp_ms), (7, "T", 1_764_547_200_007));
    assert_eq!(e.tags, ["a", "b"]);
    assert!(e.has_tag("b") && !e.has_tag("c"));
    assert_eq!(e.data, record! {"x" => 1});
    assert_eq!(e.correlation_id.as_deref(), Some("req-7"));
    assert_eq!(e.causation_id.as_deref(), Some("exec-1"));
    assert_eq!(e.metadata, Some(Record::new().with("minutesAgo", 5)));
    let plain = Event::from_value(event(1, "T", &[], Value::Null)).unwrap();
    assert_eq!((plain.correlation_id, plain.metadata, plain.data), (None, None, Value::Null));
    let bad = |v: Value| Event::from_value(v).unwrap_err().to_string();
    assert_eq!(bad(Value::from(1)), "malformed event from the host: not a record");
    let mut wrong = v;
    wrong.insert("tags", list![1]).unwrap();
    assert_eq!(bad(wrong.clone()), "malformed event from the host: a tag is no string");
    wrong.insert("position", "x").unwrap();
    assert_eq!(bad(wrong), "malformed event from the host: field 'position' has the wrong kind");
}

#[test]
fn queries_new_events_and_decisions_have_the_host_shapes() {
    assert_eq!(Query::all().to_value(), list![]);
    assert_eq!(Query::of_types(["A", "B"]).to_value(), list![record! {"types" => vec!["A", "B"]}]);
    let q = Query::of_tags(["t:1"]).or(QueryItem::of_types(["A"]).with_tags(["t:2", "t:3"]));
    assert_eq!(
        q.to_value(),
        list![
            record! {"tags" => vec!["t:1"]},
            record! {"types" => vec!["A"], "tags" => vec!["t:2", "t:3"]}
        ]
    );
    assert_eq!(Decision::reject("no").to_value(), record! {"error" => "no"});
    assert_eq!(Decision::accept([]).to_value(), record! {"events" => list![]});
    let e = NewEvent::new("A")
        .tag("x")
        .data(5)
        .encryption_scope("x")
        .metadata(Record::new().with("k", "v"));
    assert_eq!(
        e.to_value(),
        record! {"type" => "A", "tags" => vec!["x"], "data" => 5, "metadata" => record! {"k" => "v"}, "encryption_scope" => "x"}
    );
}

struct Rows;

impl reef::Projector for Rows {
    fn query() -> reef::Result<Query> {
        reef::sql_exec("CREATE TABLE IF NOT EXISTS rows (position INTEGER)", &[])?;
        Ok(Query::of_types(["A"]))
    }
    fn project(event: &Event) -> reef::Result<()> {
        if event.data.is_null() {
            reef::bail!("event {} has no data", event.position);
        }
        reef::sql_exec("INSERT INTO rows VALUES (?1)", &[event.position.into()])?;
        Ok(())
    }
}

struct Notify;

impl reef::Effect for Notify {
    fn query() -> reef::Result<Query> {
        Ok(Query::all())
    }
    fn partition_key(event: &Event) -> reef::Result<Option<String>> {
        Ok(event.tags.first().cloned())
    }
    fn handle(event: &Event) -> reef::Result<()> {
        reef::info!("event {}", event.position);
        reef::append(&[NewEvent::new("Noticed").data(record! {"of" => event.position})])?;
        Ok(())
    }
}

#[test]
fn projectors_and_effects() {
    testing::reset();
    assert_eq!(testing::project::<Rows>(&event(3, "A", &[], record! {"x" => 1})), Ok(()));
    assert_eq!(
        testing::project::<Rows>(&event(4, "A", &[], Value::Null)),
        Err("event 4 has no data".into())
    );
    assert_eq!(
        testing::with(|h| h.sql_execs.clone()),
        [("INSERT INTO rows VALUES (?1)".to_owned(), vec![Value::Int(3)])]
    );
    assert_eq!(<Rows as reef::Projector>::query().unwrap(), Query::of_types(["A"]));

    testing::reset();
    assert_eq!(testing::effect::<Notify>(&event(9, "A", &["t"], Value::Null)), Ok(()));
    assert_eq!(
        testing::with(|h| h.appended.clone()),
        [record! {"type" => "Noticed", "tags" => list![], "data" => record! {"of" => 9}}]
    );
    assert_eq!(testing::with(|h| h.logs[0].1.clone()), "event 9");
    let e = Event::from_value(event(9, "A", &["t"], Value::Null)).unwrap();
    assert_eq!(<Notify as reef::Effect>::partition_key(&e).unwrap().as_deref(), Some("t"));
}
