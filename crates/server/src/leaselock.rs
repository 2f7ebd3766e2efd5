//! A `coordination.k8s.io/v1` Lease read and written through the registry, as client-go's
//! `resourcelock.LeaseLock` does: get, create, and update guarded by the resourceVersion last
//! seen (a concurrent writer makes the update a Conflict). Leader election and the apiserver
//! identity leases share it.

use kapi_machinery::{ApiError, GetOptions, Object, UserInfo};
use kapi_registry::rest::{
    validate_nothing, validate_update_nothing, ApiGroupInfo, Context, FieldValidation, Storage,
    UpdatedObjectFn, WriteOptions,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// `spec` of a Lease, as client-go's `LeaderElectionRecord` maps onto it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseRecord {
    pub holder_identity: String,
    pub lease_duration_seconds: i64,
    /// MicroTime strings (`2006-01-02T15:04:05.000000Z`).
    pub acquire_time: Option<String>,
    pub renew_time: Option<String>,
    pub lease_transitions: i64,
}

impl LeaseRecord {
    pub fn from_lease(lease: &Object) -> Self {
        let spec = lease.get("spec");
        let field = |k: &str| spec.and_then(|s| s.get(k));
        let text = |k: &str| field(k).and_then(Value::as_str).map(String::from);
        Self {
            holder_identity: text("holderIdentity").unwrap_or_default(),
            lease_duration_seconds: field("leaseDurationSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            acquire_time: text("acquireTime"),
            renew_time: text("renewTime"),
            lease_transitions: field("leaseTransitions")
                .and_then(Value::as_i64)
                .unwrap_or(0),
        }
    }

    fn spec(&self) -> Value {
        let mut spec = json!({
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        });
        for (k, v) in [
            ("acquireTime", &self.acquire_time),
            ("renewTime", &self.renew_time),
        ] {
            if let (Some(v), Some(spec)) = (v, spec.as_object_mut()) {
                spec.insert(k.into(), json!(v));
            }
        }
        spec
    }
}

/// Now as a Kubernetes MicroTime.
pub fn micro_time_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// Parses a MicroTime (or RFC 3339 time).
pub fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// The served `coordination.k8s.io` leases storage.
pub fn leases_storage(groups: &[ApiGroupInfo]) -> Option<Arc<dyn Storage>> {
    crate::rbac::find_storage(groups, "coordination.k8s.io", "leases")
}

/// One Lease, and the object as last read or written (its resourceVersion guards updates).
pub struct LeaseLock {
    storage: Arc<dyn Storage>,
    ctx: Context,
    name: String,
    labels: Value,
    last: Option<Object>,
}

fn unsupported(verb: &str) -> ApiError {
    ApiError::internal(format!("leases cannot be used: no {verb}"))
}

impl LeaseLock {
    /// The Lease `namespace/name`, written by `user` with `labels` (may be empty).
    pub fn new(
        storage: Arc<dyn Storage>,
        namespace: &str,
        name: &str,
        user: &str,
        labels: Value,
    ) -> Self {
        let ctx = Context {
            namespace: namespace.to_string(),
            user: UserInfo {
                name: user.to_string(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            },
        };
        Self {
            storage,
            ctx,
            name: name.to_string(),
            labels,
            last: None,
        }
    }

    /// `namespace/name`, for logs.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.ctx.namespace, self.name)
    }

    /// The Lease's record; NotFound when there is none.
    pub async fn get(&mut self) -> Result<LeaseRecord, ApiError> {
        let getter = self.storage.as_getter().ok_or_else(|| unsupported("get"))?;
        let lease = getter
            .get(&self.ctx, &self.name, &GetOptions::default())
            .await?;
        let record = LeaseRecord::from_lease(&lease);
        self.last = Some(lease);
        Ok(record)
    }

    pub async fn create(&mut self, record: &LeaseRecord) -> Result<(), ApiError> {
        let creater = self
            .storage
            .as_creater()
            .ok_or_else(|| unsupported("create"))?;
        let mut metadata = json!({"name": self.name, "namespace": self.ctx.namespace});
        if let (Some(m), Some(l)) = (metadata.as_object_mut(), self.labels.as_object()) {
            if !l.is_empty() {
                m.insert("labels".into(), self.labels.clone());
            }
        }
        let body = Object::from_value(json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": record.spec(),
        }))?;
        let (obj, _) = self.storage.decode(body, FieldValidation::Strict)?;
        let created = creater
            .create(&self.ctx, obj, validate_nothing(), &WriteOptions::default())
            .await?;
        self.last = Some(created.object);
        Ok(())
    }

    /// Writes `record` over the Lease last read or written; a Conflict when it changed since.
    pub async fn update(&mut self, record: &LeaseRecord) -> Result<(), ApiError> {
        let mut lease = self
            .last
            .clone()
            .ok_or_else(|| ApiError::internal("lease not initialized, call get or create first"))?;
        let updater = self
            .storage
            .as_updater()
            .ok_or_else(|| unsupported("update"))?;
        lease.insert("spec", record.spec());
        if let Some(labels) = self.labels.as_object().filter(|l| !l.is_empty()) {
            let meta = lease.metadata_mut();
            let mut merged = meta
                .get("labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            merged.extend(labels.clone());
            meta.insert("labels".into(), Value::Object(merged));
        }
        let new_object: UpdatedObjectFn = Arc::new(move |_current: Option<Object>| {
            let lease = lease.clone();
            Box::pin(async move { Ok(lease) })
        });
        let updated = updater
            .update(
                &self.ctx,
                &self.name,
                new_object,
                validate_nothing(),
                validate_update_nothing(),
                false,
                &WriteOptions::default(),
            )
            .await?;
        self.last = Some(updated.object);
        Ok(())
    }
}
