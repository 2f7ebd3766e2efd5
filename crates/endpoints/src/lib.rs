//! `kapi-endpoints`: turns the registry's REST storages into HTTP.
//!
//! It owns the installer (routes generated from each storage's capabilities), the router
//! (a snapshot map that can change at run time), one handler per verb, content negotiation
//! (JSON, YAML, `as=Table`, `as=PartialObjectMetadata`), discovery (legacy and aggregated) and
//! OpenAPI v2/v3. It reads `RequestInfo` and `UserInfo` from request extensions, put there by
//! the server's filters; it never parses TLS or authenticates.

pub mod discovery;
pub mod openapi;

pub mod body;
mod encoded;
mod encoded_list;
pub mod handlers;
pub mod installer;
pub mod negotiation;
mod nonresource;
pub mod params;
pub mod patch;
pub mod protobuf;
pub mod responses;
pub mod router;
pub mod scope;
pub mod transform;
pub mod verbs;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use installer::RouteKey;
use kapi_admission::Chain;
use kapi_machinery::{RequestInfo, UserInfo};
use kapi_registry::rest::ApiGroupInfo;
use router::{RouteTable, Router};
use scope::{method_not_allowed, RequestScope};
use std::sync::Arc;
use std::time::Duration;
use verbs::Verb;

/// kube-apiserver's `defaultGzipThresholdBytes`: a complete response of at least this many
/// bytes is gzipped for a client that accepts it (the server's compression filter; documents
/// kept gzipped here use the same threshold so their answers do not differ).
pub const GZIP_THRESHOLD_BYTES: usize = 128 * 1024;

/// Error type of request and response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A request body as the server hands it over.
pub type RequestBody = UnsyncBoxBody<Bytes, BoxError>;
/// A response body: a full buffer or a stream (watch).
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// Limits and defaults of the API handlers.
#[derive(Clone, Debug)]
pub struct HandlerConfig {
    /// Bodies above this are refused with 413 (kube-apiserver: 3 MiB).
    pub max_request_body_bytes: usize,
    /// A watch without `timeoutSeconds` ends after a random time in [this, 2×this]
    /// (`--min-request-timeout`, 1800s).
    pub min_request_timeout: Duration,
    /// How connect subresources (`pods/exec`, `pods/log`, the proxies) reach their targets.
    pub proxy: kapi_proxy::ProxyConfig,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        Self {
            max_request_body_bytes: 3 * 1024 * 1024,
            min_request_timeout: Duration::from_secs(1800),
            proxy: Default::default(),
        }
    }
}

struct Inner {
    router: Router,
    admission: Arc<Chain>,
    config: HandlerConfig,
}

/// Serves `/api`, `/apis`, `/openapi` and every installed resource.
#[derive(Clone)]
pub struct ApiServerHandler {
    inner: Arc<Inner>,
}

/// A reference to a handler that does not keep it alive: for parts the handler itself holds
/// (an admission plugin reading the served groups), which would otherwise keep a stopped
/// server's handler, and everything it holds, alive for ever.
#[derive(Clone)]
pub struct WeakApiServerHandler(std::sync::Weak<Inner>);

impl WeakApiServerHandler {
    /// The handler, while it still serves.
    pub fn upgrade(&self) -> Option<ApiServerHandler> {
        self.0.upgrade().map(|inner| ApiServerHandler { inner })
    }
}

impl Default for ApiServerHandler {
    fn default() -> Self {
        Self::new(
            Vec::new(),
            Arc::new(Chain::default()),
            HandlerConfig::default(),
        )
    }
}

impl ApiServerHandler {
    /// A reference that does not keep this handler alive.
    pub fn downgrade(&self) -> WeakApiServerHandler {
        WeakApiServerHandler(Arc::downgrade(&self.inner))
    }

