//! apiextensions.k8s.io/v1 `customresourcedefinitions` (crd, crds; cluster-scoped, `/status`):
//! the definitions custom resources are served from (`crate::customresource`).

use crate::resources::core::push;
use crate::resources::{info, typed};
use crate::rest::{ApiGroupInfo, ApiVersionInfo, ResourceInfo, Storage};
use crate::strategy::Strategy;
use crate::BuildContext;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::sync::Arc;

pub const GROUP: &str = "apiextensions.k8s.io";

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let mut s: Vec<Arc<dyn Storage>> = Vec::new();
    push(&mut s, ctx, Arc::new(CustomResourceDefinitionStrategy));
    vec![ApiGroupInfo {
        group: GROUP.into(),
        preferred_version: "v1".into(),
        versions: vec![ApiVersionInfo {
            version: "v1".into(),
            storages: s,
        }],
    }]
}

pub struct CustomResourceDefinitionStrategy;
impl Strategy for CustomResourceDefinitionStrategy {
    typed!(CustomResourceDefinition);
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            &["api-extensions"],
        )
    }
    fn has_status(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        true
    }
}
