//! The subresources served by a kubelet, a pod or a service rather than by storage:
//! `pods/log`, `pods/exec`, `pods/attach`, `pods/portforward`, `pods/proxy`, `nodes/proxy`
//! and `services/proxy`, as upstream's `pkg/registry/core/pod/rest` (`LogREST`, `ExecREST`,
//! `AttachREST`, `PortForwardREST`, `ProxyREST`), `pod/strategy.go` (`LogLocation`,
//! `ExecLocation`, `AttachLocation`, `PortForwardLocation`, `ResourceLocation`),
//! `node/strategy.go` and `service/storage` (`ResourceLocation`). Each resolves where the
//! request goes (a `kapi_proxy::Target`); `kapi-endpoints` carries it there.

use super::connect_options::{format_rfc3339, parse_port, Query};
use crate::{at, str_at};
use async_trait::async_trait;
use kapi_machinery::{ApiError, FieldError, GetOptions, GroupResource, GroupVersionKind, Object};
use kapi_proxy::kubelet::{
    address_not_allowed, connection_info, is_global_unicast, is_proxyable_ip, ConnectionInfo,
};
use kapi_proxy::{
    KubeletClientConfig, Location, Mode, Scheme, StreamOptions, Target, TransportKind,
};
use kapi_registry::rest::{
    ConnectRequest, Connecter, Context, Decoded, FieldValidation, Getter, ResourceInfo, Storage,
};
use serde_json::Value;
use std::sync::Arc;

/// Which subresource a [`ConnectStorage`] serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Log,
    Exec,
    Attach,
    PortForward,
    PodProxy,
    NodeProxy,
    ServiceProxy,
}

/// upstream's `upgradeableMethods`.
const UPGRADEABLE: &[&str] = &["GET", "POST"];
/// upstream's `proxyMethods`.
const PROXY: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// The stores a connect storage reads.
#[derive(Clone)]
pub struct Stores {
    pub pods: Arc<dyn Storage>,
    pub nodes: Arc<dyn Storage>,
    pub services: Arc<dyn Storage>,
    pub endpoints: Arc<dyn Storage>,
    pub kubelet: Arc<KubeletClientConfig>,
}

/// One connect subresource.
pub struct ConnectStorage {
    info: ResourceInfo,
    kind: Kind,
    stores: Stores,
}

/// Every connect subresource of pods, nodes and services.
pub fn storages(
    pods: &ResourceInfo,
    nodes: &ResourceInfo,
    services: &ResourceInfo,
    stores: Stores,
) -> Vec<Arc<dyn Storage>> {
    let make =
        |parent: &ResourceInfo, sub: &str, kind_name: &str, kind: Kind| -> Arc<dyn Storage> {
            Arc::new(ConnectStorage {
                info: parent.subresource_of(sub, kind_name),
                kind,
                stores: stores.clone(),
            })
        };
    vec![
        make(pods, "log", "Pod", Kind::Log),
        make(pods, "exec", "PodExecOptions", Kind::Exec),
        make(pods, "attach", "PodAttachOptions", Kind::Attach),
        make(
            pods,
            "portforward",
            "PodPortForwardOptions",
            Kind::PortForward,
        ),
        make(pods, "proxy", "PodProxyOptions", Kind::PodProxy),
        make(nodes, "proxy", "NodeProxyOptions", Kind::NodeProxy),
        make(services, "proxy", "ServiceProxyOptions", Kind::ServiceProxy),
    ]
}

impl Storage for ConnectStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, _: Object, _: FieldValidation) -> Decoded {
        Err(ApiError::bad_request(format!(
            "{} takes no body",
            self.info.path_name()
        )))
    }
    fn as_connecter(&self) -> Option<&dyn Connecter> {
        Some(self)
    }
}

async fn get(store: &Arc<dyn Storage>, ctx: &Context, name: &str) -> Result<Object, ApiError> {
    let getter: &dyn Getter = store
        .as_getter()
        .ok_or_else(|| ApiError::internal("the store cannot get"))?;
    getter.get(ctx, name, &GetOptions::default()).await
}

/// Every container name in upstream's `VisitContainers` order: init, regular, ephemeral.
fn container_names(pod: &Object) -> Vec<String> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| {
            at(pod, &["spec", k])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
        .collect()
}

