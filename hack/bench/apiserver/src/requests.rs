//! The requests the raw-HTTP scenarios send (`fairness`, `cluster`): JSON in and out.

use serde_json::Value;

/// A request with a JSON body, asking for JSON back.
pub fn json_req(method: http::Method, path: &str, body: &Value) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap_or_default()
}

/// A GET asking for JSON.
pub fn get(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path)
        .header("accept", "application/json")
        .body(Vec::new())
        .unwrap_or_default()
}
