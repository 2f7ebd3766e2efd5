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

/// The `[dependencies]` table of a crate's manifest (dev-dependencies excluded: tests may
/// build on anything).
fn dependencies_of(krate: &str) -> Vec<String> {
    let path = crates_dir().join(krate).join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
            out.push(name.to_string());
        }
    }
    out
}

fn never_depends_on(krate: &str, forbidden: &[&str], why: &str) {
    let deps = dependencies_of(krate);
    for f in forbidden {
        assert!(
            !deps.iter().any(|d| d == f),
            "crates/{krate} depends on {f}: {why}"
        );
    }
}

#[test]
fn the_generic_registry_never_names_a_kind_or_a_printer() {
    never_depends_on(
        "registry",
        &["kapi-resources", "kapi-apiextensions"],
        "the generic machinery is below every kind; a kind brings its printer and rules \
         through its Strategy",
    );
    never_names(
        "registry/src",
        &["kapi_resources", "kapi_apiextensions"],
        "the generic machinery is below every kind",
    );
}

#[test]
fn endpoints_build_on_the_generic_registry_only() {
    never_depends_on(
        "endpoints",
        &["kapi-resources", "kapi-apiextensions"],
        "the request path serves any Storage; a kind's change must not rebuild it",
    );
    never_depends_on(
        "apiextensions",
        &["kapi-resources"],
        "custom resources build on the generic machinery, as apiextensions-apiserver on \
         k8s.io/apiserver",
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
