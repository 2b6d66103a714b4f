//! Values: conversions from and to Rust types, accessors, typed errors, records, refs.

use reef::{list, record, ActorRef, Error, ErrorKind, Kind, Record, Value};

#[test]
fn natural_types_convert_into_values() {
    assert_eq!(Value::from(5i32), Value::Int(5));
    assert_eq!(Value::from(5u32), Value::Int(5));
    assert_eq!(Value::from(-5i64), Value::Int(-5));
    assert_eq!(Value::from(true), Value::Bool(true));
    assert_eq!(Value::from(2.5), Value::Float(2.5));
    assert_eq!(Value::from(2.5f32), Value::Float(2.5));
    assert_eq!(Value::from("a"), Value::Str("a".into()));
    assert_eq!(Value::from(String::from("a")), Value::Str("a".into()));
    assert_eq!(Value::from(vec![1, 2]), Value::List(vec![Value::Int(1), Value::Int(2)]));
    assert_eq!(Value::from(vec!["a", "b"]), list!["a", "b"]);
    assert_eq!(Value::from(Some(3)), Value::Int(3));
    assert_eq!(Value::from(None::<i64>), Value::Null);
    assert_eq!(Value::from(()), Value::Null);
    assert_eq!(Value::from(&[1u8, 2][..]), list![1, 2]);
    assert_eq!((1..4).collect::<Value>(), list![1, 2, 3]);
    assert_eq!(Value::try_from(u64::MAX).unwrap_err().kind(), ErrorKind::Range);
    assert_eq!(Value::try_from(7usize).unwrap(), Value::Int(7));
    assert_eq!(Value::default(), Value::Null);
}

#[test]
fn values_convert_back_with_typed_errors() {
    let v = Value::from(300);
    assert_eq!(i64::try_from(&v).unwrap(), 300);
    assert_eq!(u16::try_from(&v).unwrap(), 300);
    let e = u8::try_from(&v).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Range);
    assert_eq!(e.to_string(), "300 does not fit u8");
    assert_eq!(u32::try_from(&Value::from(-1)).unwrap_err().kind(), ErrorKind::Range);
    let e = i64::try_from(&Value::from(5.0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Type);
    assert_eq!(e.to_string(), "expected int, got float");
    assert_eq!(String::try_from(Value::from("x")).unwrap(), "x");
    assert_eq!(String::try_from(&Value::Null).unwrap_err().to_string(), "expected text, got null");
    assert!(bool::try_from(&Value::from(true)).unwrap());
    assert_eq!(f64::try_from(&Value::from(2)).unwrap(), 2.0);
}

#[test]
fn accessors() {
    let r = ActorRef::parse("AAAAAAAAAAAAAAAAAAAAB").unwrap();
    let v = record! {"op" => "add", "value" => 5, "target" => r, "ratio" => 0.5, "tags" => vec!["a"], "nothing" => ()};
    assert_eq!(v.get("op").and_then(Value::as_str), Some("add"));
    assert_eq!(v["value"].as_i64(), Some(5));
    assert_eq!(v["value"].as_f64(), Some(5.0));
    assert_eq!(v["ratio"].as_i64(), None);
    assert_eq!(v["target"].as_actor(), Some(&r));
    assert_eq!(v["tags"][0].as_str(), Some("a"));
    assert_eq!(v["tags"][9], Value::Null);
    assert_eq!(v["missing"], Value::Null);
    assert!(v["nothing"].is_null());
    assert_eq!(v.kind(), Kind::Record);
    assert_eq!(Value::from(1).get("x"), None);
    assert_eq!(v.field("value").unwrap(), &Value::Int(5));
    let e = v.field("missing").unwrap_err();
    assert_eq!((e.kind(), e.message()), (ErrorKind::NotFound, "field 'missing' not found"));
    let e = Value::from(1).field("x").unwrap_err();
    assert_eq!((e.kind(), e.message()), (ErrorKind::Type, "expected record, got int"));
    assert_eq!(v["op"].try_i64().unwrap_err().message(), "expected int, got text");
    assert_eq!(v["target"].try_actor().unwrap(), &r);
    assert_eq!(v["tags"].try_list().unwrap().len(), 1);
    assert!(v.try_record().is_ok());
    assert_eq!(Value::Null.try_bool().unwrap_err().message(), "expected bool, got null");
    assert_eq!(Value::from("x").try_str().unwrap(), "x");
    assert_eq!(Value::from(1.5).try_f64().unwrap(), 1.5);
}

