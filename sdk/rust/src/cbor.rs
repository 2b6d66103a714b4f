//! Reef Rust SDK: the CBOR codec of the guest edge (docs/abi.md "Values").
//!
//! Decoding validates exactly like the host: one definite-length item of the ABI v1 subset
//! (null, bool, int64, finite float of any width, UTF-8 text, list, record with distinct text
//! keys, actor ref tag 1380271430), no trailing bytes, within [`Limits`]. Every problem is an
//! [`Error`] (kind `Malformed` or `Limit`), never a panic. Encoding writes the deterministic
//! heads of RFC 8949 §4.2.1 and the shortest float width that keeps the value exactly;
//! record keys stay in insertion order (the host sorts them).

use crate::error::{Error, ErrorKind, Result};
use crate::record::{ActorRef, Record, ACTOR_REF_LEN};
use crate::value::Value;

/// Records up to this many fields check for duplicate keys pairwise; larger ones by sorting.
const SMALL_RECORD: usize = 16;

/// The actor-ref tag, "REEF" read as a big-endian u32.
pub const ACTOR_TAG: u64 = 1_380_271_430;

/// Bounds on one decoded value (docs/abi.md "Limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting: the root is at depth 0, items and fields one deeper than their
    /// container.
    pub max_depth: usize,
    /// Most values in the tree, containers and the root included (record keys are no nodes).
    pub max_nodes: usize,
    /// Most UTF-8 bytes of all strings and record keys together (actor refs do not count).
    pub max_string_bytes: usize,
    /// Largest encoded buffer.
    pub max_cbor_bytes: usize,
}

impl Limits {
    /// The host's defaults for actors: depth 32, 4,096 nodes, 1 MiB of strings, 4 MiB of CBOR.
    pub const ACTOR: Limits = Limits {
        max_depth: 32,
        max_nodes: 4096,
        max_string_bytes: 1 << 20,
        max_cbor_bytes: 4 << 20,
    };
    /// The limits of event-sourced modules: depth 72, 1,000,000 nodes, 32 MiB of strings and
    /// 32 MiB of CBOR per buffer.
    pub const MODULE: Limits = Limits {
        max_depth: 72,
        max_nodes: 1_000_000,
        max_string_bytes: 32 << 20,
        max_cbor_bytes: 32 << 20,
    };
    /// What actor inputs from the host (state, sender, message, a call's reply) are read
    /// with: the host checked them already, against limits it may have been configured with
    /// beyond the defaults, so only the depth is bounded here (by the guest's stack: the
    /// decoder and the drop of a value recurse), at the deepest default, 72.
    pub const HOST_INPUT: Limits = Limits {
        max_depth: 72,
        max_nodes: usize::MAX,
        max_string_bytes: usize::MAX,
        max_cbor_bytes: usize::MAX,
    };
}

// ---- Encoding -------------------------------------------------------------------------------

