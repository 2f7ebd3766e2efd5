//! Validation of certificate signing requests against upstream's rules and wording.

use super::*;
use serde_json::json;

/// A PEM CSR signed by a fresh ECDSA key, as `openssl req` or client-go would send it.
fn pem_request() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["example.com".to_string()]).unwrap();
    params.serialize_request(&key).unwrap().pem().unwrap()
}

fn b64(s: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn csr(request: &str, extra: Value) -> Object {
    let mut v = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "c"},
        "spec": {
            "request": b64(request.as_bytes()),
            "signerName": "example.com/signer",
            "usages": ["client auth"],
        },
    });
    if let (Value::Object(m), Value::Object(e)) = (&mut v["spec"], extra) {
        m.extend(e);
    }
    Object::from_value(v).unwrap()
}

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn a_signed_request_is_valid() {
    assert_eq!(
        messages(&CsrStrategy.validate(&csr(&pem_request(), json!({})))),
        Vec::<String>::new()
    );
}

#[test]
fn request_must_be_a_certificate_request_that_verifies() {
    let errs = CsrStrategy.validate(&csr(
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        json!({}),
    ));
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.request");
    assert!(errs[0]
        .to_string()
        .starts_with("spec.request: Invalid value: []byte{0x2d, 0x2d"));
    assert!(errs[0]
        .to_string()
        .ends_with(": PEM block type must be CERTIFICATE REQUEST"));

    // a request whose signed bytes were changed does not verify
    let pem = pem_request();
    let block = x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    let mut der = block.contents.clone();
    let n = der.len();
    der[n - 3] ^= 0x01;
    let tampered = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        b64(&der)
    );
    let errs = CsrStrategy.validate(&csr(&tampered, json!({})));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].detail == "x509: ECDSA verification failure"
            || errs[0].detail == "x509: malformed certificate request",
        "{}",
        errs[0]
    );
}

#[test]
fn spec_rules_and_wording() {
    let pem = pem_request();
    let errs = CsrStrategy.validate(&csr(
        &pem,
        json!({"signerName": "nodomain", "usages": ["client auth", "client auth", "flying"], "expirationSeconds": 599}),
    ));
    let m = messages(&errs);
    assert_eq!(
        m[0],
        r#"spec.usages[2]: Unsupported value: "flying": supported values: "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment", "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", "timestamping""#
    );
    assert_eq!(m[1], r#"spec.usages[1]: Duplicate value: "client auth""#);
    assert_eq!(
        m[2],
        r#"spec.signerName: Invalid value: "nodomain": must be a fully qualified domain and path of the form 'example.com/signer-name'"#
    );
    assert_eq!(m[3], "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)");
    assert_eq!(m.len(), 4);

    let m = messages(&CsrStrategy.validate(&csr(&pem, json!({"signerName": "", "usages": []}))));
    assert_eq!(
        m,
        vec![
            "spec.usages: Required value",
            "spec.signerName: Required value"
        ]
    );
    let m = messages(&CsrStrategy.validate(&csr(&pem, json!({"signerName": "example/x"}))));
    assert_eq!(
        m,
        vec![
            r#"spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots"#
        ]
    );
    let m =
        messages(&CsrStrategy.validate(&csr(&pem, json!({"signerName": LEGACY_UNKNOWN_SIGNER}))));
    assert_eq!(
        m,
        vec![
            r#"spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this API version"#
        ]
    );
}

fn with_conditions(obj: &Object, conds: Value) -> Object {
    let mut o = obj.clone();
    o.insert("status", json!({ "conditions": conds }));
    o
}

#[test]
fn conditions_and_update_paths() {
    let old = csr(&pem_request(), json!({}));
    let approved = with_conditions(&old, json!([{"type": "Approved", "status": "True"}]));
    let both = with_conditions(
        &old,
        json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}, {"type": "Approved", "status": "False"}]),
    );
    assert_eq!(
        messages(&CsrApprovalStrategy.validate_status_update(&both, &old)),
        vec![
            r#"status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions are mutually exclusive"#,
            r#"status.conditions[2].status: Unsupported value: "False": supported values: "True""#,
            r#"status.conditions[2].type: Invalid value: "Approved": Approved and Denied conditions are mutually exclusive"#,
            r#"status.conditions[2].type: Duplicate value: "Approved""#,
        ]
    );
    // approval adds it; /status may not
    assert!(CsrApprovalStrategy
        .validate_status_update(&approved, &old)
        .is_empty());
    assert_eq!(
        messages(&CsrStrategy.validate_status_update(&approved, &old)),
        vec![r#"status.conditions: Forbidden: updates may not add a condition of type "Approved""#]
    );
    // nobody removes it
    assert_eq!(
        messages(&CsrApprovalStrategy.validate_status_update(&old, &approved)),
        vec![
            r#"status.conditions: Forbidden: updates may not remove a condition of type "Approved""#
        ]
    );
    // the certificate is /status's, and only once
    let mut issued = approved.clone();
    obj_mut(&mut issued, &["status"]).insert("certificate".into(), json!(b64(b"junk")));
    assert_eq!(
        messages(&CsrApprovalStrategy.validate_status_update(&issued, &approved)),
        vec![
            r#"status.certificate: Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block"#,
            "status.certificate: Forbidden: updates may not set certificate content"
        ]
    );
}

#[test]
fn requester_replaces_what_the_body_says() {
    let ctx = Context {
        namespace: String::new(),
        user: kapi_machinery::UserInfo {
            name: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: Default::default(),
        },
    };
    let obj = csr(
        &pem_request(),
        json!({"username": "mallory", "extra": {"a": ["b"]}}),
    );
    let out = CsrStore::with_requester(&ctx, obj);
    assert_eq!(out.as_map()["spec"]["username"], "alice");
    assert_eq!(out.as_map()["spec"]["uid"], "u-1");
    assert_eq!(
        out.as_map()["spec"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    assert!(out.as_map()["spec"].get("extra").is_none());
}
