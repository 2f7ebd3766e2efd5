//! Builders for the checkers' tests: histories written as a few lines each.

use crate::history::*;

/// A history under construction; ids are handed out in order.
#[derive(Default)]
pub(crate) struct Builder {
    pub h: History,
    next: u64,
}

/// (invoke, complete) in nanoseconds.
pub(crate) type T = (u64, u64);

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    pub fn op(&mut self, client: u64, invoke: u64, complete: Option<u64>, kind: OpKind) -> u64 {
        let id = self.id();
        self.h.ops.push(Op {
            id,
            client,
            invoke,
            complete,
            kind,
        });
        id
    }

    pub fn create(&mut self, client: u64, t: T, key: &str, value: Value, rv: Rv) -> u64 {
        let outcome = CreateOutcome::Ok { rv };
        self.op(
            client,
            t.0,
            Some(t.1),
            OpKind::Create {
                key: key.into(),
                value,
                outcome,
            },
        )
    }

    pub fn create_unknown(&mut self, client: u64, t: T, key: &str, value: Value) -> u64 {
        let outcome = CreateOutcome::Unknown {
            reason: "timeout".into(),
        };
        self.op(
            client,
            t.0,
            Some(t.1),
            OpKind::Create {
                key: key.into(),
                value,
                outcome,
            },
        )
    }

    pub fn get(&mut self, client: u64, t: T, key: &str, found: Option<(Value, Rv)>) -> u64 {
        let outcome = match found {
            Some((value, rv)) => GetOutcome::Found { value, rv },
            None => GetOutcome::NotFound,
        };
        self.op(
            client,
            t.0,
            Some(t.1),
            OpKind::Get {
                key: key.into(),
                outcome,
            },
        )
    }

    pub fn update_with(
        &mut self,
        client: u64,
        t: T,
        key: &str,
        expected_rv: Rv,
        value: Value,
        outcome: UpdateOutcome,
    ) -> u64 {
        let kind = OpKind::Update {
            key: key.into(),
            expected_rv,
            value,
            outcome,
        };
        self.op(client, t.0, Some(t.1), kind)
    }

    pub fn update(
        &mut self,
        client: u64,
        t: T,
        key: &str,
        expected: Rv,
        value: Value,
        rv: Rv,
    ) -> u64 {
        self.update_with(client, t, key, expected, value, UpdateOutcome::Ok { rv })
    }

    pub fn update_unknown(
        &mut self,
        client: u64,
        t: T,
        key: &str,
        expected: Rv,
        value: Value,
    ) -> u64 {
        let outcome = UpdateOutcome::Unknown {
            reason: "connection reset".into(),
        };
        self.update_with(client, t, key, expected, value, outcome)
    }

    pub fn delete(
        &mut self,
        client: u64,
        t: T,
        key: &str,
        expected_rv: Option<Rv>,
        outcome: DeleteOutcome,
    ) -> u64 {
        self.op(
            client,
            t.0,
            Some(t.1),
            OpKind::Delete {
                key: key.into(),
                expected_rv,
                outcome,
            },
        )
    }

    /// A LIST page: `items` as (key, value, rv).
    #[allow(
        clippy::too_many_arguments,
        reason = "a test builder: one argument per field"
    )]
    pub fn list(
        &mut self,
        client: u64,
        t: T,
        resource_version: &str,
        limit: Option<u64>,
        continue_token: Option<&str>,
        items: &[(&str, Value, Rv)],
        list_rv: Rv,
        next: Option<&str>,
    ) -> u64 {
        let items = items
            .iter()
            .map(|&(key, value, rv)| Item {
                key: key.into(),
                value,
                rv,
            })
            .collect();
        let kind = OpKind::List {
            prefix: String::new(),
            resource_version: resource_version.into(),
            limit,
            continue_token: continue_token.map(Into::into),
            outcome: ListOutcome::Ok {
                items,
                list_rv,
                continue_token: next.map(Into::into),
            },
        };
        self.op(client, t.0, Some(t.1), kind)
    }

    pub fn watch(
        &mut self,
        client: u64,
        invoke: u64,
        from_rv: Rv,
        events: Vec<Event>,
        end: WatchEnd,
    ) -> u64 {
        let id = self.id();
        let complete = (end != WatchEnd::Open).then(|| events.last().map_or(invoke, |e| e.at) + 1);
        self.h.watches.push(Watch {
            id,
            client,
            invoke,
            complete,
            prefix: String::new(),
            from_rv,
            events,
            end,
        });
        id
    }
}

pub(crate) fn ev(at: u64, kind: EventType, key: &str, value: Value, rv: Rv) -> Event {
    Event {
        at,
        kind,
        key: key.into(),
        value: Some(value),
        rv,
    }
}

pub(crate) fn bookmark(at: u64, rv: Rv) -> Event {
    Event {
        at,
        kind: EventType::Bookmark,
        key: String::new(),
        value: None,
        rv,
    }
}
