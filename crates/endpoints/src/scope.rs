//! `RequestScope`: what every verb handler knows about the request it serves (upstream's
//! `handlers.RequestScope`): the resource, its storage, namespace and name, the user, the
//! admission chain, and how to answer (negotiated encoding, transforms, errors).

use crate::negotiation::{self};
use crate::responses::{self, add_warnings, body_response, encode, error_response};
use crate::transform::{self, DefaultTableConvertor, Payload};
use crate::{HandlerConfig, ResponseBody};
use http::header::ACCEPT;
use http::{HeaderMap, Response, StatusCode};
use kapi_admission::audit::AuditSink;
use kapi_admission::{Attributes, Chain, Operation, Warnings};
use kapi_machinery::{
    ApiError, GroupResource, GroupVersionResource, Object, RequestInfo, UserInfo,
};
use kapi_registry::rest::{self, ResourceInfo, ValidateObjectFn, ValidateObjectUpdateFn};
use std::sync::Arc;

/// Items from which a list's encoding leaves the async workers ([`RequestScope::respond`]).
const LARGE_LIST: usize = 1000;

/// One resource request, resolved.
pub struct RequestScope {
    pub info: RequestInfo,
    /// The resource as routed (group/version from the route).
    pub resource: ResourceInfo,
    pub storage: Arc<dyn rest::Storage>,
    /// The route the request took (per-resource state shared by requests: its patch schema).
    pub routes: Arc<crate::installer::ResourceRoutes>,
    /// The request's namespace; empty for cluster-scoped resources and all-namespace lists.
    pub namespace: String,
    pub name: String,
    pub user: UserInfo,
    pub admission: Arc<Chain>,
    pub config: HandlerConfig,
    pub query: String,
    pub headers: HeaderMap,
    pub pretty: bool,
    /// The request's audit sink, when the request is audited.
    pub audit: Option<AuditSink>,
    /// Warnings admission plugins add; sent as `Warning` headers with the answer.
    pub warnings: Warnings,
}

impl RequestScope {
    /// The registry context.
    pub fn ctx(&self) -> rest::Context {
        rest::Context {
            namespace: self.namespace.clone(),
            user: self.user.clone(),
        }
    }

