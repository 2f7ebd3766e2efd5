//! Field paths and sets of them, as upstream's structured-merge-diff `fieldpath` keeps them,
//! with the `FieldsV1` encoding of `metadata.managedFields` (`f:<field>`, `k:<keys>`,
//! `v:<value>`, `i:<index>`, and `.` for a node that is itself a member).

use serde_json::{Map, Value};
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One step of a path. The variant order is upstream's ordering of path elements.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A struct field or map key.
    Field(String),
    /// A list item identified by its key fields: (field, compact JSON of the value), sorted.
    Key(Vec<(String, String)>),
    /// A set-list item: the compact JSON of the value.
    Value(String),
    /// A list item by position.
    Index(i64),
}

impl PathElement {
    /// A key element from key fields and their values.
    pub fn key(fields: Vec<(String, Value)>) -> Self {
        let mut pairs: Vec<(String, String)> = fields
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        pairs.sort();
        PathElement::Key(pairs)
    }

    /// A value element for a set-list item.
    pub fn value(v: &Value) -> Self {
        PathElement::Value(v.to_string())
    }

    /// The `FieldsV1` key of this element.
    fn encode(&self) -> String {
        match self {
            PathElement::Field(f) => format!("f:{f}"),
            PathElement::Key(pairs) => {
                let inner: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                    .collect();
                format!("k:{{{}}}", inner.join(","))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key.
    fn decode(s: &str) -> Result<Self, String> {
        let (prefix, rest) = s
            .split_once(':')
            .ok_or_else(|| format!("unexpected key: {s:?}"))?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "v" => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                Ok(PathElement::value(&v))
            }
            "i" => rest
                .parse::<i64>()
                .map(PathElement::Index)
                .map_err(|e| e.to_string()),
            "k" => match serde_json::from_str::<Value>(rest).map_err(|e| e.to_string())? {
                Value::Object(m) => Ok(PathElement::key(m.into_iter().collect())),
                _ => Err(format!("key is not an object: {rest}")),
            },
            _ => Err(format!("unknown path element prefix: {prefix:?}")),
        }
    }
}

impl fmt::Display for PathElement {
    /// Upstream's `PathElement.String()`: `.name`, `[k=v,...]`, `[=v]`, `[i]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(pairs) => {
                let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", inner.join(","))
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object's root.
pub type Path = Vec<PathElement>;

/// Renders a path as upstream prints it in conflict messages: `.spec.replicas`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths, as a tree: `members` end at this node, `children` continue below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path; the empty path (the root) is never a member.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// The subtree below `pe` (paths relative to it).
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    /// Whether `pe` is a member here.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.merge(other.clone());
        out
    }

    /// Adds every path of `other`, taking its nodes rather than copying them.
    pub fn merge(&mut self, other: Set) {
        self.members.extend(other.members);
        for (pe, child) in other.children {
            match self.children.entry(pe) {
                Entry::Occupied(mut mine) => mine.get_mut().merge(child),
                Entry::Vacant(slot) => {
                    slot.insert(child);
                }
            }
        }
    }

    /// The paths of `self` that are not paths of `other` (exact paths only).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.remove(other);
        out
    }

    /// Removes the paths of `other` (exact paths only), in place.
    pub fn remove(&mut self, other: &Set) {
        self.remove_paths(other, false);
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(o) = other.children.get(pe) {
                let both = child.intersection(o);
                if !both.is_empty() {
                    children.insert(pe.clone(), both);
                }
            }
        }
        Set { members, children }
    }

    /// The paths of `self` that neither are in `other` nor lie below a member of `other`.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.remove_under(other);
        out
    }

    /// Removes the paths of `other` and every path below a member of `other`, in place.
    pub fn remove_under(&mut self, other: &Set) {
        self.remove_paths(other, true);
    }

    /// Removes the paths of `other`; with `below_members`, also every path under one of its
    /// members.
    fn remove_paths(&mut self, other: &Set, below_members: bool) {
        if other.is_empty() {
            return;
        }
        self.members.retain(|pe| !other.members.contains(pe));
        self.children.retain(|pe, child| {
            if below_members && other.members.contains(pe) {
                return false;
            }
            if let Some(o) = other.children.get(pe) {
                child.remove_paths(o, below_members);
            }
            !child.is_empty()
        });
    }

    /// Whether any path of this set starts with `pe` (the member itself or something below).
    pub fn touches(&self, pe: &PathElement) -> bool {
        self.members.contains(pe) || self.children.contains_key(pe)
    }

    /// Every path, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        let mut keys: BTreeSet<&PathElement> = self.members.iter().collect();
        keys.extend(self.children.keys());
        for pe in keys {
            prefix.push(pe.clone());
            if self.members.contains(pe) {
                out.push(prefix.clone());
            }
            if let Some(child) = self.children.get(pe) {
                child.collect(prefix, out);
            }
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON of this set.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.encode(false))
    }

    fn encode(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        let mut keys: BTreeSet<&PathElement> = self.members.iter().collect();
        keys.extend(self.children.keys());
        for pe in keys {
            let value = match self.children.get(pe) {
                Some(child) => Value::Object(child.encode(self.members.contains(pe))),
                None => Value::Object(Map::new()),
            };
            out.insert(pe.encode(), value);
        }
        out
    }

    /// Parses `FieldsV1` JSON.
    pub fn from_fields_v1(value: &Value) -> Result<Set, String> {
        let Value::Object(map) = value else {
            return Err("FieldsV1 is not an object".into());
        };
        let mut set = Set::new();
        for (k, v) in map {
            if k == "." {
                continue;
            }
            let pe = PathElement::decode(k)?;
            let Value::Object(inner) = v else {
                return Err(format!("value of {k:?} is not an object"));
            };
            if inner.is_empty() {
                set.members.insert(pe);
                continue;
            }
            if inner.contains_key(".") {
                set.members.insert(pe.clone());
            }
            let child = Set::from_fields_v1(v)?;
            if !child.is_empty() {
                set.children.insert(pe, child);
            }
        }
        Ok(set)
    }
}
