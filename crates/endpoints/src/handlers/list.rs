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
    let len = list.encoded.as_ref().map_or(list.items.len(), Vec::len);
    let payload = ListPayload {
        items: list.items,
        resource_version: list.resource_version,
        continue_token: list.continue_token,
        remaining_item_count: list.remaining_item_count,
        encoded: list.encoded,
    };
    let respond = || scope.respond(StatusCode::OK, Payload::List(payload), &[]);
    // Encoding a large list (a Table, YAML, pretty JSON or a first protobuf list decodes and
    // writes every item) takes this worker for hundreds of milliseconds; hand its other tasks
    // to another thread meanwhile, so small requests are not queued behind it (Go's scheduler
    // preempts instead).
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if len >= LARGE_LIST && multi_thread {
        return Ok(tokio::task::block_in_place(respond));
    }
    Ok(respond())
}

/// Items from which a list's encoding leaves the async workers.
const LARGE_LIST: usize = 1000;