#[test]
fn records_keep_insertion_order_and_replace_in_place() {
    let mut r = Record::new();
    assert!(r.insert("b", 1).is_none());
    r.insert("a", 2);
    assert_eq!(r.insert("b", 3), Some(Value::Int(1)));
    assert_eq!(r.keys().collect::<Vec<_>>(), ["b", "a"]);
    assert_eq!(r.len(), 2);
    assert!(r.contains_key("a"));
    assert_eq!(r.remove("b"), Some(Value::Int(3)));
    assert_eq!(r.remove("b"), None);
    *r.get_mut("a").unwrap() = Value::from("x");
    assert_eq!(r.iter().collect::<Vec<_>>(), [("a", &Value::from("x"))]);
    let from_pairs: Record = vec![("k", 1), ("k", 2)].into_iter().collect();
    assert_eq!(from_pairs.len(), 1);
    assert_eq!(from_pairs.get("k"), Some(&Value::Int(2)));
    let mut v = Value::Null;
    v.insert("n", 1).unwrap();
    assert_eq!(v, record! {"n" => 1});
    assert_eq!(Value::from(1).insert("n", 1).unwrap_err().kind(), ErrorKind::Type);
    assert_eq!(record! {"k" => 1, "k" => 2}, record! {"k" => 2});
}

#[test]
fn actor_refs() {
    let r: ActorRef = "abcdefghij_-KLMNOPQ90".parse().unwrap();
    assert_eq!(r.as_str(), "abcdefghij_-KLMNOPQ90");
    assert_eq!(r.to_string(), "abcdefghij_-KLMNOPQ90");
    assert_eq!(format!("{:?}", r), "@abcdefghij_-KLMNOPQ90");
    assert!(!r.is_reply_address());
    assert!(ActorRef::parse("__cdefghij_-KLMNOPQ90").unwrap().is_reply_address());
    for bad in
        ["", "short", "abcdefghij_-KLMNOPQ901", "abcdefghij_-KLMNOPQ9.", "abcdefghij_-KLMNOPQ9ü"]
    {
        let e = ActorRef::parse(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{}", bad);
    }
}

#[test]
fn display_reads_like_json() {
    let r = ActorRef::parse("AAAAAAAAAAAAAAAAAAAAB").unwrap();
    let v = record! {"s" => "a\"b", "l" => list![1, 2.5, true, ()], "r" => r};
    assert_eq!(
        v.to_string(),
        r#"{"s": "a\"b", "l": [1, 2.5, true, null], "r": @AAAAAAAAAAAAAAAAAAAAB}"#
    );
}

#[test]
fn errors_are_std_errors_with_kinds() {
    fn takes_std(_: &dyn std::error::Error) {}
    let e = Error::new(ErrorKind::Timeout, "call: no reply within the timeout");
    takes_std(&e);
    assert_eq!(e.to_string(), "call: no reply within the timeout");
    assert_eq!(Error::of_kind(ErrorKind::Cycle).to_string(), "call cycle");
    let e: Error = "plain".into();
    assert_eq!((e.kind(), e.to_string()), (ErrorKind::Failed, "plain".to_owned()));
    let e = Error::msg(42).context("answer");
    assert_eq!(e.to_string(), "answer: 42");
    fn bails(x: i64) -> reef::Result<i64> {
        if x < 0 {
            reef::bail!("negative: {}", x);
        }
        Ok(x)
    }
    assert_eq!(bails(-1).unwrap_err().to_string(), "negative: -1");
    assert_eq!(bails(1).unwrap(), 1);
}
