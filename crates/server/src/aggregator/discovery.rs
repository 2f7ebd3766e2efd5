//! Discovery of groups served by other API servers: upstream's availability check (a GET of
//! the backend's `/apis/<group>/<version>` as `system:kube-aggregator`, `Passed` or
//! `FailedDiscoveryCheck`, k8s.io/kube-aggregator `pkg/controllers/status`), the backend's
//! aggregated discovery entry fetched with it (upstream's discovery manager), and the remote
//! groups added to kapi's own `/apis` (legacy: from the APIServices, as upstream's
//! `apisHandler`; aggregated: the fetched entries) and `/apis/<group>` (`apiGroupHandler`).

use super::proxy::{proxy_config, set_user_headers};
use super::remote::{Remote, Remotes};
use crate::body::{full, HttpResponse};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use http_body_util::BodyExt;
use kapi_machinery::UserInfo;
use kapi_proxy::{Location, Scheme};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Upstream's attempts per check, and how long one may take.
const ATTEMPTS: usize = 5;
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(6);
/// Discovery documents are small; a bigger answer is cut.
const MAX_DOCUMENT: usize = 8 << 20;
/// What the backend's aggregated `/apis` is asked for (v2beta1 for 1.26–1.29 servers).
const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The identity of the availability check: upstream's, a member of `system:masters`.
fn aggregator_user() -> UserInfo {
    UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    }
}

/// One GET of `location` from a remote server as `user`: the status and (at most `limit`
/// bytes of) the body, or the transport's error.
pub(super) async fn get(
    remotes: &Remotes,
    tls: &Result<Arc<rustls::ClientConfig>, String>,
    location: &Location,
    accept: Option<&'static str>,
    user: &UserInfo,
    limit: usize,
) -> Result<(u16, Vec<u8>), String> {
    let tls = tls.clone()?;
    let mut headers = HeaderMap::new();
    set_user_headers(&mut headers, user);
    if let Some(a) = accept {
        headers.insert(header::ACCEPT, HeaderValue::from_static(a));
    }
    kapi_proxy::get(location, &proxy_config(remotes, tls), headers, limit).await
}

/// The availability controller's discovery check of `remote`; the error is the condition's
/// message (upstream's words). On success the backend's aggregated discovery entry of the
/// version is kept for `/apis`.
pub async fn check(remotes: &Remotes, remote: &Remote) -> Result<(), String> {
    let path = if remote.name == "v1." {
        format!("/api/{}", remote.version)
    } else {
        format!("/apis/{}/{}", remote.group, remote.version)
    };
    let attempt = || async {
        let (host, port) = remotes.resolve(remote).await?;
        let location = Location {
            scheme: Scheme::Https,
            host,
            port,
            path: path.clone(),
            query: String::new(),
        };
        let url = location.url();
        match tokio::time::timeout(
            ATTEMPT_TIMEOUT,
            get(
                remotes,
                &remote.check_tls,
                &location,
                None,
                &aggregator_user(),
                MAX_DOCUMENT,
            ),
        )
        .await
        {
            Err(_) => Err(format!("timed out waiting for {url}")),
            Ok(Err(e)) => Err(format!(
                "failing or missing response from {url}: Get {url:?}: {e}"
            )),
            Ok(Ok((code, _))) if !(200..300).contains(&code) => Err(format!(
                "failing or missing response from {url}: bad status from {url}: {code}"
            )),
            Ok(Ok(_)) => Ok(location),
        }
    };
    let results = futures::future::join_all((0..ATTEMPTS).map(|_| attempt())).await;
    let mut last = Err("no attempt".to_string());
    for r in results {
        last = r;
        if last.is_ok() {
            break;
        }
    }
    let location = last?;
    let entry = fetch_entry(remotes, remote, location).await;
    remotes.set_discovery(&remote.name, entry);
    Ok(())
}

/// The backend's aggregated discovery entry of `remote`'s version (`None` when the backend
/// serves no aggregated discovery).
async fn fetch_entry(remotes: &Remotes, remote: &Remote, mut location: Location) -> Option<Value> {
    location.path = "/apis".into();
    let (code, body) = get(
        remotes,
        &remote.tls,
        &location,
        Some(AGGREGATED_ACCEPT),
        &aggregator_user(),
        MAX_DOCUMENT,
    )
    .await
    .ok()?;
    if code != 200 {
        return None;
    }
    let doc: Value = serde_json::from_slice(&body).ok()?;
    let group = doc
        .get("items")?
        .as_array()?
        .iter()
        .find(|g| g.pointer("/metadata/name").and_then(Value::as_str) == Some(&remote.group))?;
    group
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("version").and_then(Value::as_str) == Some(&remote.version))
        .cloned()
}

