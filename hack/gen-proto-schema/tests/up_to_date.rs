//! The committed protobuf schema table is what the generator makes from the pinned versions.

#[test]
fn generated_table_is_up_to_date() {
    let root = kapi_gen_proto_schema::workspace_root();
    let want = kapi_gen_proto_schema::generate(&root).expect("generate");
    let path = root.join(kapi_gen_proto_schema::OUTPUT);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale: run `cargo run -p kapi-gen-proto-schema` and commit the result",
        path.display()
    );
}
