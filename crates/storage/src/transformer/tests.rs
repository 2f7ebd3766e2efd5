use super::*;

const KEY32: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // "0123456789abcdef" twice

fn config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, widgets.example.com]\n  providers:\n{providers}"
    )
}

fn aescbc(name: &str) -> String {
    format!("  - aescbc:\n      keys:\n      - name: {name}\n        secret: {KEY32}\n")
}

#[test]
fn first_provider_encrypts_every_provider_decrypts() {
    let cbc = Transformers::parse(&config(&(aescbc("key1") + "  - identity: {}\n"))).unwrap();
    let sealed = cbc
        .to_storage(
            "/secrets/ns/a",
            "/registry/secrets/ns/a",
            b"{\"a\":1}".to_vec(),
        )
        .unwrap();
    assert!(sealed.starts_with(b"k8s:enc:aescbc:v1:key1:"));
    assert_eq!(
        &*cbc
            .from_storage("/secrets/ns/a", "/registry/secrets/ns/a", &sealed)
            .unwrap(),
        b"{\"a\":1}"
    );
    // Plain values written before encryption was turned on still read.
    assert_eq!(
        &*cbc.from_storage("/secrets/ns/a", "", b"{}").unwrap(),
        b"{}"
    );
    // Resources the configuration does not name are left alone.
    assert_eq!(
        cbc.to_storage("/configmaps/ns/a", "", b"{}".to_vec())
            .unwrap(),
        b"{}"
    );
    // Custom resources are under /<group>/<plural>/.
    assert!(cbc
        .to_storage("/example.com/widgets/ns/a", "", b"{}".to_vec())
        .unwrap()
        .starts_with(b"k8s:enc:aescbc:v1:key1:"));

    // Identity first: writes are plain, encrypted values still read.
    let identity = Transformers::parse(&config(
        &("  - identity: {}\n".to_string() + &aescbc("key1")),
    ))
    .unwrap();
    assert_eq!(
        identity
            .to_storage("/secrets/ns/a", "", b"{}".to_vec())
            .unwrap(),
        b"{}"
    );
    assert_eq!(
        &*identity
            .from_storage("/secrets/ns/a", "/registry/secrets/ns/a", &sealed)
            .unwrap(),
        b"{\"a\":1}"
    );
    // A key that is gone from the configuration cannot read its values.
    let other = Transformers::parse(&config(&aescbc("key2"))).unwrap();
    let err = other
        .from_storage("/secrets/ns/a", "/registry/secrets/ns/a", &sealed)
        .unwrap_err();
    assert!(
        err.to_string().contains("no matching prefix found"),
        "{err}"
    );
}

#[test]
fn gcm_and_secretbox_prefixes() {
    for p in ["aesgcm", "secretbox"] {
        let t = Transformers::parse(&config(&format!(
            "  - {p}:\n      keys:\n      - name: k\n        secret: {KEY32}\n"
        )))
        .unwrap();
        let sealed = t
            .to_storage("/secrets/a/b", "/registry/secrets/a/b", b"v".to_vec())
            .unwrap();
        assert!(sealed.starts_with(format!("k8s:enc:{p}:v1:k:").as_bytes()));
        assert_eq!(
            &*t.from_storage("/secrets/a/b", "/registry/secrets/a/b", &sealed)
                .unwrap(),
            b"v"
        );
    }
}

#[test]
fn invalid_configurations_are_refused_with_every_problem() {
    let err = Transformers::parse(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.apps']\n  providers:\n  - aescbc:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n  - kms: {name: x}\n",
    )
    .err()
    .unwrap();
    assert!(err.contains("not a valid AES key length"), "{err}");
    assert!(err.contains("KMS providers are not supported"), "{err}");
    assert!(err.contains("*.apps"), "{err}");
    assert!(Transformers::parse("kind: Other\n").is_err());
}

#[test]
fn resources_kept_under_other_prefixes_are_selected_by_their_keys() {
    let t = Transformers::parse(
        &format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [ingresses.networking.k8s.io, customresourcedefinitions.apiextensions.k8s.io, apiservices.apiregistration.k8s.io, nodes]\n  providers:\n{}", aescbc("key1")),
    )
    .unwrap();
    for key in [
        // upstream's keys
        "/ingress/ns/a",
        "/apiextensions.k8s.io/customresourcedefinitions/a",
        "/apiregistration.k8s.io/apiservices/a",
        "/minions/a",
        // the keys an earlier kapi used, readable until they are moved
        "/ingresses/ns/a",
        "/customresourcedefinitions/a",
        "/apiservices/a",
    ] {
        let sealed = t.to_storage(key, "", b"{}".to_vec()).unwrap();
        assert!(sealed.starts_with(b"k8s:enc:aescbc:v1:key1:"), "{key}");
    }
    for key in [
        "/ingressclasses/a",
        "/services/specs/ns/a",
        "/configmaps/ns/a",
    ] {
        assert_eq!(
            t.to_storage(key, "", b"{}".to_vec()).unwrap(),
            b"{}",
            "{key}"
        );
    }
}
