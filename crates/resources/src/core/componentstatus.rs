//! `componentstatuses` (v1, deprecated since 1.19), as upstream's `pkg/registry/core/
//! componentstatus`: nothing stored; each get or list probes the components kube-apiserver
//! knows of — kube-controller-manager and kube-scheduler on their default secure ports on this
//! host (`https://127.0.0.1:10257/healthz`, `:10259`, certificates not verified) and the storage
//! (`etcd-0`: etcd, or the embedded store standing in for it) — and answers one `Healthy`
//! condition each. Every answer carries upstream's deprecation warning.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ComponentStatus;
use kapi_machinery::error::StatusReason;
use kapi_machinery::{ApiError, GetOptions, ListOptions, Object};
use kapi_proxy::{Location, ProxyConfig, Scheme};
use kapi_registry::rest::{
    self, Context, Decoded, FieldValidation, Getter, Lister, ObjectList, ResourceInfo,
    TableConvertor,
};
use kapi_registry::strategy::default_field_label_error;
use kapi_storage::DynStorage;
use serde_json::json;
use std::time::Duration;

/// Upstream's `probeTimeOut`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Upstream's HTTP prober reads at most this much of a body.
const MAX_BODY: usize = 10 * 1024;
/// What every request to the resource is told (the type's deprecation).
const DEPRECATION: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// A component to probe.
#[derive(Clone, Copy)]
enum Server {
    /// `GET https://127.0.0.1:<port>/healthz`.
    Http(u16),
    /// The storage's health check.
    Storage,
}

/// Upstream's `serversToValidate`, in a fixed order (upstream's is a Go map's).
const SERVERS: &[(&str, Server)] = &[
    ("controller-manager", Server::Http(10257)),
    ("scheduler", Server::Http(10259)),
    ("etcd-0", Server::Storage),
];

/// The probe's verdict: upstream's `probe.Result` turned into a condition status.
struct Verdict {
    status: &'static str,
    message: String,
    error: String,
}

/// The read-only `componentstatuses` storage.
pub struct ComponentStatusStorage {
    info: ResourceInfo,
    storage: DynStorage,
    proxy: ProxyConfig,
    printer: crate::printers::Printer,
}

impl ComponentStatusStorage {
    /// Probes `storage` as `etcd-0`.
    pub fn new(storage: DynStorage) -> Self {
        Self {
            info: ResourceInfo {
                list_kind: "ComponentStatusList".into(),
                singular: "componentstatus".into(),
                short_names: vec!["cs".into()],
                ..ResourceInfo::new("", "v1", "componentstatuses", "ComponentStatus", false)
            },
            storage,
            proxy: ProxyConfig {
                dial_timeout: PROBE_TIMEOUT,
                ..Default::default()
            },
            printer: crate::printers::core::COMPONENT_STATUSES,
        }
    }

    async fn probe(&self, server: Server) -> Verdict {
        match server {
            Server::Storage => match self.storage.health().await {
                Ok(()) => Verdict {
                    status: "True",
                    message: "ok".into(),
                    error: String::new(),
                },
                Err(e) => Verdict {
                    status: "False",
                    message: String::new(),
                    error: e.to_string(),
                },
            },
            Server::Http(port) => {
                let location = Location {
                    scheme: Scheme::Https,
                    host: "127.0.0.1".into(),
                    port,
                    path: "/healthz".into(),
                    query: String::new(),
                };
                let answer = tokio::time::timeout(
                    PROBE_TIMEOUT,
                    kapi_proxy::probe(&location, &self.proxy, MAX_BODY),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(
                        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                            .into(),
                    )
                });
                // Upstream's HTTP prober: a transport error is a failure whose message is the
                // error; 2xx succeeds with the body; 3xx is a warning (unknown); else failure.
                let (status, message) = match answer {
                    Err(e) => ("False", format!("Get {:?}: {e}", location.url())),
                    Ok((code, body)) if (200..300).contains(&code) => {
                        ("True", String::from_utf8_lossy(&body).into_owned())
                    }
                    Ok((code, body)) if (300..400).contains(&code) => (
                        "Unknown",
                        format!(
                            "Probe terminated redirects, Response body: {}",
                            String::from_utf8_lossy(&body)
                        ),
                    ),
                    Ok((code, _)) => (
                        "False",
                        format!("HTTP probe failed with statuscode: {code}"),
                    ),
                };
                Verdict {
                    status,
                    message,
                    error: String::new(),
                }
            }
        }
    }

    /// Upstream's `getComponentStatus`: the object, which has no creation time.
    async fn status(&self, name: &str, server: Server) -> Result<Object, ApiError> {
        let v = self.probe(server).await;
        let mut condition = serde_json::Map::new();
        condition.insert("type".into(), json!("Healthy"));
        condition.insert("status".into(), json!(v.status));
        if !v.message.is_empty() {
            condition.insert("message".into(), json!(v.message));
        }
        if !v.error.is_empty() {
            condition.insert("error".into(), json!(v.error));
        }
        Object::from_value(json!({
            "kind": "ComponentStatus",
            "apiVersion": "v1",
            "metadata": {"name": name, "creationTimestamp": null},
            "conditions": [condition],
        }))
    }
}

impl rest::Storage for ComponentStatusStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        kapi_registry::codec::decode::<ComponentStatus>(body, validation)
    }
    fn as_getter(&self) -> Option<&dyn Getter> {
        Some(self)
    }
    fn as_lister(&self) -> Option<&dyn Lister> {
        Some(self)
    }
    fn as_table_convertor(&self) -> Option<&dyn TableConvertor> {
        Some(&self.printer)
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Some(generator.subschema_for::<ComponentStatus>())
    }
    fn request_warnings(&self) -> Vec<String> {
        vec![DEPRECATION.into()]
    }
}

#[async_trait]
impl Getter for ComponentStatusStorage {
    async fn get(&self, _: &Context, name: &str, _: &GetOptions) -> Result<Object, ApiError> {
        match SERVERS.iter().find(|(n, _)| *n == name) {
            Some((n, server)) => self.status(n, *server).await,
            // Upstream returns a plain Go error: a 500 without a reason.
            None => Err(ApiError::new(
                500,
                StatusReason::Unknown,
                format!("Component not found: {name}"),
            )),
        }
    }
}

#[async_trait]
impl Lister for ComponentStatusStorage {
    /// Every component, probed at once; labels and `metadata.name` select among them.
    async fn list(&self, _: &Context, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        for r in &opts.predicate.field.requirements {
            if !matches!(r.field.as_str(), "metadata.name" | "metadata.namespace") {
                return Err(ApiError::bad_request(default_field_label_error(&r.field)));
            }
        }
        let probes = SERVERS.iter().map(|(n, s)| self.status(n, *s));
        let mut items = Vec::new();
        for obj in futures::future::join_all(probes).await {
            let obj = obj?;
            if opts.predicate.matches(&obj) {
                items.push(obj);
            }
        }
        Ok(ObjectList {
            items,
            resource_version: String::new(),
            continue_token: None,
            remaining_item_count: None,
            encoded: None,
        })
    }
}