/// upstream's `validateContainer`.
fn validate_container(container: &str, pod: &Object) -> Result<String, ApiError> {
    let name = pod.name();
    if container.is_empty() {
        let regular = at(pod, &["spec", "containers"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        return match regular.as_slice() {
            [only] => Ok(only
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                container_names(pod).join(" ")
            ))),
        };
    }
    if !container_names(pod).iter().any(|c| c == container) {
        return Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {name}"
        )));
    }
    Ok(container.to_string())
}

/// upstream's `utilnet.SplitSchemeNamePort`: `name`, `name:port` or `scheme:name:port`.
fn split_scheme_name_port(id: &str) -> Option<(String, String, String)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [n] => ("", *n, ""),
        [n, p] => ("", *n, *p),
        [s, n, p] => (*s, *n, *p),
        _ => return None,
    };
    if name.is_empty() || !matches!(scheme, "" | "http" | "https") {
        return None;
    }
    Some((scheme.into(), name.into(), port.into()))
}

fn scheme(s: &str) -> Scheme {
    if s == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    }
}

fn encode_query(pairs: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = pairs.iter().collect();
    // Go's `url.Values.Encode` sorts by key (values keep their order).
    sorted.sort_by_key(|(k, _)| *k);
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in sorted {
        ser.append_pair(k, v);
    }
    ser.finish()
}

impl ConnectStorage {
    fn pods_gr(&self) -> GroupResource {
        GroupResource::new("", self.info.resource.clone())
    }

    /// The node's kubelet (upstream's `GetConnectionInfo`); a missing node is reported under
    /// the request's resource, as upstream's node store names it from the request.
    async fn kubelet(&self, ctx: &Context, node: &str) -> Result<ConnectionInfo, ApiError> {
        let cluster = Context {
            namespace: String::new(),
            user: ctx.user.clone(),
        };
        let node_obj = get(&self.stores.nodes, &cluster, node).await.map_err(|e| {
            if e.is_not_found() {
                ApiError::not_found(&self.pods_gr(), node)
            } else {
                e
            }
        })?;
        connection_info(
            &Value::Object(node_obj.as_map().clone()),
            &self.stores.kubelet,
        )
    }

    fn kubelet_target(
        &self,
        info: &ConnectionInfo,
        path: String,
        query: String,
        mode: Mode,
        transport: TransportKind,
    ) -> Target {
        Target {
            location: Location {
                scheme: Scheme::Https,
                host: info.host.clone(),
                port: info.port,
                path,
                query,
            },
            transport,
            mode,
        }
    }

