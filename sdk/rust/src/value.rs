//! Reef Rust SDK: the values that cross the guest edge (docs/abi.md "Values").
//!
//! [`Value`] is Reef's data model: null, bool, int (i64), float (finite f64), string, list,
//! record (text keys, kept in insertion order; the host sorts keys anyway) and actor ref.
//! `From` converts natural Rust types into values (`Value::from(5)`, `"text".into()`, a
//! `Vec<T>`, an `Option<T>`), [`crate::record!`] and [`crate::list!`] build containers, and the
//! accessors read them: `as_*` give an `Option`, `try_*` and [`Value::field`] a typed
//! [`Error`] for `?`. Indexing a value by a key (`message["op"]`) gives the field or `Null`.

use std::fmt;
use std::ops::Index;

use crate::error::{Error, ErrorKind, Result};
pub use crate::record::{ActorRef, Record};

/// One Reef value. Floats must be finite to be encoded (NaN and the infinities are refused
/// with [`ErrorKind::Invalid`]).
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// CBOR null (also what JSON `null` becomes).
    #[default]
    Null,
    /// true or false.
    Bool(bool),
    /// A 64-bit signed integer.
    Int(i64),
    /// A finite 64-bit float.
    Float(f64),
    /// UTF-8 text.
    Str(String),
    /// A list of values.
    List(Vec<Value>),
    /// A record: text keys to values.
    Record(Record),
    /// An actor ref (tag 1380271430 around a 21-character NanoID).
    Actor(ActorRef),
}

/// The kind of a value, for messages ("expected int, got float").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`Value::Null`]
    Null,
    /// [`Value::Bool`]
    Bool,
    /// [`Value::Int`]
    Int,
    /// [`Value::Float`]
    Float,
    /// [`Value::Str`]
    Str,
    /// [`Value::List`]
    List,
    /// [`Value::Record`]
    Record,
    /// [`Value::Actor`]
    Actor,
}

impl Kind {
    /// The English name the C SDK uses: "null", "bool", "int", "float", "text", "list",
    /// "record", "actor ref".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Str => "text",
            Kind::List => "list",
            Kind::Record => "record",
            Kind::Actor => "actor ref",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

static NULL: Value = Value::Null;

fn type_error(expected: Kind, got: &Value) -> Error {
    Error::new(ErrorKind::Type, format!("expected {}, got {}", expected.name(), got.kind().name()))
}

impl Value {
    /// An empty record, to fill with [`Value::insert`].
    pub fn record() -> Value {
        Value::Record(Record::new())
    }

    /// The kind of this value.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Int(_) => Kind::Int,
            Value::Float(_) => Kind::Float,
            Value::Str(_) => Kind::Str,
            Value::List(_) => Kind::List,
            Value::Record(_) => Kind::Record,
            Value::Actor(_) => Kind::Actor,
        }
    }

    /// True for `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// The bool; `None` for every other kind.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The integer; `None` for every other kind (a float is not an int, not even 5.0).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The float, or an int converted to f64 (exact up to 2^53).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    /// The string; `None` for every other kind.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The list's items; `None` for every other kind.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }
    /// The list, to change it; `None` for every other kind.
    pub fn as_list_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }
    /// The record; `None` for every other kind.
    pub fn as_record(&self) -> Option<&Record> {
        match self {
            Value::Record(r) => Some(r),
            _ => None,
        }
    }
    /// The record, to change it; `None` for every other kind.
    pub fn as_record_mut(&mut self) -> Option<&mut Record> {
        match self {
            Value::Record(r) => Some(r),
            _ => None,
        }
    }
    /// The actor ref; `None` for every other kind.
    pub fn as_actor(&self) -> Option<&ActorRef> {
        match self {
            Value::Actor(a) => Some(a),
            _ => None,
        }
    }

    /// The field `key` of a record; `None` when this is no record or has no such field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_record().and_then(|r| r.get(key))
    }

    /// The field `key` of a record. Errors: [`ErrorKind::Type`] when this is no record,
    /// [`ErrorKind::NotFound`] ("field 'key' not found") when it has no such field.
    pub fn field(&self, key: &str) -> Result<&Value> {
        match self {
            Value::Record(r) => r.field(key),
            other => Err(type_error(Kind::Record, other)),
        }
    }

    /// Sets field `key` of a record (replacing an existing one in place); returns the old
    /// value. A `Null` becomes an empty record first. Error [`ErrorKind::Type`] for any
    /// other kind.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: impl Into<Value>,
    ) -> Result<Option<Value>> {
        if self.is_null() {
            *self = Value::record();
        }
        match self {
            Value::Record(r) => Ok(r.insert(key, value)),
            other => Err(type_error(Kind::Record, other)),
        }
    }

    /// The bool, or [`ErrorKind::Type`] ("expected bool, got int").
    pub fn try_bool(&self) -> Result<bool> {
        self.as_bool().ok_or_else(|| type_error(Kind::Bool, self))
    }
    /// The int, or [`ErrorKind::Type`].
    pub fn try_i64(&self) -> Result<i64> {
        self.as_i64().ok_or_else(|| type_error(Kind::Int, self))
    }
    /// The float (or an int as f64), or [`ErrorKind::Type`].
    pub fn try_f64(&self) -> Result<f64> {
        self.as_f64().ok_or_else(|| type_error(Kind::Float, self))
    }
    /// The string, or [`ErrorKind::Type`].
    pub fn try_str(&self) -> Result<&str> {
        self.as_str().ok_or_else(|| type_error(Kind::Str, self))
    }
    /// The list's items, or [`ErrorKind::Type`].
    pub fn try_list(&self) -> Result<&[Value]> {
        self.as_list().ok_or_else(|| type_error(Kind::List, self))
    }
    /// The record, or [`ErrorKind::Type`].
    pub fn try_record(&self) -> Result<&Record> {
        self.as_record().ok_or_else(|| type_error(Kind::Record, self))
    }
    /// The actor ref, or [`ErrorKind::Type`].
    pub fn try_actor(&self) -> Result<&ActorRef> {
        self.as_actor().ok_or_else(|| type_error(Kind::Actor, self))
    }

    /// Encodes this value as CBOR (the ABI's deterministic heads; keys in insertion order).
    /// Error [`ErrorKind::Invalid`] for a NaN or infinite float.
    pub fn to_cbor(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        crate::cbor::encode_into(self, &mut out)?;
        Ok(out)
    }

    /// Decodes one CBOR item under the actor limits of docs/abi.md ([`crate::Limits::ACTOR`]).
    pub fn from_cbor(bytes: &[u8]) -> Result<Value> {
        crate::cbor::decode(bytes, &crate::cbor::Limits::ACTOR)
    }
}

