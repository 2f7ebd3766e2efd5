//! Cases for reads and writes: create, get, update, delete, list.

use super::{counter, key, no_validate, pod, rv, with_counter, PREFIX};
use crate::interface::{DynStorage, GetOptions, ListResult};
use crate::Error;
use futures::future::BoxFuture;
use kapi_machinery::{
    ApiError, FieldSelector, LabelSelector, ListOptions, Object, Preconditions,
    ResourceVersionMatch, StatusReason,
};

fn api(e: Error) -> ApiError {
    match e {
        Error::Api(e) => *e,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// create sets the revision; a second create is KeyExists; get returns what was stored;
/// a missing key is NotFound (or `None` when ignored).
pub async fn create_get(s: DynStorage) {
    let before = s.current_revision().await.unwrap();
    let created = s
        .create(&key("ns", "a"), pod("ns", "a", &[("app", "web")]), None)
        .await
        .unwrap();
    assert!(rv(&created) > before, "create must advance the revision");
    assert_eq!(created.name(), "a");
    let got = s
        .get(&key("ns", "a"), &GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, created);
    assert_eq!(s.current_revision().await.unwrap(), rv(&created));

    let again = s
        .create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap_err();
    assert!(
        matches!(again, Error::KeyExists { .. }),
        "second create: {again:?}"
    );

    let missing = s
        .get(&key("ns", "zz"), &GetOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(missing, Error::NotFound { .. }),
        "missing get: {missing:?}"
    );
    let ignored = s
        .get(
            &key("ns", "zz"),
            &GetOptions {
                ignore_not_found: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(ignored.is_none());

    // A stored resourceVersion is never trusted: the key's revision wins.
    let mut with_rv = pod("ns", "b", &[]);
    with_rv.set_resource_version("12345678");
    let b = s.create(&key("ns", "b"), with_rv, None).await.unwrap();
    assert_eq!(rv(&b), rv(&created) + 1, "revisions grow by one per write");
    assert_eq!(s.count(PREFIX).await.unwrap(), 2);
    s.health().await.unwrap();
}

/// Stale preconditions are Conflicts with upstream's wording; an unchanged object is no write.
pub async fn guaranteed_update_conflicts(s: DynStorage) {
    let k = key("ns", "u");
    let created = s.create(&k, pod("ns", "u", &[]), None).await.unwrap();
    let updated = s
        .guaranteed_update(&k, None, false, &mut |cur| {
            let cur = cur.unwrap();
            Box::pin(async move { Ok(with_counter(cur, 1)) })
        })
        .await
        .unwrap();
    assert!(rv(&updated) > rv(&created));
    assert_eq!(counter(&updated), 1);

    let stale = Preconditions {
        resource_version: Some(created.resource_version().to_string()),
        uid: None,
    };
    let err = s
        .guaranteed_update(&k, Some(&stale), false, &mut |cur| {
            Box::pin(async move { Ok(with_counter(cur.unwrap(), 2)) })
        })
        .await
        .unwrap_err();
    match err {
        Error::Conflict { message, key: err_key } => assert_eq!(
            message,
            format!(
                "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                err_key,
                rv(&created),
                rv(&updated)
            )
        ),
        other => panic!("expected a conflict, got {other:?}"),
    }
    let wrong_uid = Preconditions {
        uid: Some("other".into()),
        resource_version: None,
    };
    let err = s
        .guaranteed_update(&k, Some(&wrong_uid), false, &mut |cur| {
            Box::pin(async move { Ok(cur.unwrap()) })
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Conflict { ref message, .. } if message.contains("UID in precondition: other")),
        "{err:?}"
    );

    // Returning the object unchanged writes nothing.
    let same = s
        .guaranteed_update(&k, None, false, &mut |cur| {
            Box::pin(async move { Ok(cur.unwrap()) })
        })
        .await
        .unwrap();
    assert_eq!(rv(&same), rv(&updated));
    assert_eq!(s.current_revision().await.unwrap(), rv(&updated));

    // Errors from the closure pass through untouched.
    let err = s
        .guaranteed_update(&k, None, false, &mut |_| {
            Box::pin(async { Err(ApiError::bad_request("nope").into()) })
        })
        .await
        .unwrap_err();
    assert_eq!(api(err).message, "nope");

    // A missing key is NotFound, or created when `ignore_not_found`.
    let err = s
        .guaranteed_update(&key("ns", "none"), None, false, &mut |c| {
            Box::pin(async move { Ok(c.unwrap()) })
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    let made = s
        .guaranteed_update(&key("ns", "made"), None, true, &mut |cur| {
            assert!(cur.is_none());
            Box::pin(async { Ok(pod("ns", "made", &[])) })
        })
        .await
        .unwrap();
    assert_eq!(
        s.get(&key("ns", "made"), &GetOptions::default())
            .await
            .unwrap()
            .unwrap(),
        made
    );
}

/// 32 concurrent increments of one counter each land exactly once.
pub async fn concurrent_counter(s: DynStorage) {
    let k = key("ns", "counter");
    s.create(&k, pod("ns", "counter", &[]), None).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (s, k) = (s.clone(), k.clone());
        tasks.push(tokio::spawn(async move {
            s.guaranteed_update(&k, None, false, &mut |cur| {
                let cur = cur.unwrap();
                Box::pin(async move {
                    let n = counter(&cur);
                    Ok(with_counter(cur, n + 1))
                })
            })
            .await
            .unwrap()
        }));
    }
    let mut seen = std::collections::BTreeSet::new();
    for t in tasks {
        let o = t.await.unwrap();
        assert!(
            seen.insert(counter(&o)),
            "two updates returned counter {}",
            counter(&o)
        );
    }
    assert_eq!(seen, (1..=32).collect());
    let last = s.get(&k, &GetOptions::default()).await.unwrap().unwrap();
    assert_eq!(counter(&last), 32);
}

/// Deletes honour preconditions and validation, return the object at the deletion's revision.
pub async fn delete_preconditions(s: DynStorage) {
    let k = key("ns", "d");
    let created = s.create(&k, pod("ns", "d", &[]), None).await.unwrap();
    assert_eq!(
        s.get(&k, &GetOptions::default()).await.unwrap().unwrap(),
        created
    );
    let updated = s
        .guaranteed_update(&k, None, false, &mut |c| {
            Box::pin(async move { Ok(with_counter(c.unwrap(), 7)) })
        })
        .await
        .unwrap();
    let stale = Preconditions {
        resource_version: Some(created.resource_version().into()),
        uid: None,
    };
    let err = s.delete(&k, Some(&stale), &no_validate).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
    let refuse = |_: &Object| -> BoxFuture<'static, crate::Result<()>> {
        Box::pin(async { Err(ApiError::bad_request("refused").into()) })
    };
    assert_eq!(
        api(s.delete(&k, None, &refuse).await.unwrap_err()).message,
        "refused"
    );
    assert!(
        s.get(&k, &GetOptions::default()).await.unwrap().is_some(),
        "refused deletes delete nothing"
    );

    let good = Preconditions {
        resource_version: Some(updated.resource_version().into()),
        uid: Some(updated.uid().into()),
    };
    let deleted = s.delete(&k, Some(&good), &no_validate).await.unwrap();
    assert_eq!(counter(&deleted), 7);
    assert!(rv(&deleted) > rv(&updated));
    assert_eq!(s.current_revision().await.unwrap(), rv(&deleted));
    assert!(matches!(
        s.get(&k, &GetOptions::default()).await.unwrap_err(),
        Error::NotFound { .. }
    ));
    assert!(matches!(
        s.delete(&k, None, &no_validate).await.unwrap_err(),
        Error::NotFound { .. }
    ));
    // The key can be created again.
    s.create(&k, pod("ns", "d", &[]), None).await.unwrap();
}

fn list_opts(rv: Option<&str>, m: Option<ResourceVersionMatch>, limit: Option<i64>) -> ListOptions {
    ListOptions {
        resource_version: rv.map(String::from),
        resource_version_match: m,
        limit,
        ..Default::default()
    }
}

/// resourceVersion semantics of list: unset, "0", NotOlderThan, Exact, too large.
pub async fn list_resource_versions(s: DynStorage) {
    let a = s
        .create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap();
    let a2 = s
        .guaranteed_update(&key("ns", "a"), None, false, &mut |c| {
            Box::pin(async move { Ok(with_counter(c.unwrap(), 2)) })
        })
        .await
        .unwrap();
    s.create(&key("ns", "b"), pod("ns", "b", &[]), None)
        .await
        .unwrap();
    let current = s.current_revision().await.unwrap();

    let latest = s.list(PREFIX, &ListOptions::default()).await.unwrap();
    assert_eq!(latest.revision, current);
    assert_eq!(
        latest.items.iter().map(|o| o.name()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(counter(&latest.items[0]), 2);
    assert_eq!(latest.items[0].resource_version(), a2.resource_version());
    assert!(latest.continue_token.is_none());

    // "0" is any revision: a cache may answer from a slightly older state, but never from
    // a future one, and it catches up.
    let any = s
        .list(PREFIX, &list_opts(Some("0"), None, None))
        .await
        .unwrap();
    assert!(any.revision <= current && any.items.len() <= 2);
    super::eventually("a resourceVersion=0 list to show both objects", || async {
        s.list(PREFIX, &list_opts(Some("0"), None, None))
            .await
            .unwrap()
            .items
            .len()
            == 2
    })
    .await;
    let not_older = s
        .list(
            PREFIX,
            &list_opts(
                Some(&rv(&a).to_string()),
                Some(ResourceVersionMatch::NotOlderThan),
                None,
            ),
        )
        .await
        .unwrap();
    assert!(not_older.revision >= rv(&a));
    assert_eq!(not_older.items.len(), 2);

    let exact = s
        .list(
            PREFIX,
            &list_opts(
                Some(&rv(&a).to_string()),
                Some(ResourceVersionMatch::Exact),
                None,
            ),
        )
        .await
        .unwrap();
    assert_eq!(exact.revision, rv(&a));
    assert_eq!(exact.items.len(), 1);
    assert_eq!(
        counter(&exact.items[0]),
        0,
        "an exact read sees the old state"
    );

    let future = (current + 1000).to_string();
    let err = api(s
        .list(
            PREFIX,
            &list_opts(
                Some(&future),
                Some(ResourceVersionMatch::NotOlderThan),
                None,
            ),
        )
        .await
        .unwrap_err());
    assert_eq!(err.code, 504);
    assert_eq!(err.reason, StatusReason::Timeout);
    assert!(
        err.message.starts_with(&format!(
            "Timeout: Too large resource version: {}, current: ",
            current + 1000
        )),
        "{}",
        err.message
    );

    let empty = s
        .list("/nothing-here/", &ListOptions::default())
        .await
        .unwrap();
    assert!(empty.items.is_empty());
    assert!(empty.revision > 0, "an empty list still has a revision");
}

/// Pages are all read at the first page's revision while writes go on.
pub async fn paging_at_fixed_revision(s: DynStorage) {
    for i in 0..10 {
        s.create(
            &key("ns", &format!("p{i:02}")),
            pod("ns", &format!("p{i:02}"), &[]),
            None,
        )
        .await
        .unwrap();
    }
    let first = s
        .list(PREFIX, &list_opts(None, None, Some(3)))
        .await
        .unwrap();
    assert_eq!(first.items.len(), 3);
    assert_eq!(first.remaining_item_count, Some(7));
    // A caller that needs no count (the watch cache's load) gets the same page; a backend
    // leaves the count out, a cache that has it in memory may still give it.
    let mut uncounted = list_opts(None, None, Some(3));
    uncounted.without_remaining_count = true;
    let quiet = s.list(PREFIX, &uncounted).await.unwrap();
    let page_names = |l: &ListResult| {
        l.items
            .iter()
            .map(|o| o.name().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(page_names(&quiet), page_names(&first));
    assert!(quiet.continue_token.is_some());
    assert!(matches!(quiet.remaining_item_count, None | Some(7)));
    let revision = first.revision;
    let mut names: Vec<String> = first.items.iter().map(|o| o.name().to_string()).collect();
    let mut token = first.continue_token.clone().expect("a continue token");
    let mut writes = 0;
    loop {
        // Writes between pages: new keys, changed keys, deleted keys.
        writes += 1;
        s.create(
            &key("ns", &format!("q{writes:02}")),
            pod("ns", "q", &[]),
            None,
        )
        .await
        .unwrap();
        s.create(
            &key("ns", &format!("p{writes:02}x")),
            pod("ns", "px", &[]),
            None,
        )
        .await
        .unwrap();
        s.guaranteed_update(&key("ns", "p09"), None, false, &mut |c| {
            let n = counter(c.as_ref().unwrap());
            Box::pin(async move { Ok(with_counter(c.unwrap(), n + 1)) })
        })
        .await
        .unwrap();
        let opts = ListOptions {
            limit: Some(3),
            continue_token: Some(token.clone()),
            ..Default::default()
        };
        let page = s.list(PREFIX, &opts).await.unwrap();
        assert_eq!(
            page.revision, revision,
            "every page is read at the first page's revision"
        );
        for o in &page.items {
            assert!(rv(o) <= revision);
            assert_eq!(
                counter(o),
                0,
                "pages show objects as they were at the first page"
            );
        }
        names.extend(page.items.iter().map(|o| o.name().to_string()));
        match page.continue_token {
            Some(t) => token = t,
            None => break,
        }
    }
    let expected: Vec<String> = (0..10).map(|i| format!("p{i:02}")).collect();
    assert_eq!(names, expected);

    // A malformed token is a 400 with upstream's wording.
    let bad = ListOptions {
        limit: Some(3),
        continue_token: Some("not-a-token".into()),
        ..Default::default()
    };
    let err = s.list(PREFIX, &bad).await.unwrap_err();
    assert!(
        matches!(err, Error::InvalidContinue(ref m) if m.starts_with("continue key is not valid")),
        "{err:?}"
    );
}

/// Label and field selectors filter lists, also across pages.
pub async fn selectors(s: DynStorage) {
    for i in 0..6 {
        let app = if i % 2 == 0 { "web" } else { "db" };
        s.create(
            &key("ns", &format!("s{i}")),
            pod("ns", &format!("s{i}"), &[("app", app)]),
            None,
        )
        .await
        .unwrap();
    }
    s.create(
        &key("other", "s9"),
        pod("other", "s9", &[("app", "web")]),
        None,
    )
    .await
    .unwrap();
    let mut opts = ListOptions::default();
    opts.predicate.label = LabelSelector::parse("app=web").unwrap();
    let web = s.list(PREFIX, &opts).await.unwrap();
    assert_eq!(
        web.items.iter().map(|o| o.name()).collect::<Vec<_>>(),
        ["s0", "s2", "s4", "s9"]
    );
    let ns_only = s.list(&format!("{PREFIX}ns/"), &opts).await.unwrap();
    assert_eq!(ns_only.items.len(), 3);

    opts.predicate.label = LabelSelector::parse("app!=web").unwrap();
    opts.predicate.field = FieldSelector::parse("metadata.name=s3").unwrap();
    let one = s.list(PREFIX, &opts).await.unwrap();
    assert_eq!(
        one.items.iter().map(|o| o.name()).collect::<Vec<_>>(),
        ["s3"]
    );

    // Paging with a selector still returns every match exactly once.
    let mut paged = ListOptions {
        limit: Some(1),
        ..Default::default()
    };
    paged.predicate.label = LabelSelector::parse("app=db").unwrap();
    let mut names = Vec::new();
    loop {
        let page = s.list(PREFIX, &paged).await.unwrap();
        assert!(page.items.len() <= 1);
        assert!(
            page.remaining_item_count.is_none(),
            "remainingItemCount is unknown under a selector"
        );
        names.extend(page.items.iter().map(|o| o.name().to_string()));
        match page.continue_token {
            Some(t) => paged.continue_token = Some(t),
            None => break,
        }
    }
    assert_eq!(names, ["s1", "s3", "s5"]);
}

/// A list larger than gRPC's default 4 MiB message still comes back whole, and in pages.
pub async fn large_list(s: DynStorage) {
    const N: usize = 300;
    let filler = "x".repeat(20 * 1024);
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (s, filler) = (s.clone(), filler.clone());
        tasks.push(tokio::spawn(async move {
            for i in (w..N).step_by(16) {
                let mut o = pod("big", &format!("o{i:03}"), &[]);
                o.insert("data", serde_json::json!({ "filler": filler }));
                s.create(&key("big", &format!("o{i:03}")), o, None)
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = s.list(PREFIX, &ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), N);
    let page = s
        .list(PREFIX, &list_opts(None, None, Some(100)))
        .await
        .unwrap();
    assert_eq!(
        (page.items.len(), page.remaining_item_count),
        (100, Some(200))
    );
}

/// Reads every page of `opts` from `s`, checking each against the first page's revision;
/// returns the names in order and that revision.
async fn all_pages(s: &DynStorage, mut opts: ListOptions) -> (Vec<String>, i64) {
    let limit = opts.limit.map(|l| l as usize);
    let first_token = opts.continue_token.is_some();
    let mut names = Vec::new();
    let mut revision = None;
    loop {
        let page = s.list(PREFIX, &opts).await.unwrap();
        assert!(limit.is_none_or(|l| page.items.len() <= l));
        let r = *revision.get_or_insert(page.revision);
        assert_eq!(page.revision, r, "every page is read at one revision");
        if !opts.predicate.is_everything() {
            assert!(page.remaining_item_count.is_none());
        }
        names.extend(page.items.iter().map(|o| o.name().to_string()));
        match page.continue_token {
            Some(t) => {
                // A continued list takes no resourceVersion of its own.
                opts.resource_version = None;
                opts.resource_version_match = None;
                opts.continue_token = Some(t);
            }
            None => break,
        }
    }
    assert!(!first_token || revision.is_some());
    (names, revision.unwrap_or(0))
}

/// Paging under a selector while the objects change shows the first page's state, and a
/// paged list at an old revision (`Exact` with `limit`) shows that revision's state.
pub async fn paging_selectors_old_revisions(s: DynStorage) {
    for i in 0..12 {
        let app = if i % 3 == 0 { "web" } else { "db" };
        s.create(
            &key("ns", &format!("r{i:02}")),
            pod("ns", &format!("r{i:02}"), &[("app", app)]),
            None,
        )
        .await
        .unwrap();
    }
    let old = s.current_revision().await.unwrap();
    let web_then = ["r00", "r03", "r06", "r09"];

    // Unchanged data: every page at one revision, remainingItemCount counts what follows.
    let mut opts = list_opts(None, None, Some(5));
    let first = s.list(PREFIX, &opts).await.unwrap();
    assert_eq!(
        (first.items.len(), first.remaining_item_count),
        (5, Some(7))
    );
    opts.continue_token = first.continue_token.clone();
    let second = s.list(PREFIX, &opts).await.unwrap();
    assert_eq!(second.revision, first.revision);
    assert_eq!(
        (second.items.len(), second.remaining_item_count),
        (5, Some(2))
    );
    assert_eq!(second.items[0].name(), "r05");

    // A selector page holds at most `limit` matches; pages go on while keys follow.
    let mut web = list_opts(None, None, Some(1));
    web.predicate.label = LabelSelector::parse("app=web").unwrap();
    let page = s.list(PREFIX, &web).await.unwrap();
    assert_eq!(
        page.items.iter().map(|o| o.name()).collect::<Vec<_>>(),
        ["r00"]
    );
    web.continue_token = page.continue_token.clone();
    // Changes between pages: a match stops matching, a new match appears, one is deleted.
    s.guaranteed_update(&key("ns", "r03"), None, false, &mut |c| {
        Box::pin(async move {
            let mut o = c.unwrap();
            o.metadata_mut()
                .insert("labels".into(), serde_json::json!({"app": "db"}));
            Ok(o)
        })
    })
    .await
    .unwrap();
    s.create(
        &key("ns", "r04x"),
        pod("ns", "r04x", &[("app", "web")]),
        None,
    )
    .await
    .unwrap();
    s.delete(&key("ns", "r06"), None, &no_validate)
        .await
        .unwrap();
    let (mut names, revision) = all_pages(&s, web.clone()).await;
    assert_eq!(revision, page.revision);
    names.insert(0, "r00".into());
    assert_eq!(names, web_then, "the pages show the first page's state");

    // The same at an old revision from the start, under a selector and without one.
    let mut exact = list_opts(
        Some(&old.to_string()),
        Some(ResourceVersionMatch::Exact),
        Some(2),
    );
    exact.predicate.label = LabelSelector::parse("app=web").unwrap();
    let (names, revision) = all_pages(&s, exact.clone()).await;
    assert_eq!(revision, old);
    assert_eq!(names, web_then);
    exact.predicate = Default::default();
    let (names, _) = all_pages(&s, exact).await;
    let all_then: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
    assert_eq!(names, all_then);

    // Today's state, paged under the selector.
    let mut now = list_opts(None, None, Some(2));
    now.predicate.label = LabelSelector::parse("app=web").unwrap();
    let (names, revision) = all_pages(&s, now).await;
    assert!(revision > old);
    assert_eq!(names, ["r00", "r04x", "r09"]);
}
