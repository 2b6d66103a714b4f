//! The CBOR codec: exact encodings, round trips, every rejection the host makes, and the
//! value limits (docs/abi.md "Values").

use reef::cbor::{decode, encode};
use reef::{list, record, ActorRef, ErrorKind, Limits, Record, Value};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{:02x}", x)).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn enc(v: impl Into<Value>) -> String {
    hex(&encode(&v.into()).unwrap())
}

fn dec(h: &str) -> reef::Result<Value> {
    decode(&unhex(h), &Limits::ACTOR)
}

fn rejected(h: &str, kind: ErrorKind, words: &str) {
    let e = dec(h).expect_err(h);
    assert_eq!(e.kind(), kind, "{}: {}", h, e);
    assert!(e.message().contains(words), "{}: {:?} lacks {:?}", h, e.message(), words);
}

#[test]
fn ints_use_the_shortest_heads() {
    assert_eq!(enc(0), "00");
    assert_eq!(enc(23), "17");
    assert_eq!(enc(24), "1818");
    assert_eq!(enc(255), "18ff");
    assert_eq!(enc(256), "190100");
    assert_eq!(enc(65536), "1a00010000");
    assert_eq!(enc(4294967296i64), "1b0000000100000000");
    assert_eq!(enc(i64::MAX), "1b7fffffffffffffff");
    assert_eq!(enc(-1), "20");
    assert_eq!(enc(-24), "37");
    assert_eq!(enc(-25), "3818");
    assert_eq!(enc(i64::MIN), "3b7fffffffffffffff");
}

#[test]
fn floats_use_the_shortest_exact_width() {
    assert_eq!(enc(0.0), "f90000");
    assert_eq!(enc(-0.0), "f98000");
    assert_eq!(enc(1.5), "f93e00");
    assert_eq!(enc(65504.0), "f97bff");
    assert_eq!(enc(5.960464477539063e-8), "f90001"); // smallest half subnormal
    assert_eq!(enc(6.097555160522461e-5), "f903ff"); // largest half subnormal
    assert_eq!(enc(100000.0), "fa47c35000");
    assert_eq!(enc(3.4028234663852886e38), "fa7f7fffff");
    assert_eq!(enc(1.1), "fb3ff199999999999a");
    assert_eq!(enc(1e300), "fb7e37e43c8800759c");
    assert_eq!(enc(f64::MIN_POSITIVE / 2.0), "fb0008000000000000");
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let e = encode(&Value::Float(bad)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid);
    }
    // Nested too: the whole encoding fails.
    assert_eq!(encode(&list![1, f64::NAN]).unwrap_err().kind(), ErrorKind::Invalid);
}

#[test]
fn every_half_decodes_to_what_encodes_back_to_it() {
    for bits in 0u16..=0xffff {
        let b = [0xf9, (bits >> 8) as u8, bits as u8];
        match decode(&b, &Limits::ACTOR) {
            Ok(Value::Float(f)) => {
                assert_eq!(encode(&Value::Float(f)).unwrap(), b, "half {:04x}", bits)
            }
            Ok(other) => panic!("half {:04x} gave {:?}", bits, other),
            Err(e) => assert!((bits & 0x7c00) == 0x7c00, "half {:04x}: {}", bits, e), // NaN, inf
        }
    }
}

#[test]
fn other_kinds_encode_as_the_abi_says() {
    assert_eq!(enc(Value::Null), "f6");
    assert_eq!(enc(false), "f4");
    assert_eq!(enc(true), "f5");
    assert_eq!(enc(""), "60");
    assert_eq!(enc("ü"), "62c3bc");
    assert_eq!(enc("a".repeat(24)), format!("7818{}", "61".repeat(24)));
    assert_eq!(enc(Vec::<i64>::new()), "80");
    assert_eq!(enc(vec![1, 2]), "820102");
    assert_eq!(enc(record! {}), "a0");
    // Keys stay in insertion order (the host sorts them).
    assert_eq!(enc(record! {"op" => "add", "a" => 1}), "a2626f7063616464616101");
    let r = ActorRef::parse("AAAAAAAAAAAAAAAAAAAAB").unwrap();
    let h = enc(r);
    assert_eq!(h, format!("da52454546 75 {}", "41".repeat(20) + "42").replace(' ', ""));
    assert_eq!(h.len(), 54); // 27 bytes
}

#[test]
fn longer_heads_and_wider_floats_are_accepted() {
    assert_eq!(dec("1805").unwrap(), Value::Int(5));
    assert_eq!(dec("190005").unwrap(), Value::Int(5));
    assert_eq!(dec("1b0000000000000005").unwrap(), Value::Int(5));
    assert_eq!(dec("3b0000000000000004").unwrap(), Value::Int(-5));
    assert_eq!(dec("fb3ff8000000000000").unwrap(), Value::Float(1.5));
    assert_eq!(dec("fa3fc00000").unwrap(), Value::Float(1.5));
    assert_eq!(dec("7a00000001 61").unwrap(), Value::from("a"));
    assert_eq!(dec("9a00000001 01").unwrap(), list![1]);
    assert_eq!(
        dec("da52454546 7815 414141414141414141414141414141414141414141").unwrap().kind(),
        reef::Kind::Actor
    );
    assert_eq!(dec("1b7fffffffffffffff").unwrap(), Value::Int(i64::MAX));
    assert_eq!(dec("3b7fffffffffffffff").unwrap(), Value::Int(i64::MIN));
}

