//! The host functions through the test double: sends, replies, calls and their error codes,
//! self, logs (the 512-byte cut), fail, and the module services with the "call again with a
//! buffer of the returned length" protocol.

use reef::testing::{self, SentAs};
use reef::{list, record, ActorRef, ErrorKind, Level, NewEvent, Record, Value};

fn actor(c: char) -> ActorRef {
    ActorRef::parse(&c.to_string().repeat(21)).unwrap()
}

#[test]
fn send_send_from_and_reply() {
    testing::reset();
    let (a, b) = (actor('a'), actor('b'));
    reef::send(&a, &record! {"op" => "add", "value" => 1}).unwrap();
    reef::send_from(Some(&b), &a, &Value::from(2)).unwrap();
    reef::send_from(None, &a, &Value::from(3)).unwrap();
    assert!(reef::reply(Some(&b), &Value::from(4)).unwrap());
    assert!(!reef::reply(None, &Value::from(5)).unwrap());
    let sent = testing::with(|h| h.sends.clone());
    assert_eq!(sent.len(), 4);
    assert_eq!(
        (sent[0].sender.clone(), sent[0].target, sent[0].message.clone()),
        (SentAs::SelfActor, a, record! {"op" => "add", "value" => 1})
    );
    assert_eq!(sent[1].sender, SentAs::Actor(b));
    assert_eq!(sent[2].sender, SentAs::Host);
    assert_eq!((sent[3].target, sent[3].message.clone()), (b, Value::from(4)));
}

#[test]
fn send_errors() {
    testing::reset();
    let a = actor('a');
    assert_eq!(reef::send(&a, &Value::Float(f64::NAN)).unwrap_err().kind(), ErrorKind::Invalid);
    // Over the actor value limits: the host says -2.
    let deep = (0..40).fold(Value::Null, |v, _| list![v]);
    let e = reef::send(&a, &deep).unwrap_err();
    assert_eq!((e.kind(), e.message()), (ErrorKind::Limit, "send: limit exceeded"));
    for _ in 0..4096 {
        reef::send(&a, &Value::Null).unwrap();
    }
    assert_eq!(reef::send(&a, &Value::Null).unwrap_err().kind(), ErrorKind::Limit);
}