    async fn log(&self, ctx: &Context, name: &str, q: &Query) -> Result<Option<Target>, ApiError> {
        let tail = q.int64("tailLines")?;
        let limit = q.int64("limitBytes")?;
        let since_seconds = q.int64("sinceSeconds")?;
        let since_time = q.time("sinceTime")?;
        let mut errs = Vec::new();
        if let Some(t) = tail.filter(|t| *t < 0) {
            errs.push(FieldError::invalid(
                "tailLines",
                t,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(l) = limit.filter(|l| *l < 1) {
            errs.push(FieldError::invalid(
                "limitBytes",
                l,
                "must be greater than 0",
            ));
        }
        match (since_seconds, since_time) {
            // upstream's `field.NewPath("")` prints as `[]`.
            (Some(_), Some(_)) => errs.push(FieldError::forbidden(
                "[]",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(s), None) if s < 1 => errs.push(FieldError::invalid(
                "sinceSeconds",
                s,
                "must be greater than 0",
            )),
            _ => {}
        }
        if !errs.is_empty() {
            let gvk = GroupVersionKind::new("", "", "PodLogOptions");
            return Err(ApiError::invalid(&gvk, name, &errs));
        }
        let pod = get(&self.stores.pods, ctx, name).await?;
        let container = validate_container(&q.string("container"), &pod)?;
        let node = str_at(&pod, &["spec", "nodeName"]).to_string();
        if node.is_empty() {
            return Ok(None);
        }
        let info = self.kubelet(ctx, &node).await?;
        let mut params: Vec<(&str, String)> = Vec::new();
        for flag in ["follow", "previous", "timestamps"] {
            if q.bool(flag) {
                params.push((flag, "true".into()));
            }
        }
        if let Some(s) = since_seconds {
            params.push(("sinceSeconds", s.to_string()));
        }
        if let Some(t) = since_time {
            params.push(("sinceTime", format_rfc3339(&t)));
        }
        if let Some(t) = tail {
            params.push(("tailLines", t.to_string()));
        }
        if let Some(l) = limit {
            params.push(("limitBytes", l.to_string()));
        }
        let transport = if q.bool("insecureSkipTLSVerifyBackend") {
            TransportKind::KubeletInsecure
        } else {
            TransportKind::Kubelet
        };
        let path = format!(
            "/containerLogs/{}/{}/{container}",
            pod.namespace(),
            pod.name()
        );
        let mode = Mode::Log {
            resource: GroupResource::new("", "pods/log"),
            name: name.to_string(),
        };
        Ok(Some(self.kubelet_target(
            &info,
            path,
            encode_query(&params),
            mode,
            transport,
        )))
    }

    /// exec, attach and portforward: upstream's `streamLocation` / `PortForwardLocation`.
    async fn stream(
        &self,
        ctx: &Context,
        name: &str,
        q: &Query,
    ) -> Result<Option<Target>, ApiError> {
        let ports = q
            .all("ports")
            .iter()
            .map(|p| parse_port(p))
            .collect::<Result<Vec<_>, _>>()?;
        let pod = get(&self.stores.pods, ctx, name).await?;
        let container = match self.kind {
            Kind::PortForward => String::new(),
            _ => validate_container(&q.string("container"), &pod)?,
        };
        let node = str_at(&pod, &["spec", "nodeName"]).to_string();
        if node.is_empty() {
            return Err(ApiError::bad_request(format!(
                "pod {name} does not have a host assigned"
            )));
        }
        let info = self.kubelet(ctx, &node).await?;
        let options = StreamOptions {
            stdin: q.bool("stdin"),
            stdout: q.bool("stdout"),
            stderr: q.bool("stderr"),
            tty: q.bool("tty"),
        };
        let mut params: Vec<(&str, String)> = Vec::new();
        for (flag, on) in [
            ("input", options.stdin),
            ("output", options.stdout),
            ("error", options.stderr),
            ("tty", options.tty),
        ] {
            if on {
                params.push((flag, "1".into()));
            }
        }
        let (path, mode) = match self.kind {
            Kind::PortForward => {
                params.clear();
                if !ports.is_empty() {
                    let list: Vec<String> = ports.iter().map(i64::to_string).collect();
                    params.push(("port", list.join(",")));
                }
                (
                    format!("/portForward/{}/{}", pod.namespace(), pod.name()),
                    Mode::PortForward,
                )
            }
            kind => {
                if kind == Kind::Exec {
                    for c in q.all("command") {
                        params.push(("command", c));
                    }
                }
                let verb = if kind == Kind::Exec { "exec" } else { "attach" };
                (
                    format!("/{verb}/{}/{}/{container}", pod.namespace(), pod.name()),
                    Mode::RemoteCommand(options),
                )
            }
        };
        Ok(Some(self.kubelet_target(
            &info,
            path,
            encode_query(&params),
            mode,
            TransportKind::Kubelet,
        )))
    }

    /// `pods/proxy`: upstream's pod `ResourceLocation`.
    async fn pod_proxy(
        &self,
        ctx: &Context,
        id: &str,
        subpath: &str,
    ) -> Result<Option<Target>, ApiError> {
        let (s, name, mut port) = split_scheme_name_port(id)
            .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {id:?}")))?;
        let pod = get(&self.stores.pods, ctx, &name).await?;
        if port.is_empty() {
            let first = at(&pod, &["spec", "containers"])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("ports").and_then(Value::as_array))
                .find_map(|ports| ports.first())
                .and_then(|p| p.get("containerPort"))
                .and_then(Value::as_i64);
            if let Some(p) = first {
                port = p.to_string();
            }
        }
        let ip = at(&pod, &["status", "podIPs"])
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|p| p.get("ip"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let allowed = ip.parse().is_ok_and(|ip| {
            is_global_unicast(ip)
                || (self.stores.kubelet.allow_loopback_proxy_targets && ip.is_loopback())
        });
        if !allowed {
            return Err(address_not_allowed());
        }
        Ok(Some(self.proxy_target(
            &s,
            &ip,
            &port,
            subpath,
            TransportKind::Proxy,
        )?))
    }

    fn proxy_target(
        &self,
        s: &str,
        host: &str,
        port: &str,
        subpath: &str,
        transport: TransportKind,
    ) -> Result<Target, ApiError> {
        let scheme = scheme(s);
        let port = if port.is_empty() {
            if scheme == Scheme::Https {
                443
            } else {
                80
            }
        } else {
            port.parse::<u16>()
                .map_err(|_| ApiError::bad_request(format!("invalid port {port:?}")))?
        };
        Ok(Target {
            location: Location {
                scheme,
                host: host.to_string(),
                port,
                path: subpath.to_string(),
                query: String::new(),
            },
            transport,
            mode: Mode::Proxy,
        })
    }

    /// `nodes/proxy`: upstream's node `ResourceLocation`.
    async fn node_proxy(
        &self,
        ctx: &Context,
        id: &str,
        subpath: &str,
    ) -> Result<Option<Target>, ApiError> {
        let (s, name, port) = split_scheme_name_port(id)
            .ok_or_else(|| ApiError::bad_request(format!("invalid node request {id:?}")))?;
        let info = self.kubelet(ctx, &name).await?;
        let proxyable = match info.host.parse::<std::net::IpAddr>() {
            Ok(ip) => {
                is_proxyable_ip(ip)
                    || (self.stores.kubelet.allow_loopback_proxy_targets && ip.is_loopback())
            }
            Err(_) => match tokio::net::lookup_host((info.host.as_str(), info.port)).await {
                Ok(addrs) => addrs.into_iter().all(|a| {
                    is_proxyable_ip(a.ip())
                        || (self.stores.kubelet.allow_loopback_proxy_targets
                            && a.ip().is_loopback())
                }),
                Err(e) => return Err(ApiError::bad_request(e.to_string())),
            },
        };
        if !proxyable {
            return Err(address_not_allowed());
        }
        if port.is_empty() || port == info.port.to_string() {
            return Ok(Some(self.kubelet_target(
                &info,
                subpath.to_string(),
                String::new(),
                Mode::Proxy,
                TransportKind::Kubelet,
            )));
        }
        Ok(Some(self.proxy_target(
            &s,
            &info.host,
            &port,
            subpath,
            TransportKind::Proxy,
        )?))
    }

    /// `services/proxy`: upstream's service `ResourceLocation` (an endpoint of the port, whose
    /// address belongs to its pod).
    async fn service_proxy(
        &self,
        ctx: &Context,
        id: &str,
        subpath: &str,
    ) -> Result<Option<Target>, ApiError> {
        let (s, name, mut port) = split_scheme_name_port(id)
            .ok_or_else(|| ApiError::bad_request(format!("invalid service request {id:?}")))?;
        if let Ok(number) = port.parse::<i64>() {
            let svc = get(&self.stores.services, ctx, &name).await?;
            let named = at(&svc, &["spec", "ports"])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|p| p.get("port").and_then(Value::as_i64) == Some(number))
                .map(|p| {
                    p.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                });
            port = named.ok_or_else(|| {
                ApiError::service_unavailable(format!(
                    "no service port {number} found for service {name:?}"
                ))
            })?;
        }
        let eps = get(&self.stores.endpoints, ctx, &name).await.map_err(|e| {
            if e.is_not_found() {
                ApiError::not_found(&GroupResource::new("", "services"), &name)
            } else {
                e
            }
        })?;
        let subsets = at(&eps, &["subsets"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if subsets.is_empty() {
            return Err(ApiError::service_unavailable(format!(
                "no endpoints available for service {name:?}"
            )));
        }
        for ss in &subsets {
            let addresses = ss
                .get("addresses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let ports = ss
                .get("ports")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for p in ports
                .iter()
                .filter(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port)
            {
                for addr in &addresses {
                    if !self.is_valid_address(ctx, addr).await {
                        continue;
                    }
                    let ip = addr.get("ip").and_then(Value::as_str).unwrap_or_default();
                    let number = p.get("port").and_then(Value::as_i64).unwrap_or_default();
                    return Ok(Some(self.proxy_target(
                        &s,
                        ip,
                        &number.to_string(),
                        subpath,
                        TransportKind::Proxy,
                    )?));
                }
            }
        }
        Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {id:?}"
        )))
    }

    /// upstream's `isValidAddress`: the address's target is a pod of the namespace holding it.
    async fn is_valid_address(&self, ctx: &Context, addr: &Value) -> bool {
        let Some(target) = addr.get("targetRef") else {
            return false;
        };
        let field = |k: &str| target.get(k).and_then(Value::as_str).unwrap_or_default();
        if field("namespace") != ctx.namespace {
            return false;
        }
        let Ok(pod) = get(&self.stores.pods, ctx, field("name")).await else {
            return false;
        };
        let ip = addr.get("ip").and_then(Value::as_str).unwrap_or_default();
        at(&pod, &["status", "podIPs"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|p| p.get("ip").and_then(Value::as_str) == Some(ip))
    }
}

#[async_trait]
impl Connecter for ConnectStorage {
    fn connect_methods(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Log => &["GET"],
            Kind::Exec | Kind::Attach | Kind::PortForward => UPGRADEABLE,
            Kind::PodProxy | Kind::NodeProxy | Kind::ServiceProxy => PROXY,
        }
    }

    fn connect_options(&self, request: &ConnectRequest) -> Result<Option<Object>, ApiError> {
        let q = Query::parse(&request.query);
        let mut m = serde_json::Map::new();
        let flags = |m: &mut serde_json::Map<String, Value>| {
            for f in ["stdin", "stdout", "stderr", "tty"] {
                if q.bool(f) {
                    m.insert(f.into(), Value::Bool(true));
                }
            }
            let container = q.string("container");
            if !container.is_empty() {
                m.insert("container".into(), Value::String(container));
            }
        };
        let kind = match self.kind {
            Kind::Log => return Ok(None),
            Kind::Exec => {
                flags(&mut m);
                m.insert("command".into(), serde_json::json!(q.all("command")));
                "PodExecOptions"
            }
            Kind::Attach => {
                flags(&mut m);
                "PodAttachOptions"
            }
            Kind::PortForward => {
                let ports = q
                    .all("ports")
                    .iter()
                    .map(|p| parse_port(p))
                    .collect::<Result<Vec<_>, _>>()?;
                if !ports.is_empty() {
                    m.insert("ports".into(), serde_json::json!(ports));
                }
                "PodPortForwardOptions"
            }
            Kind::PodProxy | Kind::NodeProxy | Kind::ServiceProxy => {
                if !request.subpath.is_empty() {
                    m.insert("path".into(), Value::String(request.subpath.clone()));
                }
                self.info.kind.as_str()
            }
        };
        let mut obj = Object::from_value(Value::Object(m))?;
        obj.set_api_version_kind("v1", kind);
        Ok(Some(obj))
    }

    async fn connect(
        &self,
        ctx: &Context,
        name: &str,
        request: &ConnectRequest,
    ) -> Result<Option<Target>, ApiError> {
        let q = Query::parse(&request.query);
        match self.kind {
            Kind::Log => self.log(ctx, name, &q).await,
            Kind::Exec | Kind::Attach | Kind::PortForward => self.stream(ctx, name, &q).await,
            Kind::PodProxy => self.pod_proxy(ctx, name, &request.subpath).await,
            Kind::NodeProxy => self.node_proxy(ctx, name, &request.subpath).await,
            Kind::ServiceProxy => self.service_proxy(ctx, name, &request.subpath).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_are_chosen_as_upstream() {
        let pod = Object::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "i"}],
            "containers": [{"name": "a"}, {"name": "b"}]}}))
        .unwrap();
        assert_eq!(
            validate_container("", &pod).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [i a b]"
        );
        assert_eq!(validate_container("i", &pod).unwrap(), "i");
        assert_eq!(
            validate_container("z", &pod).unwrap_err().message,
            "container z is not valid for pod p"
        );
        let one = Object::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "i"}], "containers": [{"name": "a"}]}}))
        .unwrap();
        assert_eq!(validate_container("", &one).unwrap(), "a");
    }

    #[test]
    fn ids_split_as_upstream() {
        assert_eq!(
            split_scheme_name_port("p"),
            Some(("".into(), "p".into(), "".into()))
        );
        assert_eq!(
            split_scheme_name_port("https:p:8443"),
            Some(("https".into(), "p".into(), "8443".into()))
        );
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
        assert_eq!(split_scheme_name_port("ftp:p:1"), None);
        assert_eq!(
            encode_query(&[
                ("output", "1".into()),
                ("command", "ls".into()),
                ("command", "-l".into())
            ]),
            "command=ls&command=-l&output=1"
        );
    }
}
