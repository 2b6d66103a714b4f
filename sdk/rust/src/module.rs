//! Reef Rust SDK: event-sourced modules (docs/abi.md "Event-sourced modules").
//!
//!   command    [`Command`] + [`crate::command!`]: `init` picks the events to read (a
//!              [`Query`]) and the initial state, `fold` runs once per event (the SDK loops
//!              over the host's pages), `decide` returns a [`Decision`]: new events, appended
//!              under the DCB condition, or a rejection (HTTP 422 with its message).
//!   projector  [`Projector`] + [`crate::projector!`]: `project` once per matching event, in
//!              order, in a SQLite transaction of the projector's own database.
//!   effect     [`Effect`] + [`crate::effect!`]: `handle` at least once per matching event,
//!              in order within a partition key.
//! An `Err` from any callback (or a panic) fails that call with the error's message: HTTP 500
//! for a command, a stopped projector, a retried effect event. A rejection is not an error.

use crate::error::{Error, ErrorKind, Result};
use crate::record::Record;
use crate::value::Value;

/// One stored event as the host passes it to `fold`, `project`, `partition_key` and `handle`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Event {
    /// Store position, 1-based and gapless.
    pub position: i64,
    /// UUID, 36 characters.
    pub id: String,
    /// The event's type, e.g. "MoneyDeposited".
    pub event_type: String,
    /// Its tags, e.g. "account:a1".
    pub tags: Vec<String>,
    /// The data (JSON data as a value); `Null` when the event has none, its data is not JSON,
    /// or its encryption key was shredded.
    pub data: Value,
    /// Unix time in ms at which it was appended.
    pub timestamp_ms: i64,
    /// The correlation id, when the event has one.
    pub correlation_id: Option<String>,
    /// The causation id (for a command's events, the execution id), when it has one.
    pub causation_id: Option<String>,
    /// The application's own metadata, when the event has any.
    pub metadata: Option<Record>,
}

fn bad_event(what: &str) -> Error {
    Error::new(ErrorKind::Malformed, format!("malformed event from the host: {}", what))
}

impl Event {
    /// Reads an event record. Error [`ErrorKind::Malformed`] naming the field that is missing
    /// or of the wrong kind. Unknown fields are ignored.
    pub fn from_value(v: Value) -> Result<Event> {
        let fields = match v {
            Value::Record(r) => r,
            _ => return Err(bad_event("not a record")),
        };
        // The required fields seen so far, one bit each, in the order of NAMES below.
        let (mut e, mut seen) = (Event::default(), 0u8);
        for (key, value) in fields {
            match (key.as_str(), value) {
                ("position", Value::Int(i)) => {
                    e.position = i;
                    seen |= 1;
                }
                ("id", Value::Str(s)) => {
                    e.id = s;
                    seen |= 2;
                }
                ("type", Value::Str(s)) => {
                    e.event_type = s;
                    seen |= 4;
                }
                ("timestamp_ms", Value::Int(i)) => {
                    e.timestamp_ms = i;
                    seen |= 8;
                }
                ("tags", Value::List(items)) => {
                    for t in items {
                        e.tags.push(
                            String::try_from(t).map_err(|_| bad_event("a tag is no string"))?,
                        );
                    }
                    seen |= 16;
                }
                ("data", d) => {
                    e.data = d;
                    seen |= 32;
                }
                ("correlation_id", Value::Str(s)) => e.correlation_id = Some(s),
                ("causation_id", Value::Str(s)) => e.causation_id = Some(s),
                ("metadata", Value::Record(m)) => e.metadata = Some(m),
                ("metadata", Value::Null) => {}
                (
                    "position" | "id" | "type" | "timestamp_ms" | "tags" | "correlation_id"
                    | "causation_id" | "metadata",
                    _,
                ) => return Err(bad_event(&format!("field '{}' has the wrong kind", key))),
                _ => {}
            }
        }
        const NAMES: [&str; 6] = ["position", "id", "type", "timestamp_ms", "tags", "data"];
        if let Some(i) = (0..6).find(|i| seen & (1 << i) == 0) {
            return Err(bad_event(&format!("no field '{}'", NAMES[i])));
        }
        Ok(e)
    }

