//! `metadata.managedFields`: decoding and encoding the entries (one per manager, operation,
//! API version for updates, and subresource), and upstream's ownership rules for an update
//! (the writer takes what it changed) and an apply (the applier owns its configuration,
//! conflicts with other owners unless forced, and fields it stops applying are removed).

use super::fieldset::{compare, compare_maps, to_set, Comparison, WalkError};
use super::merge::{merge, remove};
use super::schema::{effective, Shape, Ty};
use super::set::{path_string, Path, PathElement, Set};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::LazyLock;

/// `Apply` or `Update`; `Apply` sorts first, as upstream orders entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One managedFields entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: String,
    pub set: Set,
}

impl Entry {
    /// Whether two entries are the same owner: updates also by API version, as upstream keys
    /// them.
    fn same_owner(&self, manager: &str, op: Operation, api_version: &str, sub: &str) -> bool {
        self.manager == manager
            && self.operation == op
            && self.subresource == sub
            && (op == Operation::Apply || self.api_version == api_version)
    }

    /// Upstream's `printManager`: `"m"`, `"m" with subresource "s"`, `... using apps/v1`.
    pub fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

/// The managed fields of one object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managed {
    pub entries: Vec<Entry>,
}

/// What `metadata.managedFields` of a request body says.
pub enum Requested {
    /// Absent, empty or invalid: keep the stored object's.
    Keep,
    /// `[{}]`: clear them.
    Reset,
    /// Valid entries to take as the new state.
    Use(Managed),
}

impl Managed {
    /// Decodes an object's `metadata.managedFields`; `Err` when an entry is malformed.
    pub fn decode(obj: &Value) -> Result<Managed, String> {
        match obj.as_object() {
            Some(map) => Self::decode_map(map),
            None => Ok(Managed::default()),
        }
    }

    /// [`Managed::decode`] of an object given as its top-level map.
    pub fn decode_map(obj: &Map<String, Value>) -> Result<Managed, String> {
        let Some(list) = obj
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .filter(|v| !v.is_null())
        else {
            return Ok(Managed::default());
        };
        let Value::Array(items) = list else {
            return Err("managedFields is not a list".into());
        };
        let mut entries: Vec<Entry> = Vec::new();
        for item in items {
            let field = |k: &str| {
                item.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let operation = match field("operation").as_str() {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                other => return Err(format!("unknown operation {other:?}")),
            };
            let fields_type = field("fieldsType");
            if fields_type != "FieldsV1" {
                return Err(format!("invalid fieldsType {fields_type:?}"));
            }
            let set = match item.get("fieldsV1") {
                Some(v) if !v.is_null() => Set::from_fields_v1(v)?,
                _ => Set::new(),
            };
            let entry = Entry {
                manager: field("manager"),
                operation,
                api_version: field("apiVersion"),
                time: item.get("time").and_then(Value::as_str).map(str::to_string),
                subresource: field("subresource"),
                set,
            };
            if entries.iter().any(|e| {
                e.same_owner(
                    &entry.manager,
                    entry.operation,
                    &entry.api_version,
                    &entry.subresource,
                )
            }) {
                return Err(format!("duplicate entry for manager {:?}", entry.manager));
            }
            entries.push(entry);
        }
        Ok(Managed { entries })
    }

    /// Reads what a request body asks for.
    pub fn requested(obj: &Map<String, Value>) -> Requested {
        let list = obj.get("metadata").and_then(|m| m.get("managedFields"));
        match list {
            Some(Value::Array(items)) if items.is_empty() => Requested::Keep,
            Some(Value::Array(items))
                if items
                    .iter()
                    .all(|i| i.as_object().is_some_and(Map::is_empty)) =>
            {
                Requested::Reset
            }
            Some(Value::Array(_)) => match Managed::decode_map(obj) {
                Ok(m) if !m.entries.is_empty() => Requested::Use(m),
                _ => Requested::Keep,
            },
            _ => Requested::Keep,
        }
    }

    /// Writes the entries into `obj`'s metadata, sorted as upstream sorts them; no entries
    /// removes the field.
    pub fn encode_into(&self, obj: &mut Map<String, Value>) {
        let mut entries: Vec<&Entry> = self.entries.iter().filter(|e| !e.set.is_empty()).collect();
        entries.sort_by(|a, b| {
            (
                a.operation,
                &a.time,
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    b.operation,
                    &b.time,
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        let list: Vec<Value> = entries
            .into_iter()
            .map(|e| {
                let mut m = Map::new();
                m.insert("manager".into(), Value::from(e.manager.clone()));
                m.insert("operation".into(), Value::from(e.operation.as_str()));
                m.insert("apiVersion".into(), Value::from(e.api_version.clone()));
                if let Some(t) = &e.time {
                    m.insert("time".into(), Value::from(t.clone()));
                }
                m.insert("fieldsType".into(), Value::from("FieldsV1"));
                m.insert("fieldsV1".into(), e.set.to_fields_v1());
                if !e.subresource.is_empty() {
                    m.insert("subresource".into(), Value::from(e.subresource.clone()));
                }
                Value::Object(m)
            })
            .collect();
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            if list.is_empty() {
                meta.shift_remove("managedFields");
            } else {
                meta.insert("managedFields".into(), Value::Array(list));
            }
        }
    }

    fn position(
        &self,
        manager: &str,
        op: Operation,
        api_version: &str,
        sub: &str,
    ) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.same_owner(manager, op, api_version, sub))
    }

    fn drop_empty(&mut self) {
        self.entries.retain(|e| !e.set.is_empty());
    }
}

/// Who writes, through which version and subresource, and when.
#[derive(Clone, Debug)]
pub struct Writer {
    pub manager: String,
    pub api_version: String,
    pub subresource: String,
    /// RFC 3339 seconds, UTC.
    pub now: String,
}

/// Fields never owned: identity and bookkeeping (upstream's `stripMetaManager`).
fn stripped() -> &'static Set {
    static STRIPPED: LazyLock<Set> = LazyLock::new(stripped_fields);
    &STRIPPED
}

