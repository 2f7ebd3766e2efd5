//! Watch events as clients see them (`{"type": "ADDED", "object": {...}}`).

use crate::object::Object;
use serde_json::{json, Value};

/// The `type` of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

/// One event of a watch stream.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchEvent {
    pub event_type: EventType,
    pub object: Object,
}

impl WatchEvent {
    pub fn new(event_type: EventType, object: Object) -> Self {
        Self { event_type, object }
    }

    /// The wire form.
    pub fn to_value(&self) -> Value {
        json!({"type": self.event_type.as_str(), "object": self.object})
    }
}