/// `metav1.APIGroup` of the APIServices of one group, `versions` in upstream's order
/// (`convertToDiscoveryAPIGroup`: the first is preferred).
fn api_group(group: &str, versions: &[String]) -> Option<Value> {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first()?.clone();
    Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
}

/// `/apis/<group>` of a group some other server serves (upstream's `apiGroupHandler`: every
/// APIService of the group, kapi's own versions included).
pub fn group_document(remotes: &Remotes, group: &str) -> Option<HttpResponse> {
    if remotes.group(group).is_empty() {
        return None;
    }
    let Value::Object(g) = api_group(group, &remotes.group_versions(group))? else {
        return None;
    };
    let mut doc = json!({"kind": "APIGroup", "apiVersion": "v1"});
    if let Some(o) = doc.as_object_mut() {
        o.extend(g);
    }
    Some(json_response(
        StatusCode::OK,
        "application/json",
        &doc,
        None,
    ))
}

fn json_response(
    code: StatusCode,
    content_type: &str,
    doc: &Value,
    etag: Option<&str>,
) -> HttpResponse {
    let mut body = serde_json::to_vec(doc).unwrap_or_default();
    body.push(b'\n');
    let mut resp = http::Response::new(full(body));
    *resp.status_mut() = code;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if let Some(Ok(v)) = etag.map(HeaderValue::from_str) {
        resp.headers_mut().insert(header::ETAG, v);
        resp.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
    }
    resp
}

/// Inserts `item` (named `name`) into `list` where upstream's order puts it: by group
/// priority, highest first, then by name.
fn insert_ordered(remotes: &Remotes, list: &mut Vec<Value>, item: Value, name: &str, at: &str) {
    let p = remotes.group_priority(name);
    let pos = list
        .iter()
        .position(|g| {
            let other = g.pointer(at).and_then(Value::as_str).unwrap_or_default();
            let q = remotes.group_priority(other);
            q < p || (q == p && other > name)
        })
        .unwrap_or(list.len());
    list.insert(pos, item);
}

/// The aggregated discovery versions of a group some other server serves: kapi's own entries
/// (`local`) and each remote APIService's entry as its check fetched it (a bare `Stale` one
/// while there is none, as upstream lists a version it has no document for), ordered as
/// [`Remotes::group_versions`].
fn aggregated_versions(remotes: &Remotes, group: &str, local: Vec<Value>) -> Vec<Value> {
    let mut entries = local;
    for r in remotes.group(group) {
        let known = entries
            .iter()
            .any(|e| e.get("version").and_then(Value::as_str) == Some(r.version.as_str()));
        if !known {
            entries.push(
                remotes
                    .discovery(&r.name)
                    .unwrap_or_else(|| json!({"version": r.version, "freshness": "Stale"})),
            );
        }
    }
    let order = remotes.group_versions(group);
    entries.sort_by_key(|e| {
        let v = e.get("version").and_then(Value::as_str).unwrap_or_default();
        order.iter().position(|o| o == v).unwrap_or(order.len())
    });
    entries
}