    /// The event as the host writes it (to build inputs for tests).
    pub fn to_value(&self) -> Value {
        let mut r = Record::with_capacity(9)
            .with("position", self.position)
            .with("id", self.id.as_str())
            .with("type", self.event_type.as_str())
            .with("tags", self.tags.clone())
            .with("data", self.data.clone())
            .with("timestamp_ms", self.timestamp_ms);
        if let Some(c) = &self.correlation_id {
            r.insert("correlation_id", c);
        }
        if let Some(c) = &self.causation_id {
            r.insert("causation_id", c);
        }
        if let Some(m) = &self.metadata {
            r.insert("metadata", m.clone());
        }
        Value::Record(r)
    }

    /// True when the event carries exactly the tag `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// A new event, for a decision or [`crate::append`]:
/// `NewEvent::new("MoneyDeposited").tag("account:a1").data(record! {...})`.
/// `type` is required; tags, data (null = none), metadata (a record, at most 4,096 bytes as
/// JSON) and an encryption scope are optional. The store's limits apply (a tag is at most
/// 1,024 bytes, a scope 1 to 256 bytes without control characters).
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    event_type: String,
    tags: Vec<String>,
    data: Value,
    metadata: Option<Record>,
    encryption_scope: Option<String>,
}

impl NewEvent {
    /// A new event of `event_type` without tags, data or metadata.
    pub fn new(event_type: impl Into<String>) -> NewEvent {
        NewEvent {
            event_type: event_type.into(),
            tags: Vec::new(),
            data: Value::Null,
            metadata: None,
            encryption_scope: None,
        }
    }
    /// Adds one tag.
    pub fn tag(mut self, tag: impl Into<String>) -> NewEvent {
        self.tags.push(tag.into());
        self
    }
    /// Adds tags.
    pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> NewEvent {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }
    /// Sets the data (any value; stored as compact JSON).
    pub fn data(mut self, data: impl Into<Value>) -> NewEvent {
        self.data = data.into();
        self
    }
    /// Sets the application's own metadata.
    pub fn metadata(mut self, metadata: Record) -> NewEvent {
        self.metadata = Some(metadata);
        self
    }
    /// Stores the data encrypted under `scope`'s key (AES-256-GCM): once the scope's key is
    /// deleted (`DELETE /crypto-keys/{scope}`) the data reads as null, for ever.
    pub fn encryption_scope(mut self, scope: impl Into<String>) -> NewEvent {
        self.encryption_scope = Some(scope.into());
        self
    }
    /// The record the host reads: {"type", "tags", "data", "metadata"?, "encryption_scope"?}.
    pub fn to_value(&self) -> Value {
        let mut r = Record::with_capacity(5)
            .with("type", self.event_type.as_str())
            .with("tags", self.tags.clone())
            .with("data", self.data.clone());
        if let Some(m) = &self.metadata {
            r.insert("metadata", m.clone());
        }
        if let Some(s) = &self.encryption_scope {
            r.insert("encryption_scope", s);
        }
        Value::Record(r)
    }
}

/// One item of a query: matches an event whose type is one of `types` (any type when there
/// are none) and that carries every tag of `tags`. An item needs a type or a tag.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct QueryItem {
    types: Vec<String>,
    tags: Vec<String>,
}

impl QueryItem {
    /// An empty item (add types or tags: the host refuses an empty one).
    pub fn new() -> QueryItem {
        QueryItem::default()
    }
    /// An item of these types.
    pub fn of_types<I: IntoIterator<Item = S>, S: Into<String>>(types: I) -> QueryItem {
        QueryItem::new().with_types(types)
    }
    /// An item of the events that carry all these tags.
    pub fn of_tags<I: IntoIterator<Item = S>, S: Into<String>>(tags: I) -> QueryItem {
        QueryItem::new().with_tags(tags)
    }
    /// The same item with these types added.
    pub fn with_types<I: IntoIterator<Item = S>, S: Into<String>>(mut self, types: I) -> QueryItem {
        self.types.extend(types.into_iter().map(Into::into));
        self
    }
    /// The same item with these tags added.
    pub fn with_tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> QueryItem {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }
    fn to_value(&self) -> Value {
        let mut r = Record::with_capacity(2);
        if !self.types.is_empty() {
            r.insert("types", self.types.clone());
        }
        if !self.tags.is_empty() {
            r.insert("tags", self.tags.clone());
        }
        Value::Record(r)
    }
}

