//! The list algorithm both backends share: which revision to read at (upstream's
//! `resourceVersion`/`resourceVersionMatch`/`continue` rules), paging over raw key ranges,
//! selector filtering, continue tokens and `remainingItemCount`.

use crate::continuation;
use crate::error::{continue_expired, too_large_resource_version, Error, Result};
use crate::events::{decode_stored, prefix_end};
use crate::interface::{ListResult, Revision};
use async_trait::async_trait;
use kapi_machinery::options::parse_resource_version;
use kapi_machinery::{ApiError, ListOptions, ResourceVersionMatch};
use std::sync::Arc;

/// Which revision a read is served at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadAt {
    /// The latest revision; fails with "Too large resource version" if it is below `min`.
    Latest { min: Option<Revision> },
    /// Exactly this revision (paging, `resourceVersionMatch=Exact`, legacy `limit` + rv).
    Exact(Revision),
}

/// A list request resolved against its prefix.
#[derive(Debug)]
pub(crate) struct ListPlan {
    pub read: ReadAt,
    pub start: String,
    pub end: String,
    pub continuing: bool,
    pub limit: Option<usize>,
}

/// Resolves `opts` for a list of `prefix` as upstream's `GetList` does.
pub(crate) fn plan(prefix: &str, opts: &ListOptions) -> Result<ListPlan> {
    let limit = opts
        .limit
        .filter(|l| *l > 0)
        .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let end = prefix_end(prefix);
    let rv = parse_resource_version(opts.resource_version.as_deref()).map_err(Error::from)?;
    if let Some(token) = opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
        if rv.is_some_and(|r| r != 0) {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            )
            .into());
        }
        let (start, revision) = continuation::decode(token, prefix)?;
        return Ok(ListPlan {
            read: ReadAt::Exact(revision),
            start,
            end,
            continuing: true,
            limit,
        });
    }
    let read = match (rv, opts.resource_version_match) {
        (None | Some(0), _) => ReadAt::Latest { min: None },
        (Some(r), Some(ResourceVersionMatch::Exact)) => ReadAt::Exact(r),
        (Some(r), Some(ResourceVersionMatch::NotOlderThan)) => ReadAt::Latest { min: Some(r) },
        // Legacy: an rv with a limit means "exactly there", without one "not older than".
        (Some(r), None) if limit.is_some() => ReadAt::Exact(r),
        (Some(r), None) => ReadAt::Latest { min: Some(r) },
    };
    Ok(ListPlan {
        read,
        start: prefix.to_string(),
        end,
        continuing: false,
        limit,
    })
}

/// One stored key-value as a backend returns it.
pub(crate) struct RawKv {
    pub key: String,
    pub mod_revision: Revision,
    pub value: Vec<u8>,
}

/// A range read: the keys, whether more follow, the revision read at, and (when asked) how
/// many keys the whole range `[start, end)` holds.
pub(crate) struct RawPage {
    pub kvs: Vec<RawKv>,
    pub more: bool,
    pub revision: Revision,
    pub count: Option<i64>,
}

/// A backend's range read at a revision (`None` = latest). Reading at a compacted revision
/// is `ResourceExpired`; at a future one, "Too large resource version".
#[async_trait]
pub(crate) trait RangeReader: Send + Sync {
    async fn range(
        &self,
        start: &str,
        end: &str,
        revision: Option<Revision>,
        limit: usize,
        with_count: bool,
    ) -> Result<RawPage>;
}

/// Largest batch fetched at once while filtering with a selector.
const MAX_FETCH: usize = 10_000;

/// Lists `prefix` through `reader` with upstream's semantics.
pub(crate) async fn list<R: RangeReader + ?Sized>(
    reader: &R,
    prefix: &str,
    opts: &ListOptions,
) -> Result<ListResult> {
    let plan = plan(prefix, opts)?;
    let pred = &opts.predicate;
    let everything = pred.is_everything();
    let mut revision = match plan.read {
        ReadAt::Exact(r) => Some(r),
        ReadAt::Latest { .. } => None,
    };
    let mut start = plan.start.clone();
    let mut items = Vec::new();
    // Unlimited lists are read in chunks (all at one revision) to bound each response.
    let mut fetch = plan.limit.map_or(MAX_FETCH, |l| l.max(1));
    let mut last_key: Option<String> = None;
    let mut more;
    let mut remaining = None;
    loop {
        let page = match reader
            .range(
                &start,
                &plan.end,
                revision,
                fetch,
                plan.limit.is_some() && everything && !opts.without_remaining_count,
            )
            .await
        {
            Err(Error::ResourceExpired { .. }) if plan.continuing => return Err(continue_expired()),
            other => other?,
        };
        revision = Some(page.revision);
        let fetched = page.kvs.len();
        let mut consumed = 0usize;
        let mut full = false;
        for kv in page.kvs {
            consumed = consumed.saturating_add(1);
            let obj = decode_stored(&kv.key, &kv.value, kv.mod_revision)?;
            last_key = Some(kv.key);
            if everything || pred.matches(&obj) {
                items.push(Arc::new(obj));
                if plan.limit.is_some_and(|l| items.len() >= l) {
                    full = true;
                    break;
                }
            }
        }
        more = page.more || consumed < fetched;
        if full || !more {
            if let Some(count) = page.count.filter(|_| more && everything) {
                remaining = Some(count.saturating_sub(consumed as i64).max(0));
            }
            break;
        }
        match &last_key {
            Some(k) => start = format!("{k}\u{0}"),
            None => break,
        }
        fetch = fetch.saturating_mul(2).min(MAX_FETCH);
    }
    let revision = revision.unwrap_or(0);
    if let ReadAt::Latest { min: Some(min) } = plan.read {
        if min > revision {
            return Err(too_large_resource_version(min, revision));
        }
    }
    let continue_token = match (&last_key, more && plan.limit.is_some()) {
        (Some(k), true) => Some(continuation::encode(
            &format!("{k}\u{0}"),
            prefix,
            revision,
        )?),
        _ => None,
    };
    Ok(ListResult {
        items,
        revision,
        remaining_item_count: remaining.filter(|_| continue_token.is_some()),
        continue_token,
        encoded: None,
    })
}