/// kapi's answer to `GET /apis` with the groups other servers serve: a group only they serve
/// added, a group kapi serves too listing every APIService's version. kapi answers discovery
/// in JSON whatever encoding was asked for (see `kapi_endpoints::discovery`), so every answer
/// is merged; anything else is passed as it is.
pub async fn merge_apis(
    remotes: &Remotes,
    if_none_match: Option<String>,
    resp: HttpResponse,
) -> HttpResponse {
    if resp.status() != StatusCode::OK {
        return resp;
    }
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let aggregated = content_type.contains("g=apidiscovery.k8s.io");
    if !aggregated && !content_type.starts_with("application/json") {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(bytes) = body.collect().await.map(|b| b.to_bytes()) else {
        return http::Response::from_parts(parts, full(bytes::Bytes::new()));
    };
    let Ok(mut doc) = serde_json::from_slice::<Value>(&bytes) else {
        return http::Response::from_parts(parts, full(bytes));
    };
    let (key, at) = if aggregated {
        ("items", "/metadata/name")
    } else {
        ("groups", "/name")
    };
    let Some(list) = doc.get_mut(key).and_then(Value::as_array_mut) else {
        return http::Response::from_parts(parts, full(bytes));
    };
    for group in remotes.groups() {
        let known = list
            .iter()
            .position(|g| g.pointer(at).and_then(Value::as_str) == Some(group.as_str()));
        let item = if aggregated {
            let local = known
                .and_then(|i| list.get_mut(i))
                .and_then(|g| g.get_mut("versions"))
                .map(Value::take)
                .and_then(|v| serde_json::from_value::<Vec<Value>>(v).ok())
                .unwrap_or_default();
            let versions = aggregated_versions(remotes, &group, local);
            json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
        } else {
            match api_group(&group, &remotes.group_versions(&group)) {
                Some(g) => g,
                None => continue,
            }
        };
        match known.and_then(|i| list.get_mut(i)) {
            Some(slot) => {
                // kapi's own entry keeps its metadata; only the versions change.
                if let (true, Some(o)) = (aggregated, slot.as_object_mut()) {
                    o.insert(
                        "versions".into(),
                        item.get("versions").cloned().unwrap_or_default(),
                    );
                } else {
                    *slot = item;
                }
            }
            None => insert_ordered(remotes, list, item, &group, at),
        }
    }
    if !aggregated {
        return json_response(StatusCode::OK, &content_type, &doc, None);
    }
    // The merged document has its own ETag, so a client's cached copy is revalidated.
    let etag = {
        use sha2::Digest;
        let digest = sha2::Sha512::digest(serde_json::to_vec(&doc).unwrap_or_default());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("\"{hex}\"")
    };
    if if_none_match.as_deref() == Some(etag.as_str()) {
        let mut r = json_response(
            StatusCode::NOT_MODIFIED,
            &content_type,
            &Value::Null,
            Some(&etag),
        );
        *r.body_mut() = full(bytes::Bytes::new());
        r.headers_mut().remove(header::CONTENT_TYPE);
        return r;
    }
    json_response(StatusCode::OK, &content_type, &doc, Some(&etag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregator::remote::Settings;
    use kapi_machinery::Object;

    fn apiservice(group: &str, version: &str, priority: i64, remote: bool) -> Object {
        let mut spec = json!({"group": group, "version": version,
            "groupPriorityMinimum": priority, "versionPriority": 15});
        if remote {
            spec["service"] = json!({"namespace": "wardle", "name": "api", "port": 443});
            spec["insecureSkipTLSVerify"] = json!(true);
        }
        Object::from_value(
            json!({"metadata": {"name": format!("{version}.{group}")}, "spec": spec}),
        )
        .unwrap()
    }

    fn remotes() -> Remotes {
        let r = Remotes::new(Settings {
            routing: true,
            client: None,
            dial_timeout: Duration::from_secs(1),
            services: None,
            endpoints: None,
        });
        r.upsert(&apiservice("apps", "v1", 17800, false));
        r.upsert(&apiservice("zz.example.com", "v1", 1000, false));
        r.upsert(&apiservice("wardle.example.com", "v1alpha1", 1000, true));
        r
    }

    /// `merge_apis` of kapi's legacy `/apis` document `local`.
    async fn merged_legacy(r: &Remotes, local: &Value) -> Value {
        let mut resp = http::Response::new(full(serde_json::to_vec(local).unwrap()));
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let merged = merge_apis(r, None, resp).await;
        let body = merged.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn legacy_apis_lists_a_remote_group_in_priority_order() {
        let r = remotes();
        let local = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "apiregistration.k8s.io"}, {"name": "apps"}, {"name": "zz.example.com"}]});
        let doc = merged_legacy(&r, &local).await;
        let names: Vec<&str> = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "apiregistration.k8s.io",
                "apps",
                "wardle.example.com",
                "zz.example.com"
            ]
        );
        assert_eq!(
            doc["groups"][2]["preferredVersion"]["groupVersion"],
            "wardle.example.com/v1alpha1"
        );
    }

    #[tokio::test]
    async fn a_group_served_here_and_elsewhere_lists_every_version_by_priority() {
        let r = remotes();
        let mut v2 = apiservice("apps", "v2", 100, true);
        v2.insert(
            "spec",
            json!({"group": "apps", "version": "v2", "groupPriorityMinimum": 100,
            "versionPriority": 20, "insecureSkipTLSVerify": true,
            "service": {"namespace": "wardle", "name": "api", "port": 443}}),
        );
        r.upsert(&v2);
        let local = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]});
        let doc = merged_legacy(&r, &local).await;
        let apps = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["versions"][0]["version"], "v2");
        assert_eq!(apps["versions"][1]["version"], "v1");
        assert_eq!(apps["preferredVersion"]["version"], "v2");
    }

    #[tokio::test]
    async fn the_group_document_is_upstreams() {
        let resp = group_document(&remotes(), "wardle.example.com").unwrap();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            String::from_utf8_lossy(&body),
            "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"wardle.example.com\",\"versions\":[{\"groupVersion\":\"wardle.example.com/v1alpha1\",\"version\":\"v1alpha1\"}],\"preferredVersion\":{\"groupVersion\":\"wardle.example.com/v1alpha1\",\"version\":\"v1alpha1\"}}\n"
        );
        assert!(group_document(&remotes(), "apps").is_none());
    }
}
