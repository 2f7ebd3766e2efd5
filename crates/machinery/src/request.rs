//! `RequestInfo` (what a request is about, parsed from its path once) and `UserInfo` (who sent
//! it). The parsing follows kube-apiserver's `RequestInfoFactory`.

use crate::fields::FieldSelector;
use std::collections::BTreeMap;

/// What a request addresses. Non-resource requests (`/healthz`, `/version`, `/api`) have
/// `is_resource_request == false` and only `path` and `verb` set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub is_resource_request: bool,
    pub path: String,
    /// Kubernetes verb: get list watch create update patch delete deletecollection, or the
    /// lowercase HTTP method for non-resource requests.
    pub verb: String,
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub parts: Vec<String>,
}

impl RequestInfo {
    /// Parses a request's method, path and query.
    pub fn resolve(method: &str, path: &str, query: &str) -> RequestInfo {
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.to_ascii_lowercase(),
            ..Default::default()
        };
        let mut parts: Vec<String> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        if parts.is_empty() {
            return info;
        }
        let Some(prefix) = parts.first().cloned() else {
            return info;
        };
        if prefix != "api" && prefix != "apis" {
            return info;
        }
        info.api_prefix = prefix.clone();
        parts.remove(0);
        if prefix == "apis" {
            if parts.is_empty() {
                return info;
            }
            info.api_group = parts.remove(0);
        }
        if parts.is_empty() {
            return info;
        }
        info.api_version = parts.remove(0);
        if parts.is_empty() {
            return info;
        }
        info.is_resource_request = true;
        info.verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
        if matches!(parts.first().map(String::as_str), Some("watch" | "proxy")) {
            if parts.len() < 2 {
                info.is_resource_request = false;
                return info;
            }
            info.verb = parts.remove(0);
        }
        // `/namespaces/<ns>/<resource>...` addresses a resource inside the namespace; the
        // namespace's own subresources (`status`, `finalize`) keep `namespaces` as the resource.
        if let [first, ns, rest @ ..] = parts.as_slice() {
            if first == "namespaces" {
                info.namespace = ns.clone();
                if rest
                    .first()
                    .is_some_and(|p| p != "status" && p != "finalize")
                {
                    parts.drain(..2);
                }
            }
        }
        if let Some(subresource) = parts.get(2) {
            info.subresource = subresource.clone();
        }
        if let Some(name) = parts.get(1) {
            info.name = name.clone();
        }
        info.resource = parts.first().cloned().unwrap_or_default();
        info.parts = parts;

        if info.name.is_empty() && info.verb == "get" {
            info.verb = "list".into();
        }
        if info.verb == "list" {
            let mut watch = false;
            for (k, v) in form_urlencoded::parse(query.as_bytes()) {
                match k.as_ref() {
                    "watch" => {
                        watch = matches!(v.as_ref(), "true" | "1" | "True" | "TRUE" | "t" | "T")
                    }
                    "fieldSelector" => {
                        if let Ok(sel) = FieldSelector::parse(&v) {
                            if let Some(name) = sel.required_value("metadata.name") {
                                if crate::validation::is_valid_path_segment_name(name).is_empty() {
                                    info.name = name.to_string();
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            if watch {
                info.verb = "watch".into();
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".into();
        }
        info
    }

    /// Watches (and proxies) are long-running: no request timeout, not counted in flight.
    pub fn is_long_running(&self) -> bool {
        self.verb == "watch"
            || self.verb == "proxy"
            || matches!(
                self.subresource.as_str(),
                "exec" | "attach" | "portforward" | "log" | "proxy"
            )
    }

    /// Writes, for max-in-flight's mutating bucket.
    pub fn is_mutating(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection" | "post" | "put"
        )
    }
}

/// The authenticated user (`user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The fields of `authentication.k8s.io/v1 UserInfo` (`username`, `uid`, `groups`,
    /// `extra`), empty ones left out as Go's omitempty does; CSR specs carry the same names.
    pub fn to_json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        if !self.name.is_empty() {
            m.insert("username".into(), self.name.clone().into());
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            m.insert("groups".into(), serde_json::json!(self.groups));
        }
        if !self.extra.is_empty() {
            m.insert("extra".into(), serde_json::json!(self.extra));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_kube_apiserver() {
        let r = RequestInfo::resolve("GET", "/api/v1/namespaces/default/configmaps", "");
        assert_eq!(
            (
                r.verb.as_str(),
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str()
            ),
            ("list", "default", "configmaps", "")
        );
        let r = RequestInfo::resolve(
            "GET",
            "/apis/apps/v1/namespaces/ns/deployments/web/status",
            "",
        );
        assert_eq!(
            (
                r.verb.as_str(),
                r.api_group.as_str(),
                r.subresource.as_str(),
                r.name.as_str()
            ),
            ("get", "apps", "status", "web")
        );
        let r = RequestInfo::resolve("GET", "/api/v1/namespaces/ns", "");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "ns", "ns")
        );
        let r = RequestInfo::resolve("PUT", "/api/v1/namespaces/ns/finalize", "");
        assert_eq!(
            (r.verb.as_str(), r.resource.as_str(), r.subresource.as_str()),
            ("update", "namespaces", "finalize")
        );
        let r = RequestInfo::resolve(
            "GET",
            "/api/v1/pods",
            "watch=true&fieldSelector=metadata.name%3Dp",
        );
        assert_eq!((r.verb.as_str(), r.name.as_str()), ("watch", "p"));
        let r = RequestInfo::resolve("DELETE", "/api/v1/namespaces/d/secrets", "");
        assert_eq!(r.verb, "deletecollection");
        let r = RequestInfo::resolve("GET", "/api/v1/watch/namespaces/d/secrets", "");
        assert_eq!((r.verb.as_str(), r.resource.as_str()), ("watch", "secrets"));
        let r = RequestInfo::resolve("GET", "/healthz", "");
        assert!(!r.is_resource_request);
        assert_eq!(r.verb, "get");
        assert!(!RequestInfo::resolve("GET", "/apis/apps/v1", "").is_resource_request);
    }
}