    /// Installs `groups` (each storage's routes from its capabilities).
    pub fn new(groups: Vec<ApiGroupInfo>, admission: Arc<Chain>, config: HandlerConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                router: Router::new(groups),
                admission,
                config,
            }),
        }
    }

    /// Adds a group, or replaces the installed group of the same name, while serving
    /// (custom resources). Requests in flight finish on the snapshot they started with.
    pub fn install_group(&self, group: ApiGroupInfo) {
        self.inner.router.install_group(group);
    }

    /// Removes a group's routes; false when it was not installed.
    pub fn remove_group(&self, group: &str) -> bool {
        self.inner.router.remove_group(group)
    }

    /// Sets the `host:port` legacy discovery reports in `serverAddressByClientCIDRs`.
    pub fn set_server_address(&self, address: impl Into<String>) {
        self.inner.router.set_server_address(address.into());
    }

    /// Sets the `gitVersion` the OpenAPI documents report in `info.version`.
    pub fn set_server_version(&self, version: impl Into<String>) {
        self.inner.router.set_server_version(version.into());
    }

    /// Builds the current snapshot's OpenAPI documents (v2 in both encodings, v3) now, so the
    /// first client to ask does not wait for them. CPU-bound: run it off the async runtime.
    pub fn prepare_openapi(&self) {
        self.inner.router.snapshot().prepare_openapi();
    }

    /// The current routing snapshot (its OpenAPI documents, for the aggregation layer).
    pub fn snapshot(&self) -> Arc<RouteTable> {
        self.inner.router.snapshot()
    }

    /// The installed groups of the current snapshot.
    pub fn groups(&self) -> Arc<Vec<ApiGroupInfo>> {
        self.inner.router.snapshot().groups.clone()
    }

    /// Answers one request. Never fails: errors are `metav1.Status` responses.
    pub async fn handle(&self, req: Request<RequestBody>) -> Response<ResponseBody> {
        let (mut parts, body) = req.into_parts();
        let query = parts.uri.query().unwrap_or("").to_string();
        let info = match parts.extensions.get::<RequestInfo>() {
            Some(i) => i.clone(),
            None => RequestInfo::resolve(parts.method.as_str(), parts.uri.path(), &query),
        };
        let user = parts
            .extensions
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default();
        let pretty = responses::wants_pretty(&query, &parts.headers);
        let table = self.inner.router.snapshot();
        if !info.is_resource_request {
            return nonresource::serve(
                &table,
                &parts.method,
                parts.uri.path(),
                parts.uri.query(),
                &parts.headers,
                pretty,
            );
        }
        let accept = parts
            .headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let headers = std::mem::take(&mut parts.headers);
        match self.resolve(&table, info, user, query, headers, pretty) {
            Ok((mut scope, verb)) => {
                scope.audit = parts
                    .extensions
                    .get::<kapi_admission::audit::AuditSink>()
                    .cloned();
                let always = scope.storage.request_warnings();
                if scope.storage.as_connecter().is_some() {
                    return handlers::connect::connect(scope, parts, body).await;
                }
                let mut resp = handlers::serve(scope, verb, body).await;
                responses::add_warnings(resp.headers_mut(), &always);
                resp
            }
            Err(e) => responses::error_response(&e, accept.as_deref(), pretty),
        }
    }

    /// Finds the route and checks scope and verb: 404 for an unknown resource or a path that
    /// does not fit its scope, 405 for a verb it does not serve.
    fn resolve(
        &self,
        table: &RouteTable,
        info: RequestInfo,
        user: UserInfo,
        query: String,
        headers: http::HeaderMap,
        pretty: bool,
    ) -> Result<(RequestScope, Verb), kapi_machinery::ApiError> {
        let key = RouteKey::new(
            &info.api_group,
            &info.api_version,
            &info.resource,
            &info.subresource,
        );
        let routes = table
            .lookup(&key)
            .ok_or_else(responses::resource_not_found)?;
        let mut resource = routes.storage.info().clone();
        resource.group = key.group.clone();
        resource.version = key.version.clone();
        // `/api/v1/namespaces/<name>` parses with the name as namespace; a namespace is not
        // inside itself.
        let is_namespace = resource.group.is_empty() && resource.resource == "namespaces";
        let namespace = if resource.namespaced {
            info.namespace.clone()
        } else {
            String::new()
        };
        if !resource.namespaced && !info.namespace.is_empty() && !is_namespace {
            return Err(responses::resource_not_found());
        }
        let verb =
            Verb::parse(&info.verb).ok_or_else(|| method_not_allowed(&resource, &info.verb))?;
        if resource.namespaced && namespace.is_empty() {
            // Across namespaces only list and watch exist; named objects need a namespace.
            if !info.name.is_empty() && !matches!(verb, Verb::List | Verb::Watch) {
                return Err(responses::resource_not_found());
            }
            if !matches!(verb, Verb::List | Verb::Watch) {
                return Err(method_not_allowed(&resource, verb.as_str()));
            }
        }
        if !routes.verbs.allows(verb) {
            if routes.storage.as_connecter().is_some() {
                return Err(handlers::connect::method_not_allowed());
            }
            return Err(method_not_allowed(&resource, verb.as_str()));
        }
        let scope = RequestScope {
            name: info.name.clone(),
            info,
            resource,
            storage: routes.storage.clone(),
            routes,
            namespace,
            user,
            admission: self.inner.admission.clone(),
            config: self.inner.config.clone(),
            query,
            headers,
            pretty,
            audit: None,
            warnings: Default::default(),
        };
        Ok((scope, verb))
    }
}
