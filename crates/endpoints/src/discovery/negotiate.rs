//! Choosing legacy or aggregated discovery from the `Accept` header, as kube-apiserver's
//! `WrapAggregatedDiscoveryToHandler` does: the clauses are tried in quality order; the first
//! one kapi can encode that asks for `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=<served
//! version>` selects the aggregated document. A clause without such a conversion does not stop
//! the search, because the discovery endpoint restrictions only admit the aggregated kind.

use super::accept::{parse_accept, AcceptClause};

/// Which `apidiscovery.k8s.io` version an aggregated answer is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregatedVersion {
    V2,
    V2Beta1,
}

impl AggregatedVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            AggregatedVersion::V2 => "v2",
            AggregatedVersion::V2Beta1 => "v2beta1",
        }
    }
}

/// The form `/api` or `/apis` answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscoveryFormat {
    Legacy,
    Aggregated(AggregatedVersion),
}

/// Media types kapi encodes discovery in. Upstream also encodes YAML and protobuf; a clause
/// asking only for those is skipped here, so such a client gets its JSON alternative.
fn encodable(clause: &AcceptClause) -> bool {
    clause.q > 0.0 && clause.matches("application", "json")
}

/// Decides legacy vs aggregated discovery from an `Accept` header value.
pub fn negotiate_discovery(accept: Option<&str>, serve_v2beta1: bool) -> DiscoveryFormat {
    for clause in parse_accept(accept) {
        if !encodable(&clause)
            || !stream_allowed(&clause)
            || clause.param("sv").is_some_and(|v| !v.is_empty())
        {
            continue;
        }
        let (group, version, kind) = (clause.param("g"), clause.param("v"), clause.param("as"));
        if group != Some("apidiscovery.k8s.io") || kind != Some("APIGroupDiscoveryList") {
            continue;
        }
        match version {
            Some("v2") => return DiscoveryFormat::Aggregated(AggregatedVersion::V2),
            Some("v2beta1") if serve_v2beta1 => {
                return DiscoveryFormat::Aggregated(AggregatedVersion::V2Beta1)
            }
            _ => continue,
        }
    }
    DiscoveryFormat::Legacy
}

/// Whether a legacy discovery document may be sent at all: some clause admits one of the
/// media types upstream offers without asking for a conversion (`as`/`g`/`v`). Otherwise
/// kube-apiserver answers 406.
pub(crate) fn legacy_acceptable(accept: Option<&str>) -> bool {
    parse_accept(accept).iter().any(|clause| {
        let media = clause.matches("application", "json")
            || clause.matches("application", "yaml")
            || clause.matches("application", "vnd.kubernetes.protobuf");
        media
            && clause.q > 0.0
            && stream_allowed(clause)
            && clause.param("sv").is_none_or(str::is_empty)
            && clause.param("as").is_none()
            && clause.param("g").is_none()
            && clause.param("v").is_none()
    })
}

fn stream_allowed(clause: &AcceptClause) -> bool {
    clause
        .param("stream")
        .is_none_or(|s| s.is_empty() || s == "watch")
}
