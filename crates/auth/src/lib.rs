//! `kapi-auth` owns who a request is and what it may do: the authenticators (x509 client
//! certificates, static tokens, service-account JWTs, bootstrap tokens, anonymous; tried as a
//! union), the token issuer behind the TokenRequest API, and the authorizers (RBAC with its
//! bootstrap policy, Node over its graph, AlwaysAllow, AlwaysDeny; asked in
//! `--authorization-mode` order).

pub mod authn;
pub mod authz;
pub mod files;
pub mod token;