#[test]
fn calls_return_the_reply_or_a_typed_error() {
    testing::reset();
    let (a, b, c, d, e, f) =
        (actor('a'), actor('b'), actor('c'), actor('d'), actor('e'), actor('f'));
    testing::with(|h| {
        h.on_call = Some(Box::new(move |target, message| match target.as_str().as_bytes()[0] {
            b'a' => Ok(record! {"echo" => message.clone(), "big" => "x".repeat(5000)}),
            b'b' => Err(-4),
            b'c' => Err(-5),
            b'd' => Err(-6),
            _ => Err(-3),
        }))
    });
    let reply = reef::call(&a, &Value::from(7), 1000).unwrap();
    assert_eq!(reply["echo"], Value::from(7));
    assert_eq!(reply["big"].as_str().unwrap().len(), 5000);
    let kind = |t: &ActorRef| reef::call(t, &Value::Null, 1000).unwrap_err().kind();
    assert_eq!(kind(&b), ErrorKind::Timeout);
    assert_eq!(kind(&c), ErrorKind::NoReply);
    assert_eq!(kind(&d), ErrorKind::Cycle);
    assert_eq!(kind(&e), ErrorKind::Unavailable);
    let err = reef::call(&f, &Value::Null, 1000).unwrap_err();
    assert_eq!(err.to_string(), "call to fffffffffffffffffffff: the target took no message");
    assert_eq!(reef::call(&a, &Value::Null, 0).unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(reef::call(&a, &Value::Null, 600_001).unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(
        reef::call(&a, &Value::Float(f64::INFINITY), 10).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    let deep = (0..40).fold(Value::Null, |v, _| list![v]);
    assert_eq!(reef::call(&a, &deep, 10).unwrap_err().kind(), ErrorKind::Limit);
    assert!(reef::call(&a, &Value::Null, 600_000).is_ok());
    // The calls that reached the host (not those refused before it or with -2).
    assert_eq!(testing::with(|h| h.calls.len()), 7);
}

#[test]
fn self_ref() {
    testing::reset();
    testing::with(|h| h.self_ref = actor('s'));
    assert_eq!(reef::self_ref().unwrap(), actor('s'));
}

#[test]
fn logs_at_every_level_and_cut_long_messages() {
    testing::reset();
    reef::trace!("t {}", 1);
    reef::debug!("d");
    reef::info!("i {}", "x");
    reef::warn!("w");
    reef::error!("e");
    reef::fatal!("f");
    let levels: Vec<Level> = testing::with(|h| h.logs.iter().map(|l| l.0).collect());
    assert_eq!(
        levels,
        [Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Error, Level::Fatal]
    );
    assert_eq!(testing::with(|h| h.logs[0].1.clone()), "t 1");

    testing::reset();
    assert!(reef::log(Level::Info, &"a".repeat(512)).is_ok());
    let long = "é".repeat(400); // 800 bytes
    let e = reef::log(Level::Warn, &long).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    let logged = testing::with(|h| h.logs[1].1.clone());
    assert!(logged.len() <= 512, "{}", logged.len());
    assert!(logged.ends_with(" [cut: 800 bytes in all]"), "{}", logged);
    assert!(logged.starts_with("éé"));
    // Cut on a character boundary: 512 - 24 = 488 bytes of text, 244 whole characters.
    assert_eq!(logged.len(), 488 + " [cut: 800 bytes in all]".len());
    let (short, cut) = reef::cut_for_log("short");
    assert_eq!((short.as_ref(), cut), ("short", false));
    // An odd split: a 3-byte character across the cut is left out whole.
    let odd = format!("{}{}", "a".repeat(486), "€".repeat(20));
    let (text, cut) = reef::cut_for_log(&odd);
    assert!(cut);
    assert_eq!(text, format!("{} [cut: 546 bytes in all]", "a".repeat(486)));
}

#[test]
fn fail_ends_the_invocation_with_the_reason() {
    let r = testing::catch_fail(|| -> i32 { reef::fail("stop: 42") });
    assert_eq!(r, Err("stop: 42".to_owned()));
    assert_eq!(testing::catch_fail(|| 5), Ok(5));
    assert_eq!(
        testing::catch_fail(|| -> i32 { panic!("boom {}", 1) }),
        Err("panic: boom 1".to_owned())
    );
}

#[test]
fn module_services() {
    testing::reset();
    testing::with(|h| {
        h.now_ms = 1234;
        h.env.insert("SHORT".into(), "v".into());
        h.env.insert("LONG".into(), "ü".repeat(300)); // 600 bytes: over the first 256-byte buffer
        h.on_sql_query = Some(Box::new(|sql, params| {
            assert_eq!(sql, "SELECT * FROM t WHERE a = ?1");
            let n = params[0].as_i64().unwrap() as usize;
            (0..n).map(|i| Record::new().with("i", i as i64).with("pad", "p".repeat(100))).collect()
        }));
    });
    assert_eq!(reef::now_ms(), 1234);
    assert_eq!(reef::env("SHORT").as_deref(), Some("v"));
    assert_eq!(reef::env("LONG").unwrap(), "ü".repeat(300));
    assert_eq!(reef::env("NONE"), None);

    let mut buf = [0u8; 32];
    reef::random(&mut buf).unwrap();
    assert!(buf.iter().any(|&b| b != 0));
    assert_ne!(reef::random_u64(), reef::random_u64());
    assert_eq!(reef::random(&mut vec![0u8; 65_537]).unwrap_err().kind(), ErrorKind::Limit);

    assert_eq!(reef::sql_exec("CREATE TABLE t (a)", &[]).unwrap(), 1);
    assert_eq!(
        reef::sql_exec("INSERT INTO t VALUES (?1, ?2)", &["x".into(), Value::Null]).unwrap(),
        1
    );
    let execs = testing::with(|h| h.sql_execs.clone());
    assert_eq!(
        execs[1],
        ("INSERT INTO t VALUES (?1, ?2)".to_owned(), vec![Value::from("x"), Value::Null])
    );
    assert_eq!(
        reef::sql_exec("x", &[Value::Float(f64::NAN)]).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    // 25 params: a list head of two bytes.
    let many: Vec<Value> = (0..25).map(Value::from).collect();
    reef::sql_exec("many", &many).unwrap();
    assert_eq!(testing::with(|h| h.sql_execs[2].1.len()), 25);

    let rows = reef::sql_query("SELECT * FROM t WHERE a = ?1", &[2.into()]).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].get("i"), Some(&Value::Int(1)));
    // Rows past the first 4 KiB buffer: asked again with the length the host returned.
    let rows = reef::sql_query("SELECT * FROM t WHERE a = ?1", &[100.into()]).unwrap();
    assert_eq!(rows.len(), 100);
    assert!(reef::sql_query("SELECT * FROM t WHERE a = ?1", &[0.into()]).unwrap().is_empty());

    let events = [
        NewEvent::new("A").tag("t:1").data(record! {"x" => 1}),
        NewEvent::new("B")
            .tags(["t:1", "alert"])
            .encryption_scope("t:1")
            .metadata(Record::new().with("m", true)),
    ];
    assert_eq!(reef::append(&events).unwrap(), 2);
    let appended = testing::with(|h| h.appended.clone());
    assert_eq!(
        appended[0],
        record! {"type" => "A", "tags" => vec!["t:1"], "data" => record! {"x" => 1}}
    );
    assert_eq!(
        appended[1],
        record! {"type" => "B", "tags" => vec!["t:1", "alert"], "data" => (), "metadata" => record! {"m" => true}, "encryption_scope" => "t:1"}
    );
}
