//! Server-side apply and field ownership, as upstream's structured-merge-diff and field
//! manager: `set` (paths, sets, `FieldsV1`), `schema` (list and map semantics per position),
//! `fieldset` (the fields a value sets, comparisons), `merge` (apply merge, removal),
//! `managed` (managedFields entries, update and apply ownership rules, conflicts). This file
//! holds what the handlers call: [`FieldManager::update`] on every create, update and
//! non-apply patch, [`FieldManager::apply`] for `application/apply-patch+yaml`.

pub mod fieldset;
pub mod managed;
pub mod merge;
pub mod schema;
pub mod set;
#[cfg(test)]
mod tests;

use crate::patch::meta::PatchSchema;
use kapi_machinery::error::{StatusCause, StatusDetails};
use kapi_machinery::{ApiError, Object, StatusReason};
use managed::{ApplyError, Managed, Requested, Writer};
use schema::Ty;
use serde_json::{Map, Value};

/// Field ownership for one request: the kind's type, and who writes.
#[derive(Clone)]
pub struct FieldManager {
    ty: Ty,
    writer: Writer,
    /// Whether this write records ownership (the main resource and `status`; other
    /// subresources write objects of another kind).
    tracked: bool,
}

/// Upstream's manager name for a request without `fieldManager`: the User-Agent up to its
/// first `/`, printable characters only, at most 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let head = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in head.chars().filter(|c| !c.is_control()) {
        if out.len().saturating_add(c.len_utf8()) > crate::params::FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

impl FieldManager {
    /// `schema`: the kind's (built-in kinds); `None` deduces types from values.
    pub fn new(
        schema: Option<&PatchSchema>,
        manager: &str,
        api_version: &str,
        subresource: &str,
    ) -> Self {
        Self {
            ty: Ty::root(schema),
            writer: Writer {
                manager: manager.to_string(),
                api_version: api_version.to_string(),
                subresource: subresource.to_string(),
                now: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            },
            tracked: matches!(subresource, "" | "status"),
        }
    }

    /// Records a create or update by the writer into `new`'s managedFields. `old` is the
    /// stored object (`None` for a create). The request's own managedFields are taken when
    /// valid and non-empty (and ignored on subresources), `[{}]` clears them; a failure to
    /// compute ownership drops managedFields rather than failing the write, as upstream.
    pub fn update(&self, old: Option<&Object>, new: &mut Object) {
        if !self.tracked {
            return;
        }
        // Both objects are walked where they are: no copy.
        let empty = Map::new();
        let old_map = old.map(Object::as_map).unwrap_or(&empty);
        let requested = if self.writer.subresource.is_empty() {
            Managed::requested(new.as_map())
        } else {
            Requested::Keep
        };
        let recorded = match requested {
            Requested::Reset => None,
            Requested::Use(m) => Some(m),
            Requested::Keep => Some(match old {
                Some(_) => Managed::decode_map(old_map).unwrap_or_default(),
                None => Managed::default(),
            }),
        }
        .map(|mut managed| {
            managed::update(&mut managed, old_map, new.as_map(), &self.ty, &self.writer)
                .map(|()| managed)
        });
        match recorded {
            None => {
                new.metadata_mut().shift_remove("managedFields");
            }
            Some(Ok(managed)) => managed.encode_into(new.as_map_mut()),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "managedFields dropped: ownership not computable");
                new.metadata_mut().shift_remove("managedFields");
            }
        }
    }

    /// Applies `config` (the parsed apply body) over `live` (`None`: the object does not
    /// exist yet and is created from the configuration). Returns the object to store.
    pub fn apply(
        &self,
        live: Option<&Object>,
        config: &Value,
        force: bool,
    ) -> Result<Object, ApiError> {
        let Value::Object(config_map) = config else {
            return Err(ApiError::bad_request(
                "error decoding YAML: the apply configuration is not an object",
            ));
        };
        if config_map
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        let live_value = live
            .map(|o| Value::Object(o.as_map().clone()))
            .unwrap_or_else(|| Value::Object(Map::new()));
        let mut managed = Managed::decode(&live_value).unwrap_or_default();
        let merged = managed::apply(
            &mut managed,
            &live_value,
            config,
            &self.ty,
            &self.writer,
            force,
        )
        .map_err(apply_error)?;
        let mut out = match merged {
            Some(Value::Object(m)) => Object::from(m),
            _ => match live {
                Some(o) => o.clone(),
                None => Object::from(config_map.clone()),
            },
        };
        managed.encode_into(out.as_map_mut());
        Ok(out)
    }
}

/// A conflict is 409 `Conflict` with one `FieldManagerConflict` cause per field, as
/// upstream's `NewApplyConflict`; a configuration that cannot be walked is 422.
fn apply_error(e: ApplyError) -> ApiError {
    match &e {
        ApplyError::Conflicts(conflicts) => {
            let causes = conflicts
                .iter()
                .map(|c| StatusCause {
                    reason: "FieldManagerConflict".into(),
                    message: format!("conflict with {}", c.manager),
                    field: set::path_string(&c.path),
                })
                .collect();
            ApiError::new(409, StatusReason::Conflict, e.to_string()).with_details(StatusDetails {
                causes,
                ..Default::default()
            })
        }
        ApplyError::Walk(w) => ApiError::new(422, StatusReason::Invalid, w.to_string()),
    }
}