fn stripped_fields() -> Set {
    let mut s = Set::new();
    for p in ["apiVersion", "kind", "metadata"] {
        s.insert(&[PathElement::Field(p.into())]);
    }
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field(f.into()),
        ]);
    }
    s
}

/// Fields a write through `subresource` does not own because the strategy resets them: the
/// main resource does not write `status`, the status subresource writes nothing but it.
fn reset_fields(subresource: &str, obj: &Map<String, Value>) -> Set {
    let mut s = Set::new();
    match subresource {
        "" => s.insert(&[PathElement::Field("status".into())]),
        "status" => {
            for k in obj
                .keys()
                .filter(|k| !matches!(k.as_str(), "status" | "metadata"))
            {
                s.insert(&[PathElement::Field(k.clone())]);
            }
        }
        _ => {}
    }
    s
}

fn owned(mut set: Set, writer: &Writer, obj: &Map<String, Value>) -> Set {
    set.remove_under(&reset_fields(&writer.subresource, obj));
    set.remove(stripped());
    set
}

/// `v` without `metadata.managedFields`, copied only when it has them.
fn without_managed_fields(v: &Value) -> Cow<'_, Value> {
    let has = v
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some();
    if !has {
        return Cow::Borrowed(v);
    }
    let mut v = v.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.shift_remove("managedFields");
    }
    Cow::Owned(v)
}

fn filtered(c: Comparison, writer: &Writer, obj: &Map<String, Value>) -> Comparison {
    Comparison {
        added: owned(c.added, writer, obj),
        modified: owned(c.modified, writer, obj),
        removed: owned(c.removed, writer, obj),
    }
}

/// Records an update (`Update` operation, also creates and non-apply patches): the writer
/// takes every field it added or changed, removed fields leave every owner, and other owners
/// lose what the writer changed. `old` is `{}` for a create.
pub fn update(
    managed: &mut Managed,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    ty: &Ty,
    writer: &Writer,
) -> Result<(), WalkError> {
    let c = compare_maps(old, new, ty)?;
    let Comparison {
        added: mut changed,
        modified,
        removed,
    } = filtered(c, writer, new);
    changed.merge(modified);
    for e in managed.entries.iter_mut() {
        e.set.remove(&changed);
        e.set.remove(&removed);
    }
    if !changed.is_empty() {
        match managed
            .position(
                &writer.manager,
                Operation::Update,
                &writer.api_version,
                &writer.subresource,
            )
            .and_then(|i| managed.entries.get_mut(i))
        {
            Some(e) => {
                e.set.merge(changed);
                e.time = Some(writer.now.clone());
            }
            None => managed.entries.push(Entry {
                manager: writer.manager.clone(),
                operation: Operation::Update,
                api_version: writer.api_version.clone(),
                time: Some(writer.now.clone()),
                subresource: writer.subresource.clone(),
                set: changed,
            }),
        }
    }
    managed.drop_empty();
    Ok(())
}

/// One field another manager owns with a different value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The owner as upstream prints it (`"m1"`, `"m1" using apps/v1`).
    pub manager: String,
    pub path: Path,
}