/// `value["key"]`: the field, or `Null` when this is no record or has no such field.
impl Index<&str> for Value {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

/// `value[i]`: the list item, or `Null` when this is no list or `i` is past its end.
impl Index<usize> for Value {
    type Output = Value;
    fn index(&self, i: usize) -> &Value {
        self.as_list().and_then(|l| l.get(i)).unwrap_or(&NULL)
    }
}

/// Values print as JSON-like text: `{"op": "add", "value": 5}`, refs as `@<id>`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{}", b),
            Value::Int(i) => write!(f, "{}", i),
            Value::Float(x) => write!(f, "{:?}", x),
            Value::Str(s) => write!(f, "{:?}", s),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", item)?;
                }
                f.write_str("]")
            }
            Value::Record(r) => {
                f.write_str("{")?;
                for (i, (k, v)) in r.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{:?}: {}", k, v)?;
                }
                f.write_str("}")
            }
            Value::Actor(a) => write!(f, "@{}", a),
        }
    }
}

// ---- Conversions into values ------------------------------------------------------------

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::Int(i64::from(v))
            }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(f64::from(v))
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Str(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Str(v.clone())
    }
}
impl From<ActorRef> for Value {
    fn from(v: ActorRef) -> Value {
        Value::Actor(v)
    }
}
impl From<&ActorRef> for Value {
    fn from(v: &ActorRef) -> Value {
        Value::Actor(*v)
    }
}
impl From<Record> for Value {
    fn from(v: Record) -> Value {
        Value::Record(v)
    }
}
impl From<()> for Value {
    fn from(_: ()) -> Value {
        Value::Null
    }
}
impl From<&Value> for Value {
    fn from(v: &Value) -> Value {
        v.clone()
    }
}
/// `None` is null.
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}
impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::List(v.into_iter().map(Into::into).collect())
    }
}
impl<T: Clone + Into<Value>> From<&[T]> for Value {
    fn from(v: &[T]) -> Value {
        Value::List(v.iter().cloned().map(Into::into).collect())
    }
}
impl<T: Into<Value>> FromIterator<T> for Value {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Value {
        Value::List(iter.into_iter().map(Into::into).collect())
    }
}

/// u64, usize and i128 values convert when they fit an i64 ([`ErrorKind::Range`] otherwise).
macro_rules! try_from_int {
    ($($t:ty),*) => {$(
        impl TryFrom<$t> for Value {
            type Error = Error;
            fn try_from(v: $t) -> Result<Value> {
                i64::try_from(v).map(Value::Int).map_err(|_| {
                    Error::new(ErrorKind::Range, format!("{} does not fit an int64", v))
                })
            }
        }
    )*};
}
try_from_int!(u64, usize, i128, u128, isize);

// ---- Conversions out of values ------------------------------------------------------------

macro_rules! try_into_int {
    ($($t:ty),*) => {$(
        impl TryFrom<&Value> for $t {
            type Error = Error;
            fn try_from(v: &Value) -> Result<$t> {
                let i = v.try_i64()?;
                <$t>::try_from(i).map_err(|_| {
                    Error::new(ErrorKind::Range, format!("{} does not fit {}", i, stringify!($t)))
                })
            }
        }
    )*};
}
try_into_int!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl TryFrom<&Value> for bool {
    type Error = Error;
    fn try_from(v: &Value) -> Result<bool> {
        v.try_bool()
    }
}
impl TryFrom<&Value> for f64 {
    type Error = Error;
    fn try_from(v: &Value) -> Result<f64> {
        v.try_f64()
    }
}
impl TryFrom<&Value> for String {
    type Error = Error;
    fn try_from(v: &Value) -> Result<String> {
        v.try_str().map(str::to_owned)
    }
}
impl TryFrom<Value> for String {
    type Error = Error;
    fn try_from(v: Value) -> Result<String> {
        match v {
            Value::Str(s) => Ok(s),
            other => Err(type_error(Kind::Str, &other)),
        }
    }
}
