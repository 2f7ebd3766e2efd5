//! Placeholder.

use crate::rest::ApiGroupInfo;
use crate::BuildContext;

pub fn groups(_ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    Vec::new()
}