/// Why an apply fails.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ApplyError {
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    #[error(transparent)]
    Walk(#[from] WalkError),
}

/// Upstream's conflict message: one conflict on one line, several grouped by manager.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.manager,
            path_string(&c.path)
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", path_string(&c.path)));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// Applies `config` over `live` for the writer: `Ok(None)` when the object does not change
/// (no write needed; `managed` may still have changed), else the new object.
pub fn apply(
    managed: &mut Managed,
    live: &Value,
    config: &Value,
    ty: &Ty,
    writer: &Writer,
    force: bool,
) -> Result<Option<Value>, ApplyError> {
    let live = without_managed_fields(live);
    let config = without_managed_fields(config);
    let empty = Map::new();
    let applied = owned(
        to_set(&config, ty)?,
        writer,
        config.as_object().unwrap_or(&empty),
    );
    let mut merged = merge(&live, &config, ty)?;

    let previous = managed.position(&writer.manager, Operation::Apply, "", &writer.subresource);
    let previous_entry = previous.and_then(|i| managed.entries.get(i));
    let last = previous_entry.map(|e| e.set.clone());
    let before_time = previous_entry.and_then(|e| e.time.clone());
    let mut next = managed.clone();
    match previous.and_then(|i| next.entries.get_mut(i)) {
        Some(e) => e.set = applied.clone(),
        None => next.entries.push(Entry {
            manager: writer.manager.clone(),
            operation: Operation::Apply,
            api_version: writer.api_version.clone(),
            time: None,
            subresource: writer.subresource.clone(),
            set: applied.clone(),
        }),
    }
    let me = next
        .position(&writer.manager, Operation::Apply, "", &writer.subresource)
        .unwrap_or(0);

    if let Some(last) = last.filter(|l| !l.is_empty()) {
        let all = next.entries.iter().fold(Set::new(), |mut acc, e| {
            acc.merge(e.set.clone());
            acc
        });
        let gone = prunable(&last, &all);
        remove(&mut merged, &gone, ty);
    }

    let c = filtered(
        compare(&live, &merged, ty)?,
        writer,
        merged.as_object().unwrap_or(&empty),
    );
    let changed = c.changed();
    let mut conflicts = Vec::new();
    for (i, e) in next.entries.iter_mut().enumerate() {
        if i == me {
            continue;
        }
        let clash = e.set.intersection(&changed);
        if !clash.is_empty() {
            if force {
                e.set.remove(&clash);
            } else {
                for path in clash.paths() {
                    conflicts.push(Conflict {
                        manager: e.display(),
                        path,
                    });
                }
            }
        }
        e.set.remove(&c.removed);
    }
    if !conflicts.is_empty() {
        conflicts.sort_by(|a, b| (&a.manager, &a.path).cmp(&(&b.manager, &b.path)));
        return Err(ApplyError::Conflicts(conflicts));
    }
    let unchanged = merged == *live;
    if let Some(e) = next.entries.get_mut(me) {
        e.api_version = writer.api_version.clone();
        // The time says when the applier last changed the object (kept on a no-op).
        e.time = if unchanged && before_time.is_some() {
            before_time
        } else {
            Some(writer.now.clone())
        };
    }
    next.drop_empty();
    *managed = next;
    Ok((!unchanged).then_some(merged))
}

/// The paths of `last` that nobody owns any more (neither the path nor anything below it).
fn prunable(last: &Set, all: &Set) -> Set {
    let mut out = Set::new();
    collect_prunable(last, Some(all), &mut Vec::new(), &mut out);
    out
}

fn collect_prunable(last: &Set, all: Option<&Set>, prefix: &mut Path, out: &mut Set) {
    for path in last.paths() {
        let owned_here_or_below = {
            let mut node = all;
            let mut ok = true;
            let mut elements = path.iter().peekable();
            while let Some(pe) = elements.next() {
                let Some(n) = node else {
                    ok = false;
                    break;
                };
                if elements.peek().is_none() {
                    ok = n.touches(pe);
                } else if n.has_member(pe) && n.child(pe).is_none() {
                    // An ancestor is owned as a whole.
                    ok = true;
                    break;
                } else {
                    node = n.child(pe);
                }
            }
            ok
        };
        if !owned_here_or_below {
            let depth = prefix.len();
            prefix.extend(path.iter().cloned());
            out.insert(prefix);
            prefix.truncate(depth);
        }
    }
}

/// Whether a value at `ty` is a map or struct (what an applied configuration must be).
pub fn is_object(v: &Value, ty: &Ty) -> bool {
    matches!(effective(ty, v), Shape::Struct { .. } | Shape::Map { .. })
}
