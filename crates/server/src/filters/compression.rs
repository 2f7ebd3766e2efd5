//! Response compression as kube-apiserver does it: gzip at level 1, only when the client accepts
//! it and the whole response is at least 128 KiB (so watch streams and small answers are sent
//! as they are).

use http_body::Body;
use tower_http::compression::predicate::Predicate;
use tower_http::compression::{CompressionLayer, CompressionLevel};

/// Upstream's `defaultGzipThresholdBytes`.
pub const THRESHOLD_BYTES: u64 = kapi_endpoints::GZIP_THRESHOLD_BYTES as u64;

/// Compress only complete bodies above the threshold that are not already encoded.
#[derive(Clone, Copy, Debug, Default)]
pub struct LargeBodies;

impl Predicate for LargeBodies {
    fn should_compress<B: Body>(&self, response: &http::Response<B>) -> bool {
        !response
            .headers()
            .contains_key(http::header::CONTENT_ENCODING)
            && response
                .body()
                .size_hint()
                .exact()
                .is_some_and(|n| n >= THRESHOLD_BYTES)
    }
}

/// The compression layer (gzip only, fastest level, large bodies only).
pub fn layer() -> CompressionLayer<LargeBodies> {
    CompressionLayer::new()
        .quality(CompressionLevel::Fastest)
        .compress_when(LargeBodies)
}
