//! The errors that stop a server from starting.

use std::path::PathBuf;

/// Why the server could not start (or stopped abnormally).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("certificate {path}: {reason}")]
    Certificate { path: PathBuf, reason: String },
    #[error("generating certificates: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("client CA verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("storage: {0}")]
    Storage(#[from] kapi_storage::Error),
    #[error("building the API: {0}")]
    Api(Box<kapi_machinery::ApiError>),
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl From<kapi_machinery::ApiError> for ServerError {
    fn from(e: kapi_machinery::ApiError) -> Self {
        ServerError::Api(Box::new(e))
    }
}
