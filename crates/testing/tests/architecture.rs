//! The architecture invariants of docs/architecture.md, checked by reading the sources: each
//! names what a part of the code deliberately does not know. A failure means a layer now
//! reaches past its boundary; move the shared item down instead of importing upward.

use std::path::{Path, PathBuf};

/// The workspace's `crates/` folder.
fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The non-test Rust sources at `rel` (a file or a folder, under `crates/`), with comments and
/// `#[cfg(test)]` modules left out.
fn sources(rel: &str) -> Vec<(PathBuf, String)> {
    let root = crates_dir().join(rel);
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if name == "tests" || name.ends_with("_tests") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((p, code_of(&text)));
        }
    }
    assert!(!out.is_empty(), "no sources under {}", root.display());
    out
}

/// `text` without comment lines and without the `#[cfg(test)]` module at its end.
fn code_of(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]\nmod ").next().unwrap_or(text);
    before_tests
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that no source under `rel` contains any of `forbidden`.
fn never_names(rel: &str, forbidden: &[&str], why: &str) {
    for (path, code) in sources(rel) {
        for word in forbidden {
            assert!(
                !code.contains(word),
                "{} names `{word}`: {why}",
                path.strip_prefix(crates_dir()).unwrap_or(&path).display()
            );
        }
    }
}

#[test]
fn the_generic_store_never_names_a_kind_or_a_printer() {
    never_names(
        "registry/src/store",
        &[
            "crate::printers",
            "crate::resources",
            "crate::allocator",
            "crate::customresource",
        ],
        "the Store is generic; a kind brings its printer and rules through its Strategy",
    );
}

#[test]
fn encoders_never_see_a_request_scope() {
    for rel in [
        "endpoints/src/responses.rs",
        "endpoints/src/encoded.rs",
        "endpoints/src/encoded_list.rs",
        "endpoints/src/transform.rs",
        "endpoints/src/negotiation.rs",
        "endpoints/src/protobuf",
    ] {
        never_names(
            rel,
            &["RequestScope", "crate::scope"],
            "writers take the negotiated format and the resource, not the request's scope",
        );
    }
}

#[test]
fn verbs_come_from_the_verb_table_only() {
    let probes = [
        ".as_creater()",
        ".as_getter()",
        ".as_lister()",
        ".as_watcher()",
        ".as_updater()",
        ".as_patcher()",
        ".as_graceful_deleter()",
        ".as_collection_deleter()",
        ".as_connecter()",
    ];
    for rel in [
        "endpoints/src/discovery",
        "endpoints/src/router.rs",
        "endpoints/src/installer.rs",
    ] {
        never_names(
            rel,
            &probes,
            "routes and discovery read one VerbTable, probed in verbs.rs",
        );
    }
}

#[test]
fn the_storage_interface_knows_no_cache() {
    never_names(
        "storage/src/interface.rs",
        &["crate::cacher", "cacher::"],
        "the watch cache is one implementation of the interface, below it",
    );
}
