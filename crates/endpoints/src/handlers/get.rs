//! GET of one named object.

use super::capability;
use crate::scope::RequestScope;
use crate::transform::Payload;
use crate::ResponseBody;
use http::{Response, StatusCode};
use kapi_machinery::{ApiError, GetOptions};

pub async fn get(scope: &RequestScope) -> Result<Response<ResponseBody>, ApiError> {
    let getter = capability(scope, scope.storage.as_getter(), "get")?;
    let opts = GetOptions::from_query(&scope.query);
    let obj = getter.get(&scope.ctx(), &scope.name, &opts).await?;
    Ok(scope.respond(StatusCode::OK, Payload::Object(obj), &[]))
}