#[test]
fn everything_outside_the_subset_is_rejected() {
    rejected("", ErrorKind::Malformed, "unexpected end of input");
    rejected("5f 41 61 ff", ErrorKind::Malformed, "indefinite");
    rejected("7f 61 61 ff", ErrorKind::Malformed, "indefinite");
    rejected("9f ff", ErrorKind::Malformed, "indefinite");
    rejected("bf ff", ErrorKind::Malformed, "indefinite");
    rejected("ff", ErrorKind::Malformed, "indefinite");
    rejected("41 61", ErrorKind::Malformed, "byte strings");
    rejected("c0 61 61", ErrorKind::Malformed, "unsupported tag 0");
    rejected("d9d9f7 01", ErrorKind::Malformed, "unsupported tag 55799");
    rejected("f7", ErrorKind::Malformed, "simple value 23");
    rejected("f0", ErrorKind::Malformed, "simple value 16");
    rejected("f8 20", ErrorKind::Malformed, "simple value 32");
    rejected("1c", ErrorKind::Malformed, "reserved");
    rejected("3e", ErrorKind::Malformed, "reserved");
    rejected("fc", ErrorKind::Malformed, "reserved");
    rejected("1b8000000000000000", ErrorKind::Malformed, "int64");
    rejected("3b8000000000000000", ErrorKind::Malformed, "int64");
    rejected("f97e00", ErrorKind::Malformed, "NaN");
    rejected("f97c00", ErrorKind::Malformed, "NaN and infinities");
    rejected("faff800000", ErrorKind::Malformed, "infinities");
    rejected("fb7ff8000000000000", ErrorKind::Malformed, "NaN");
    rejected("62 c3 28", ErrorKind::Malformed, "UTF-8");
    rejected("a1 62 c3 28 01", ErrorKind::Malformed, "UTF-8");
    rejected("61 ed", ErrorKind::Malformed, "UTF-8");
    rejected("63 eda080", ErrorKind::Malformed, "UTF-8"); // a surrogate
    rejected("a2 6161 01 6161 02", ErrorKind::Malformed, "duplicate record key");
    rejected("a1 01 02", ErrorKind::Malformed, "record key is not a text string");
    rejected("01 01", ErrorKind::Malformed, "1 trailing bytes");
    rejected("18", ErrorKind::Malformed, "inside a head");
    rejected("62 61", ErrorKind::Malformed, "exceeds the remaining");
    rejected("83 01 02", ErrorKind::Malformed, "exceeds the remaining");
    rejected("82 01 a1 61 61", ErrorKind::Malformed, "unexpected end");
    rejected("9b 00000000ffffffff 01", ErrorKind::Malformed, "exceeds the remaining");
    rejected("bb 00000000ffffffff 01", ErrorKind::Malformed, "can hold");
    rejected("da52454546 01", ErrorKind::Malformed, "must wrap a text string");
    rejected(
        "da52454546 74 41414141414141414141414141414141414141 41",
        ErrorKind::Malformed,
        "21 characters",
    );
    rejected(
        "da52454546 75 41414141414141414141414141414141414141412e",
        ErrorKind::Malformed,
        "21 characters",
    );
    rejected("da52454547 01", ErrorKind::Malformed, "unsupported tag");
}

#[test]
fn duplicate_keys_are_found_in_large_records_too() {
    let mut b = vec![0xb8, 40];
    for i in 0..40 {
        let k = format!("k{}", if i == 33 { 7 } else { i });
        b.push(0x60 | k.len() as u8);
        b.extend_from_slice(k.as_bytes());
        b.push(0x01);
    }
    let e = decode(&b, &Limits::ACTOR).unwrap_err();
    assert!(e.message().contains("duplicate record key"), "{}", e);
    let fields: Record = (0..40).map(|i| (format!("k{}", i), i)).collect();
    let v = Value::Record(fields);
    assert_eq!(decode(&encode(&v).unwrap(), &Limits::ACTOR).unwrap(), v);
}

fn nested(depth: usize) -> Value {
    let mut v = Value::Int(1);
    for _ in 0..depth {
        v = list![v];
    }
    v
}

#[test]
fn depth_limit() {
    let ok = encode(&nested(32)).unwrap();
    assert_eq!(decode(&ok, &Limits::ACTOR).unwrap(), nested(32));
    let e = decode(&encode(&nested(33)).unwrap(), &Limits::ACTOR).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(e.message(), "value depth exceeds limit max_depth=32");
    assert!(decode(&encode(&nested(72)).unwrap(), &Limits::MODULE).is_ok());
    assert!(decode(&encode(&nested(73)).unwrap(), &Limits::MODULE).is_err());
    // Deep garbage fails cleanly, without exhausting the stack.
    let deep = vec![0x81u8; 100_000];
    assert_eq!(decode(&deep, &Limits::MODULE).unwrap_err().kind(), ErrorKind::Limit);
}

