//! Reef Rust SDK: records (text keys in insertion order) and actor refs.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};
use crate::value::Value;

/// A record: fields with distinct text keys, kept in the order they were inserted (the host
/// sorts keys when it stores or compares values, so the order never matters to it).
/// Lookups are linear scans: records at the guest edge are small.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Record {
    fields: Vec<(String, Value)>,
}

impl Record {
    /// An empty record.
    pub fn new() -> Record {
        Record { fields: Vec::new() }
    }

    /// An empty record with room for `n` fields.
    pub fn with_capacity(n: usize) -> Record {
        Record { fields: Vec::with_capacity(n) }
    }

    /// A record of these fields, which the caller guarantees to have distinct keys (the
    /// decoder checks that itself).
    pub(crate) fn from_fields_unchecked(fields: Vec<(String, Value)>) -> Record {
        Record { fields }
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True when the record has no field.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The value of field `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of field `key` for changing it, if any.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of field `key`, or [`ErrorKind::NotFound`] ("field 'key' not found").
    pub fn field(&self, key: &str) -> Result<&Value> {
        self.get(key)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("field '{}' not found", key)))
    }

    /// True when the record has field `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets field `key`: replaces the value in place when the key exists (returning the old
    /// value), else appends the field.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        let key = key.into();
        let value = value.into();
        match self.get_mut(&key) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => {
                self.fields.push((key, value));
                None
            }
        }
    }

    /// The same record with field `key` set (builder style).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Record {
        self.insert(key, value);
        self
    }

    /// Removes field `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.fields.iter().position(|(k, _)| k == key)?;
        Some(self.fields.remove(at).1)
    }

    /// The fields in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The keys in insertion order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| k.as_str())
    }
}

impl IntoIterator for Record {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.fields.into_iter()
    }
}

/// Later fields replace earlier ones with the same key.
impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for Record {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Record {
        let mut r = Record::new();
        for (k, v) in iter {
            r.insert(k, v);
        }
        r
    }
}

/// Length of an actor ref: 21 characters of the NanoID alphabet `A-Za-z0-9_-`.
pub const ACTOR_REF_LEN: usize = 21;

/// An actor's address: 21 characters of the NanoID alphabet. Refs that begin with `__` are
/// reply addresses (a caller waiting in `call`, or a client invoking a unit).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorRef([u8; ACTOR_REF_LEN]);

/// For each byte: whether it belongs to the NanoID alphabet (one load per character).
static NANOID: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        b += 1;
    }
    table
};

pub(crate) fn is_nanoid_byte(b: u8) -> bool {
    NANOID[b as usize]
}

impl ActorRef {
    /// Parses a ref from its 21 characters. Error [`ErrorKind::Invalid`] for another length
    /// or a character outside `A-Za-z0-9_-`.
    pub fn parse(id: &str) -> Result<ActorRef> {
        ActorRef::from_bytes(id.as_bytes()).ok_or_else(|| {
            Error::new(
                ErrorKind::Invalid,
                format!("actor ref must be 21 characters of A-Za-z0-9_-, not \"{}\"", id),
            )
        })
    }

    pub(crate) fn from_bytes(b: &[u8]) -> Option<ActorRef> {
        if b.len() != ACTOR_REF_LEN || !b.iter().fold(true, |ok, &c| ok & is_nanoid_byte(c)) {
            return None;
        }
        let mut id = [0u8; ACTOR_REF_LEN];
        id.copy_from_slice(b);
        Some(ActorRef(id))
    }

    /// The 21 characters.
    pub fn as_str(&self) -> &str {
        // Only NanoID bytes (ASCII) are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("")
    }

    /// True for a reply address (begins with `__`): no actor has one.
    pub fn is_reply_address(&self) -> bool {
        self.0[0] == b'_' && self.0[1] == b'_'
    }
}

impl FromStr for ActorRef {
    type Err = Error;
    fn from_str(s: &str) -> Result<ActorRef> {
        ActorRef::parse(s)
    }
}

impl fmt::Display for ActorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ActorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.as_str())
    }
}