/// Appends a head of major type `major` with argument `arg`, in its shortest form.
pub(crate) fn write_head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let m = major << 5;
    if arg < 24 {
        out.push(m | arg as u8);
    } else if arg <= 0xff {
        out.extend_from_slice(&[m | 24, arg as u8]);
    } else if arg <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(arg as u16).to_be_bytes());
    } else if arg <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(arg as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

fn write_text(out: &mut Vec<u8>, s: &str) {
    write_head(out, 3, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The IEEE 754 half-precision bits that hold `f` exactly, if any (`f` finite).
fn half_exact(f: f64) -> Option<u16> {
    let bits = f.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    if f == 0.0 {
        return Some(sign);
    }
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mant = bits & ((1u64 << 52) - 1);
    if (-14..=15).contains(&exp) {
        if mant & ((1u64 << 42) - 1) != 0 {
            return None;
        }
        return Some(sign | (((exp + 15) as u16) << 10) | (mant >> 42) as u16);
    }
    if (-24..-14).contains(&exp) {
        // A subnormal half: f = m * 2^-24 with m = (2^52 + mant) >> (52 - (exp + 24)).
        let full = (1u64 << 52) | mant;
        let shift = (52 - (exp + 24)) as u32;
        if full & ((1u64 << shift) - 1) != 0 {
            return None;
        }
        return Some(sign | (full >> shift) as u16);
    }
    None
}

fn write_float(out: &mut Vec<u8>, f: f64) -> Result<()> {
    if !f.is_finite() {
        return Err(Error::new(ErrorKind::Invalid, "a NaN or infinite float is not a value"));
    }
    if let Some(h) = half_exact(f) {
        out.push(0xf9);
        out.extend_from_slice(&h.to_be_bytes());
    } else if (f as f32) as f64 == f {
        out.push(0xfa);
        out.extend_from_slice(&(f as f32).to_bits().to_be_bytes());
    } else {
        out.push(0xfb);
        out.extend_from_slice(&f.to_bits().to_be_bytes());
    }
    Ok(())
}

/// Appends the encoding of an actor ref: 5-byte tag head, 1-byte text head, 21 characters.
pub fn write_actor(out: &mut Vec<u8>, r: &ActorRef) {
    out.extend_from_slice(&[0xda, 0x52, 0x45, 0x45, 0x46, 0x60 | ACTOR_REF_LEN as u8]);
    out.extend_from_slice(r.as_str().as_bytes());
}

/// Appends the encoding of `v` to `out`. Error [`ErrorKind::Invalid`] for a NaN or infinite
/// float (then `out` holds a partial encoding). Recursive: depth is the value's own.
pub fn encode_into(v: &Value, out: &mut Vec<u8>) -> Result<()> {
    match v {
        Value::Null => out.push(0xf6),
        Value::Bool(false) => out.push(0xf4),
        Value::Bool(true) => out.push(0xf5),
        Value::Int(i) if *i >= 0 => write_head(out, 0, *i as u64),
        Value::Int(i) => write_head(out, 1, !(*i as u64)),
        Value::Float(f) => write_float(out, *f)?,
        Value::Str(s) => write_text(out, s),
        Value::List(items) => {
            write_head(out, 4, items.len() as u64);
            for item in items {
                encode_into(item, out)?;
            }
        }
        Value::Record(r) => {
            write_head(out, 5, r.len() as u64);
            for (k, item) in r.iter() {
                write_text(out, k);
                encode_into(item, out)?;
            }
        }
        Value::Actor(a) => write_actor(out, a),
    }
    Ok(())
}

/// The encoding of `v` (see [`encode_into`]).
pub fn encode(v: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_into(v, &mut out)?;
    Ok(out)
}

// ---- Decoding -------------------------------------------------------------------------------

/// Decodes exactly one item from `bytes` under `limits`. Errors: [`ErrorKind::Malformed`]
/// ("invalid CBOR at byte offset N: ...") for anything outside the ABI subset or trailing
/// bytes, [`ErrorKind::Limit`] naming the limit that was broken.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Value> {
    if bytes.len() > limits.max_cbor_bytes {
        return Err(Error::new(
            ErrorKind::Limit,
            format!(
                "CBOR of {} bytes exceeds limit max_cbor_bytes={}",
                bytes.len(),
                limits.max_cbor_bytes
            ),
        ));
    }
    let mut d = Decoder { input: bytes, pos: 0, nodes: 0, string_bytes: 0, limits };
    let v = d.item(0)?;
    if d.pos != bytes.len() {
        return Err(d.malformed(
            d.pos,
            &format!(
                "{} trailing bytes after the data item (exactly one is allowed)",
                bytes.len() - d.pos
            ),
        ));
    }
    Ok(v)
}

struct Head {
    offset: usize,
    major: u8,
    info: u8,
    arg: u64,
}

struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    nodes: usize,
    string_bytes: usize,
    limits: &'a Limits,
}

/// The host's words for a broken limit, e.g. "value depth exceeds limit max_depth=32".
fn limit(what: &str, name: &str, value: usize) -> Error {
    Error::new(ErrorKind::Limit, format!("{} limit {}={}", what, name, value))
}

impl<'a> Decoder<'a> {
    fn malformed(&self, offset: usize, what: &str) -> Error {
        Error::new(
            ErrorKind::Malformed,
            format!("invalid CBOR at byte offset {}: {}", offset, what),
        )
    }

    fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    fn head(&mut self) -> Result<Head> {
        let offset = self.pos;
        let ib = match self.input.get(self.pos) {
            Some(b) => *b,
            None => {
                return Err(self.malformed(offset, "unexpected end of input, expected a data item"))
            }
        };
        self.pos += 1;
        let (major, info) = (ib >> 5, ib & 31);
        if info < 24 {
            return Ok(Head { offset, major, info, arg: u64::from(info) });
        }
        if info == 31 {
            return Err(self.malformed(offset, "indefinite lengths are not supported"));
        }
        if info > 27 {
            return Err(self.malformed(offset, "reserved additional information value"));
        }
        let size = 1usize << (info - 24);
        if self.remaining() < size {
            return Err(self.malformed(offset, "unexpected end of input inside a head"));
        }
        let mut arg = 0u64;
        for &b in &self.input[self.pos..self.pos + size] {
            arg = (arg << 8) | u64::from(b);
        }
        self.pos += size;
        Ok(Head { offset, major, info, arg })
    }

    fn count_nodes(&mut self, n: u64) -> Result<()> {
        if n > (self.limits.max_nodes - self.nodes) as u64 {
            return Err(limit("value node count exceeds", "max_nodes", self.limits.max_nodes));
        }
        self.nodes += n as usize;
        Ok(())
    }

    /// The payload of the text whose head `h` was just read.
    fn text(&mut self, h: &Head, counts: bool) -> Result<&'a str> {
        if h.arg > self.remaining() as u64 {
            return Err(self.malformed(
                h.offset,
                &format!(
                    "text string length {} exceeds the remaining {} bytes of input",
                    h.arg,
                    self.remaining()
                ),
            ));
        }
        let len = h.arg as usize;
        if counts {
            if len > self.limits.max_string_bytes - self.string_bytes {
                return Err(limit(
                    "value string and key bytes exceed",
                    "max_string_bytes",
                    self.limits.max_string_bytes,
                ));
            }
            self.string_bytes += len;
        }
        let input: &'a [u8] = self.input;
        let bytes = &input[self.pos..self.pos + len];
        // Keys and short texts are mostly ASCII: a plain loop is much cheaper there than
        // std's validator, which sets up for long texts.
        if len <= 32 && bytes.iter().fold(0, |all, &b| all | b) < 0x80 {
            self.pos += len;
            // SAFETY: ASCII is valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                self.pos += len;
                Ok(s)
            }
            Err(e) => {
                Err(self.malformed(self.pos + e.valid_up_to(), "text string is not valid UTF-8"))
            }
        }
    }

    fn item(&mut self, depth: usize) -> Result<Value> {
        let h = self.head()?;
        if depth > self.limits.max_depth {
            return Err(limit("value depth exceeds", "max_depth", self.limits.max_depth));
        }
        self.count_nodes(1)?;
        match h.major {
            0 | 1 => {
                if h.arg > i64::MAX as u64 {
                    return Err(self.malformed(h.offset, "integer outside the int64 range"));
                }
                let i = h.arg as i64;
                Ok(Value::Int(if h.major == 0 { i } else { -1 - i }))
            }
            2 => Err(self.malformed(h.offset, "byte strings are not supported (major type 2)")),
            3 => Ok(Value::Str(self.text(&h, true)?.to_owned())),
            4 => self.list(&h, depth),
            5 => self.record(&h, depth),
            6 => self.actor(&h),
            _ => self.simple(&h),
        }
    }

    fn list(&mut self, h: &Head, depth: usize) -> Result<Value> {
        if h.arg > self.remaining() as u64 {
            return Err(self.malformed(
                h.offset,
                &format!(
                    "list length {} exceeds the remaining {} bytes of input",
                    h.arg,
                    self.remaining()
                ),
            ));
        }
        if h.arg > (self.limits.max_nodes - self.nodes) as u64 {
            return Err(limit("value node count exceeds", "max_nodes", self.limits.max_nodes));
        }
        let mut items = Vec::with_capacity(h.arg as usize);
        for _ in 0..h.arg {
            items.push(self.item(depth + 1)?);
        }
        Ok(Value::List(items))
    }

    fn record(&mut self, h: &Head, depth: usize) -> Result<Value> {
        if h.arg > (self.remaining() / 2) as u64 {
            return Err(self.malformed(
                h.offset,
                &format!(
                    "record length {} exceeds what the remaining {} bytes of input can hold",
                    h.arg,
                    self.remaining()
                ),
            ));
        }
        if h.arg > (self.limits.max_nodes - self.nodes) as u64 {
            return Err(limit("value node count exceeds", "max_nodes", self.limits.max_nodes));
        }
        let n = h.arg as usize;
        let mut fields: Vec<(String, Value)> = Vec::with_capacity(n);
        // Small records compare each key with the ones before it; larger ones sort once.
        let mut key_offsets = Vec::with_capacity(if n > SMALL_RECORD { n } else { 0 });
        for _ in 0..n {
            let kh = self.head()?;
            if kh.major != 3 {
                return Err(self.malformed(kh.offset, "record key is not a text string"));
            }
            let key = self.text(&kh, true)?;
            if n <= SMALL_RECORD && fields.iter().any(|(k, _)| k == key) {
                return Err(self.malformed(kh.offset, "duplicate record key"));
            }
            if n > SMALL_RECORD {
                key_offsets.push(kh.offset);
            }
            let value = self.item(depth + 1)?;
            fields.push((key.to_owned(), value));
        }
        if n > SMALL_RECORD {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_unstable_by(|&a, &b| fields[a].0.cmp(&fields[b].0).then(a.cmp(&b)));
            for w in order.windows(2) {
                if fields[w[0]].0 == fields[w[1]].0 {
                    return Err(self.malformed(key_offsets[w[1]], "duplicate record key"));
                }
            }
        }
        Ok(Value::Record(Record::from_fields_unchecked(fields)))
    }

    fn actor(&mut self, h: &Head) -> Result<Value> {
        if h.arg != ACTOR_TAG {
            return Err(self.malformed(
                h.offset,
                &format!("unsupported tag {} (only {}, actor ref, is allowed)", h.arg, ACTOR_TAG),
            ));
        }
        let inner = self.head()?;
        if inner.major != 3 {
            return Err(self.malformed(inner.offset, "actor ref tag must wrap a text string"));
        }
        // A ref is no string for the limits, and its alphabet check covers UTF-8.
        if inner.arg > self.remaining() as u64 {
            return Err(self.malformed(inner.offset, "actor ref exceeds the remaining input"));
        }
        let id = &self.input[self.pos..self.pos + inner.arg as usize];
        match ActorRef::from_bytes(id) {
            Some(r) => {
                self.pos += ACTOR_REF_LEN;
                Ok(Value::Actor(r))
            }
            None => {
                let shown = std::str::from_utf8(id).unwrap_or("(not UTF-8)");
                let what =
                    format!("actor ref must be 21 characters of A-Za-z0-9_-, not \"{}\"", shown);
                Err(self.malformed(inner.offset, &what))
            }
        }
    }

    fn simple(&mut self, h: &Head) -> Result<Value> {
        let f = match h.info {
            20 => return Ok(Value::Bool(false)),
            21 => return Ok(Value::Bool(true)),
            22 => return Ok(Value::Null),
            25 => half_to_f64(h.arg as u16),
            26 => f64::from(f32::from_bits(h.arg as u32)),
            27 => f64::from_bits(h.arg),
            _ => {
                return Err(self.malformed(
                    h.offset,
                    &format!("simple value {} is not supported (only false, true and null)", h.arg),
                ))
            }
        };
        if !f.is_finite() {
            return Err(self.malformed(h.offset, "NaN and infinities are not allowed"));
        }
        Ok(Value::Float(f))
    }
}

/// IEEE 754 half precision to f64, exactly (RFC 8949 appendix D).
fn half_to_f64(bits: u16) -> f64 {
    let exp = i32::from((bits >> 10) & 0x1f);
    let mant = f64::from(bits & 0x3ff);
    let v = match exp {
        0 => mant * 2f64.powi(-24),
        31 => {
            if mant == 0.0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => (mant + 1024.0) * 2f64.powi(exp - 25),
    };
    if bits & 0x8000 != 0 {
        -v
    } else {
        v
    }
}
