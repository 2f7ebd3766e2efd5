//! GET of a collection: selectors, paging (`limit`/`continue`) and resourceVersion semantics
//! are the registry's; this handler parses and answers.

use super::capability;
use crate::scope::RequestScope;
use crate::transform::{ListPayload, Payload};
use crate::ResponseBody;
use http::{Response, StatusCode};
use kapi_machinery::{ApiError, ListOptions};

pub async fn list(scope: &RequestScope) -> Result<Response<ResponseBody>, ApiError> {
    let lister = capability(scope, scope.storage.as_lister(), "list")?;
    let opts = ListOptions::from_query(&scope.query)?;
    let list = lister.list_shared(&scope.ctx(), &opts).await?;
    let payload = ListPayload {
        items: list.items,
        resource_version: list.resource_version,
        continue_token: list.continue_token,
        remaining_item_count: list.remaining_item_count,
        encoded: list.encoded,
    };
    Ok(scope.respond(StatusCode::OK, Payload::List(payload), &[]))
}
