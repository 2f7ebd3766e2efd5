//! Writes `crates/endpoints/src/protobuf/generated.rs`; run after changing the version of
//! `k8s-pb` or `k8s-openapi`: `cargo run -p kapi-gen-proto-schema`.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "code generator run by hand on trusted sources, never on a request path"
)]

fn main() {
    let root = kapi_gen_proto_schema::workspace_root();
    match kapi_gen_proto_schema::generate(&root) {
        Ok(text) => {
            let path = root.join(kapi_gen_proto_schema::OUTPUT);
            if let Err(e) = std::fs::write(&path, text) {
                eprintln!("writing {}: {e}", path.display());
                std::process::exit(1);
            }
            println!("wrote {}", path.display());
        }
        Err(e) => {
            eprintln!("gen-proto-schema: {e}");
            std::process::exit(1);
        }
    }
}
