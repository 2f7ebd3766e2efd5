//! Paths that are not resources: discovery (`/api`, `/apis`, `/api/v1`, `/apis/<g>[/<v>]`) and
//! OpenAPI (`/openapi/v2`, `/openapi/v3[/...]`). Anything else is upstream's plain-text 404.

use crate::responses::{self, full_body};
use crate::router::RouteTable;
use crate::ResponseBody;
use http::{HeaderMap, Method, Response};

pub fn serve(
    table: &RouteTable,
    method: &Method,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    pretty: bool,
) -> Response<ResponseBody> {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    if path == "/openapi/v2" || path == "/openapi/v3" || path.starts_with("/openapi/v3/") {
        return match table.openapi_response(path, query, headers) {
            Some(resp) => resp.map(full_body),
            None => responses::error_response(&responses::resource_not_found(), accept, pretty),
        };
    }
    if path == "/api" || path.starts_with("/api/") || path == "/apis" || path.starts_with("/apis/")
    {
        if method != Method::GET && method != Method::HEAD {
            return responses::error_response(&responses::resource_not_found(), accept, pretty);
        }
        return match table.discovery().serve(path, headers) {
            Some(resp) => resp.map(full_body),
            None => responses::error_response(&responses::resource_not_found(), accept, pretty),
        };
    }
    responses::page_not_found()
}