/// A query: a list of items; an event matches when it matches any item. The query without
/// items matches every event.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Query {
    items: Vec<QueryItem>,
}

impl Query {
    /// Every event (the empty list).
    pub fn all() -> Query {
        Query::default()
    }
    /// One item: the events of these types.
    pub fn of_types<I: IntoIterator<Item = S>, S: Into<String>>(types: I) -> Query {
        Query::all().or(QueryItem::of_types(types))
    }
    /// One item: the events that carry all these tags.
    pub fn of_tags<I: IntoIterator<Item = S>, S: Into<String>>(tags: I) -> Query {
        Query::all().or(QueryItem::of_tags(tags))
    }
    /// The same query matching `item`'s events too.
    pub fn or(mut self, item: QueryItem) -> Query {
        self.items.push(item);
        self
    }
    /// The list the host reads: [{"types": [...], "tags": [...]}, ...].
    pub fn to_value(&self) -> Value {
        Value::List(self.items.iter().map(QueryItem::to_value).collect())
    }
}

/// What a command's `decide` returns.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Append these events (atomically, under the DCB condition); none is a success too.
    Accept(Vec<NewEvent>),
    /// Append nothing; the caller gets HTTP 422 with exactly this message.
    Reject(String),
}

impl Decision {
    /// Appends `events`.
    pub fn accept<I: IntoIterator<Item = NewEvent>>(events: I) -> Decision {
        Decision::Accept(events.into_iter().collect())
    }
    /// Rejects with `message`.
    pub fn reject(message: impl Into<String>) -> Decision {
        Decision::Reject(message.into())
    }
    /// {"events": [...]} or {"error": "..."}.
    pub fn to_value(&self) -> Value {
        let mut r = Record::with_capacity(1);
        match self {
            Decision::Accept(events) => {
                r.insert("events", events.iter().map(NewEvent::to_value).collect::<Value>())
            }
            Decision::Reject(message) => r.insert("error", message.as_str()),
        };
        Value::Record(r)
    }
}

/// What a command's `init` returns: the query of the events to read (`None`: read nothing
/// and append without a condition) and the initial state.
#[derive(Clone, Debug, PartialEq)]
pub struct Init {
    /// The events to read; `None` reads nothing (and the append has no condition).
    pub query: Option<Query>,
    /// The state the first `fold` (or `decide`, when no event matches) gets.
    pub state: Value,
}

impl Init {
    /// Read the events of `query`, folding them into `state`.
    pub fn with_query(query: Query, state: impl Into<Value>) -> Init {
        Init { query: Some(query), state: state.into() }
    }
    /// Read nothing: decide on `state` alone, append without a condition.
    pub fn without_query(state: impl Into<Value>) -> Init {
        Init { query: None, state: state.into() }
    }
}

/// A command (`reef::command!(MyCommand)`; add `fold_ignores_input` when `fold` does not read
/// the input, so the host shares folded states across inputs: docs/abi.md "The fold cache").
/// Every call of one execution starts from a fresh instance: keep nothing in statics.
pub trait Command {
    /// The query and the initial state for `input` (the request's JSON body as a value).
    fn init(input: &Value) -> Result<Init>;
    /// The state after `event`. Must be a function of the state and the event (and the input
    /// unless declared ignored): events come in pages of any size.
    fn fold(state: Value, input: &Value, event: &Event) -> Result<Value>;
    /// The decision on the folded state.
    fn decide(state: Value, input: &Value) -> Result<Decision>;
}

/// A projector (`reef::projector!(MyProjector)`): a read model in its own SQLite database.
pub trait Projector {
    /// Runs once when the projector starts (a place for `CREATE TABLE IF NOT EXISTS`); returns
    /// the events to project.
    fn query() -> Result<Query>;
    /// Updates the read model for one event ([`crate::sql_exec`]). An `Err` rolls this
    /// event back and stops the projector.
    fn project(event: &Event) -> Result<()>;
}

/// An effect (`reef::effect!(MyEffect)`): acts on events, at least once each.
pub trait Effect {
    /// Runs once on start; returns the events to handle.
    fn query() -> Result<Query>;
    /// The key whose events are handled in order (`None`: the global worker).
    fn partition_key(event: &Event) -> Result<Option<String>>;
    /// Does the side effect. An `Err` makes the host retry this event with backoff.
    fn handle(event: &Event) -> Result<()>;
}
