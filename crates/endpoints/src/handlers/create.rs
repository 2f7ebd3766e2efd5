//! POST to a collection: create one object (201, also under `dryRun`), recording its writer
//! in managedFields (operation `Update`, as upstream records a create).

use super::{capability, ensure_namespace, write_body};
use crate::scope::RequestScope;
use crate::transform::Payload;
use crate::{RequestBody, ResponseBody};
use http::{Response, StatusCode};
use kapi_admission::Operation;
use kapi_machinery::ApiError;

pub async fn create(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let creater = capability(scope, scope.storage.as_creater(), "create")?;
    if !scope.name.is_empty() && scope.resource.subresource.is_empty() {
        // A main resource has no named POST route; subresources that create (eviction,
        // token) do, and their object is named after the parent.
        return Err(crate::scope::method_not_allowed(&scope.resource, "create"));
    }
    let (opts, mut obj, mut warnings) = write_body(scope, body, "CreateOptions").await?;
    ensure_namespace(scope, &mut obj)?;
    if !scope.name.is_empty() {
        creater.check_url_name(&scope.name, &obj)?;
        if obj.name().is_empty() {
            obj.set_name(&scope.name);
        }
    }
    // Ownership is recorded before mutating admission, as upstream does.
    super::patch::field_manager(scope, opts.field_manager.as_deref()).update(None, &mut obj);
    scope.audit_request_object(&obj);
    let obj = scope
        .admit(Operation::Create, obj, None, opts.dry_run)
        .await?;
    let validate = scope.validate_create_fn(Operation::Create, opts.dry_run);
    let result = creater.create(&scope.ctx(), obj, validate, &opts).await?;
    warnings.extend(result.warnings);
    Ok(scope.respond(
        StatusCode::CREATED,
        Payload::Object(result.object),
        &warnings,
    ))
}