#[test]
fn node_limit() {
    let ok: Value = (0..4095).map(|_| 0).collect(); // 4095 items + the list
    assert!(decode(&encode(&ok).unwrap(), &Limits::ACTOR).is_ok());
    let over: Value = (0..4096).map(|_| 0).collect();
    let e = decode(&encode(&over).unwrap(), &Limits::ACTOR).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(e.message(), "value node count exceeds limit max_nodes=4096");
    // Keys are no nodes: a record of 4095 fields is 4096 nodes.
    let r: Record = (0..4095).map(|i| (format!("{}", i), Value::Null)).collect();
    assert!(decode(&encode(&Value::Record(r)).unwrap(), &Limits::ACTOR).is_ok());
    // Nested containers count every level.
    let tight = Limits { max_nodes: 3, ..Limits::ACTOR };
    assert!(decode(&encode(&list![list![1]]).unwrap(), &tight).is_ok());
    assert!(decode(&encode(&list![list![1, 2]]).unwrap(), &tight).is_err());
}

#[test]
fn string_byte_limit_counts_strings_and_keys_not_refs() {
    let limits = Limits { max_string_bytes: 10, ..Limits::ACTOR };
    assert!(decode(&encode(&Value::from("0123456789")).unwrap(), &limits).is_ok());
    let e = decode(&encode(&Value::from("0123456789a")).unwrap(), &limits).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(e.message(), "value string and key bytes exceed limit max_string_bytes=10");
    assert!(decode(&encode(&record! {"abcde" => "fghij"}).unwrap(), &limits).is_ok());
    assert!(decode(&encode(&record! {"abcde" => "fghijk"}).unwrap(), &limits).is_err());
    let r = ActorRef::parse("AAAAAAAAAAAAAAAAAAAAB").unwrap();
    assert!(decode(&encode(&list![r, r, "0123456789"]).unwrap(), &limits).is_ok());
    // The default: 1 MiB.
    let big = Value::from("x".repeat(1 << 20));
    assert!(decode(&encode(&big).unwrap(), &Limits::ACTOR).is_ok());
    let over = list!["x".repeat(1 << 20), "y"];
    assert_eq!(
        decode(&encode(&over).unwrap(), &Limits::ACTOR).unwrap_err().kind(),
        ErrorKind::Limit
    );
}

#[test]
fn encoded_size_limit() {
    let limits = Limits { max_cbor_bytes: 4, ..Limits::ACTOR };
    assert!(decode(&unhex("63616263"), &limits).is_ok());
    let e = decode(&unhex("6461626364"), &limits).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("max_cbor_bytes=4"), "{}", e);
}

/// A small deterministic generator of arbitrary values.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn value(&mut self, depth: u32) -> Value {
        let pick = self.next() % if depth > 3 { 6 } else { 8 };
        match pick {
            0 => Value::Null,
            1 => Value::Bool(self.next() % 2 == 0),
            2 => Value::Int(match self.next() % 4 {
                0 => (self.next() % 48) as i64 - 24,
                1 => i64::MIN + (self.next() % 3) as i64,
                2 => i64::MAX - (self.next() % 3) as i64,
                _ => self.next() as i64,
            }),
            3 => {
                let f = f64::from_bits(self.next());
                let f = if f.is_finite() { f } else { (self.next() % 1000) as f64 / 8.0 };
                let narrow = f as f32 as f64;
                Value::Float(if self.next() % 2 == 0 || !narrow.is_finite() { f } else { narrow })
            }
            4 => Value::Str(
                ["", "a", "ü€😀", "key", "\u{0}\u{7f}"][(self.next() % 5) as usize]
                    .repeat((self.next() % 30) as usize),
            ),
            5 => Value::Actor(ActorRef::parse(&"_-aZ09".repeat(4)[..21]).unwrap()),
            6 => Value::List((0..self.next() % 5).map(|_| self.value(depth + 1)).collect()),
            _ => {
                let mut r = Record::new();
                for i in 0..self.next() % 5 {
                    r.insert(
                        format!("k{}{}", i, "é".repeat((self.next() % 3) as usize)),
                        self.value(depth + 1),
                    );
                }
                Value::Record(r)
            }
        }
    }
}

#[test]
fn arbitrary_values_round_trip() {
    let mut g = Gen(0x2545_F491_4F6C_DD1D);
    for _ in 0..5000 {
        let v = g.value(0);
        let b = encode(&v).unwrap();
        let back = decode(&b, &Limits::MODULE).unwrap();
        // -0.0 == 0.0 in PartialEq, so compare the bytes as well.
        assert_eq!(back, v);
        assert_eq!(encode(&back).unwrap(), b);
    }
}

#[test]
fn truncations_of_valid_values_are_errors_never_panics() {
    let mut g = Gen(99);
    for _ in 0..500 {
        let b = encode(&g.value(0)).unwrap();
        for cut in 0..b.len() {
            assert!(decode(&b[..cut], &Limits::ACTOR).is_err());
        }
    }
}
