//! `/version`: Kubernetes 1.33's `version.Info`, with kapi's own `gitVersion` suffix. kubectl's
//! dispatcher picks the kubectl it runs from `minor`.

use serde::Serialize;

/// The Kubernetes minor version whose API kapi serves.
pub const KUBERNETES_MINOR: &str = "33";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Info {
    major: &'static str,
    minor: &'static str,
    emulation_major: &'static str,
    emulation_minor: &'static str,
    min_compatibility_major: &'static str,
    min_compatibility_minor: &'static str,
    git_version: String,
    git_commit: &'static str,
    git_tree_state: &'static str,
    build_date: &'static str,
    go_version: &'static str,
    compiler: &'static str,
    platform: String,
}

fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

/// `gitVersion`: `v1.33.0-kapi.<kapi version>`.
pub fn git_version() -> String {
    format!("v1.{KUBERNETES_MINOR}.0-kapi.{}", env!("CARGO_PKG_VERSION"))
}

/// The `/version` body, indented as kube-apiserver writes it.
pub fn body() -> Vec<u8> {
    let info = Info {
        major: "1",
        minor: KUBERNETES_MINOR,
        emulation_major: "1",
        emulation_minor: KUBERNETES_MINOR,
        min_compatibility_major: "1",
        min_compatibility_minor: "32",
        git_version: git_version(),
        git_commit: option_env!("KAPI_GIT_COMMIT").unwrap_or("unknown"),
        git_tree_state: option_env!("KAPI_GIT_TREE_STATE").unwrap_or("clean"),
        build_date: option_env!("KAPI_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
        go_version: "none",
        compiler: "rustc",
        platform: platform(),
    };
    serde_json::to_vec_pretty(&info).unwrap_or_default()
}