    pub fn accept(&self) -> Option<&str> {
        self.headers.get(ACCEPT).and_then(|v| v.to_str().ok())
    }

    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.resource.group.clone(), self.resource.resource.clone())
    }

    /// The error as a Status response.
    pub fn error(&self, err: &ApiError) -> Response<ResponseBody> {
        if let Some(audit) = &self.audit {
            audit.log_response_status(&responses::status_of(err));
        }
        let mut resp = error_response(err, self.accept(), self.pretty);
        add_warnings(resp.headers_mut(), &self.warnings.snapshot());
        resp
    }

    /// Records the decoded request object for the audit event.
    pub fn audit_request_object(&self, obj: &Object) {
        if let Some(audit) = &self.audit {
            audit.log_request_object(obj);
        }
    }

    /// Records a request body as sent (patches, delete options) for the audit event.
    pub fn audit_request_body(&self, body: &[u8]) {
        if let Some(audit) = self.audit.as_ref().filter(|a| a.wants_request_object()) {
            if !body.iter().all(u8::is_ascii_whitespace) {
                audit.log_request_body(body);
            }
        }
    }

    /// The table convertor of the resource, or upstream's default table.
    pub fn table_convertor(&self) -> &dyn rest::TableConvertor {
        match self.storage.as_table_convertor() {
            Some(c) => c,
            None => &DefaultTableConvertor,
        }
    }

    /// Negotiates, transforms and encodes `payload`; errors become Status responses.
    /// A list of [`LARGE_LIST`] items or more is encoded in `block_in_place`.
    pub fn respond(
        &self,
        status: StatusCode,
        payload: Payload,
        warnings: &[String],
    ) -> Response<ResponseBody> {
        // Encoding a large list (a Table, YAML, pretty JSON or a first protobuf list decodes
        // and writes every item) takes this worker for hundreds of milliseconds; hand its other
        // tasks to another thread meanwhile, so small requests are not queued behind it (Go's
        // scheduler preempts instead).
        let large = matches!(&payload, Payload::List(l) if l.len() >= LARGE_LIST);
        let encode = || self.encode_payload(payload);
        let encoded = match tokio::runtime::Handle::try_current() {
            Ok(h) if large && h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(encode)
            }
            _ => encode(),
        };
        let mut resp = match encoded {
            Ok((content_type, body)) => body_response(status, content_type, body),
            Err(e) => self.error(&e),
        };
        let mut all = self.warnings.snapshot();
        all.extend(warnings.iter().cloned());
        add_warnings(resp.headers_mut(), &all);
        resp
    }

    fn encode_payload(&self, payload: Payload) -> Result<(&'static str, ResponseBody), ApiError> {
        let protobuf = crate::protobuf::serves(&self.resource);
        let media = match (self.storage.as_table_convertor(), self.accept()) {
            // No table convertor: Table is not on offer (upstream's AllowsMediaTypeTransform).
            (None, Some(accept)) => match transform::accept_without_table(accept) {
                Some(rest) => {
                    negotiation::negotiate_output_for(Some(&rest), true, false, protobuf)?
                }
                None => negotiation::negotiate_output_for(Some(accept), false, false, protobuf)?,
            },
            (_, accept) => negotiation::negotiate_output_for(accept, true, false, protobuf)?,
        };
        let include = match media.transform {
            Some(negotiation::Transform::Table(_)) => transform::table_options(&self.query)?,
            _ => Default::default(),
        };
        let payload = match payload {
            // A plain JSON or protobuf list whose items storage kept encoded is written from
            // those bytes. (An audited request logs the response object, so it takes the
            // general path.)
            Payload::List(mut list)
                if list.encoded.is_some()
                    && media.transform.is_none()
                    && !(self.pretty || media.pretty)
                    && self.audit.is_none() =>
            {
                let encoded = list.encoded.take().unwrap_or_default();
                let body = match media.encoding {
                    negotiation::Encoding::Json => {
                        crate::encoded_list::json(&self.resource, &list, &encoded)
                    }
                    negotiation::Encoding::Protobuf => {
                        crate::encoded_list::protobuf(&self.resource, &list, &encoded)?
                    }
                    negotiation::Encoding::Yaml => {
                        list.encoded = Some(encoded);
                        list.decode_items()?;
                        let value = transform::list_value(&self.resource, list);
                        responses::full_body(encode(&value, media.encoding, false)?)
                    }
                };
                return Ok((media.encoding.content_type(), body));
            }
            // Every other response reads the objects.
            Payload::List(mut list) => {
                list.decode_items()?;
                Payload::List(list)
            }
            other => other,
        };
        let value = transform::transform(
            payload,
            media.transform,
            &self.resource,
            self.table_convertor(),
            include,
        )?;
        if let Some(audit) = &self.audit {
            audit.log_response_object(&value);
        }
        let bytes = encode(&value, media.encoding, self.pretty || media.pretty)?;
        Ok((media.encoding.content_type(), responses::full_body(bytes)))
    }

    /// Admission attributes for an operation on this request's object.
    pub fn attributes(
        &self,
        operation: Operation,
        object: Option<Object>,
        old_object: Option<Object>,
        dry_run: bool,
    ) -> Attributes {
        let name = object
            .as_ref()
            .map(|o| o.name().to_string())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| self.name.clone());
        Attributes {
            operation,
            object,
            old_object,
            kind: self.resource.gvk(),
            resource: GroupVersionResource::new(
                self.resource.group.clone(),
                self.resource.version.clone(),
                self.resource.resource.clone(),
            ),
            subresource: self.resource.subresource.clone(),
            namespace: self.namespace.clone(),
            name,
            user: self.user.clone(),
            dry_run,
            options: None,
            reinvocation: Default::default(),
            // Plugins' audit annotations land in the request's audit event.
            annotations: self
                .audit
                .as_ref()
                .map(|a| a.annotations().clone())
                .unwrap_or_default(),
            warnings: self.warnings.clone(),
        }
    }

    /// Runs mutating admission on `obj` and returns the admitted object.
    pub async fn admit(
        &self,
        operation: Operation,
        obj: Object,
        old: Option<Object>,
        dry_run: bool,
    ) -> Result<Object, ApiError> {
        // The attributes take the object's name; the object itself moves in (no copy).
        let mut attrs = self.attributes(operation, None, old, dry_run);
        if !obj.name().is_empty() {
            attrs.name = obj.name().to_string();
        }
        admit_with(&self.admission, attrs, obj).await
    }

    /// Validating admission as the function the Store calls just before writing.
    pub fn validate_create_fn(&self, operation: Operation, dry_run: bool) -> ValidateObjectFn {
        let chain = self.admission.clone();
        let template = self.attributes(operation, None, None, dry_run);
        Arc::new(move |obj: Object| {
            let chain = chain.clone();
            let mut attrs = template.clone();
            if !obj.name().is_empty() {
                attrs.name = obj.name().to_string();
            }
            attrs.object = Some(obj);
            Box::pin(async move { chain.validate(&attrs).await })
        })
    }

    /// Validating admission for an update: (new, old).
    pub fn validate_update_fn(&self, dry_run: bool) -> ValidateObjectUpdateFn {
        let chain = self.admission.clone();
        let template = self.attributes(Operation::Update, None, None, dry_run);
        Arc::new(move |obj: Object, old: Object| {
            let chain = chain.clone();
            let mut attrs = template.clone();
            attrs.object = Some(obj);
            attrs.old_object = Some(old);
            Box::pin(async move {
                chain.validate(&attrs).await?;
                match (attrs.object, attrs.old_object) {
                    (Some(obj), Some(old)) => Ok((obj, old)),
                    _ => Err(ApiError::internal("admission removed the object")),
                }
            })
        })
    }
}

/// Runs the mutating chain with `attrs` and returns the (possibly changed) object.
pub async fn admit_with(
    chain: &Chain,
    mut attrs: Attributes,
    obj: Object,
) -> Result<Object, ApiError> {
    attrs.object = Some(obj);
    chain.admit(&mut attrs).await?;
    attrs
        .object
        .ok_or_else(|| ApiError::internal("admission removed the object"))
}

/// 405 for a verb the resource does not serve.
pub fn method_not_allowed(resource: &ResourceInfo, verb: &str) -> ApiError {
    let gr = GroupResource::new(resource.group.clone(), resource.path_name());
    ApiError::method_not_supported(&gr, verb)
}

/// Re-exported for handlers.
pub use responses::resource_not_found;
