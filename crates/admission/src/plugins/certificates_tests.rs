use super::*;
use crate::policy::cel::authz::AuthzDecision;
use crate::Operation;
use kapi_machinery::{GroupVersionKind, GroupVersionResource, Object};
use serde_json::json;
use std::sync::Mutex;

/// `openssl req -new -newkey ec ... -subj "/O=system:masters/CN=eve"`, base64 of the PEM.
const MASTERS_CSR: &[&str] = &[
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIaU1JR0pBZ0VBTUNjeEZ6QVZCZ05WQkFvTURu",
    "TjVjM1JsYlRwdFlYTjBaWEp6TVF3d0NnWURWUVFEREFObApkbVV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFN",
    "QkJ3TkNBQVEzZEdINnN5cCtyeENwNWltc0ZmeDY0N1I5CmkrZFRtYVJCR2U4b1NEUzUrSUs3aWVNL3hPdDJhSThk",
    "WlhMVzRzbUN0a1QvbThrUCtaSUF1TmZmNktSOG9BQXcKQ2dZSUtvWkl6ajBFQXdJRFNBQXdSUUlnQlRiQ2JwbWNm",
    "ZzBSeEJHZW5FQlNiV2tRODZ0MUVQSHF6U1dNOGhlWApiQThDSVFDUHQrTUVxa0VOQi9FN2VkT1pmdC9QK2dRUWFV",
    "NVlBd3hJZnJuTklqUXRNZz09Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=",
];
/// The same with `/O=devs/CN=bob`.
const DEVS_CSR: &[&str] = &[
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIWE1IOENBUUF3SFRFTk1Bc0dBMVVFQ2d3RVpH",
    "VjJjekVNTUFvR0ExVUVBd3dEWW05aU1Ga3dFd1lIS29aSQp6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVvYnlHZUJO",
    "czBHd0kzdmNOZ1dXaFRwdDd0WVA3MU94Y1MvMXV0NGRlCk00U1luYVlEL2xmS2NTallvaTJ6OHMyS0xMYitQRmxU",
    "bHAvalhlWUxkSUhrNjZBQU1Bb0dDQ3FHU000OUJBTUMKQTBnQU1FVUNJUUNuU005R3pGc2F5WGM0aVY4Snpia3Nq",
    "K2FwZlBFT21xWEF2TjBXTUlENlRBSWdHdUVtS2pnLwpINHk5eTZjNlRBVzRJMWFkNDM3RFZaMkpRS0pRSzZsZ3hM",
    "RT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==",
];

/// Allows the (verb, signer name) pairs it holds; records every question.
#[derive(Default)]
struct Signers {
    allowed: Vec<(String, String)>,
    asked: Mutex<Vec<String>>,
}

impl AdmissionAuthorizer for Signers {
    fn authorize(&self, r: &AuthzRequest) -> AuthzDecision {
        assert_eq!(
            (r.group.as_str(), r.resource.as_str(), r.version.as_str()),
            (GROUP, "signers", "*")
        );
        self.asked
            .lock()
            .unwrap()
            .push(format!("{} {}", r.verb, r.name));
        AuthzDecision {
            allowed: self.allowed.contains(&(r.verb.clone(), r.name.clone())),
            reason: String::new(),
            error: None,
        }
    }
}

fn signers(allowed: &[(&str, &str)]) -> Arc<Signers> {
    Arc::new(Signers {
        allowed: allowed
            .iter()
            .map(|(v, n)| (v.to_string(), n.to_string()))
            .collect(),
        ..Default::default()
    })
}

fn csr(signer: &str, request: &str, status: Value) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": "c"},
           "spec": {"signerName": signer, "request": request, "usages": ["client auth"]},
           "status": status})
}

fn attrs(op: Operation, sub: &str, new: Value, old: Option<Value>) -> Attributes {
    let mut a = Attributes::new(
        op,
        GroupVersionKind::new(GROUP, "v1", "CertificateSigningRequest"),
        GroupVersionResource::new(GROUP, "v1", RESOURCE),
        "",
        "c",
    );
    a.subresource = sub.into();
    a.object = Some(Object::from_value(new).unwrap());
    a.old_object = old.map(|o| Object::from_value(o).unwrap());
    a.user = UserInfo {
        name: "approver".into(),
        ..Default::default()
    };
    a
}

#[tokio::test]
async fn approval_needs_approve_on_the_signer_or_its_domain() {
    let approved = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    let a = attrs(
        Operation::Update,
        "approval",
        csr("example.com/a", "", approved.clone()),
        None,
    );
    let p = CertificateApproval {
        authz: signers(&[]),
    };
    let e = p.validate(&a).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            403,
            r#"certificatesigningrequests.certificates.k8s.io "c" is forbidden: user not permitted to approve requests with signerName "example.com/a""#
        )
    );
    let by_name = signers(&[("approve", "example.com/a")]);
    CertificateApproval {
        authz: by_name.clone(),
    }
    .validate(&a)
    .await
    .unwrap();
    assert_eq!(*by_name.asked.lock().unwrap(), ["approve example.com/a"]);
    let by_domain = signers(&[("approve", "example.com/*")]);
    CertificateApproval {
        authz: by_domain.clone(),
    }
    .validate(&a)
    .await
    .unwrap();
    assert_eq!(
        *by_domain.asked.lock().unwrap(),
        ["approve example.com/a", "approve example.com/*"]
    );
    // Other writes are not this plugin's.
    let status = attrs(
        Operation::Update,
        "status",
        csr("example.com/a", "", approved),
        None,
    );
    p.validate(&status).await.unwrap();
}

#[tokio::test]
async fn signing_needs_sign_when_the_certificate_or_conditions_change() {
    let p = CertificateSigning {
        authz: signers(&[]),
    };
    let old = csr("example.com/a", "", json!({}));
    let same = attrs(
        Operation::Update,
        "status",
        csr("example.com/a", "", json!({"conditions": []})),
        Some(old.clone()),
    );
    p.validate(&same).await.unwrap();
    let issued = attrs(
        Operation::Update,
        "status",
        csr("example.com/a", "", json!({"certificate": "Y2VydA=="})),
        Some(old),
    );
    assert_eq!(
        p.validate(&issued).await.unwrap_err().message,
        r#"certificatesigningrequests.certificates.k8s.io "c" is forbidden: user not permitted to sign requests with signerName "example.com/a""#
    );
    CertificateSigning {
        authz: signers(&[("sign", "example.com/*")]),
    }
    .validate(&issued)
    .await
    .unwrap();
}

#[tokio::test]
async fn no_system_masters_from_the_client_signer() {
    let p = CertificateSubjectRestriction;
    let masters = MASTERS_CSR.concat();
    let a = attrs(
        Operation::Create,
        "",
        csr(KUBE_APISERVER_CLIENT_SIGNER, &masters, json!({})),
        None,
    );
    assert_eq!(
        p.validate(&a).await.unwrap_err().message,
        r#"certificatesigningrequests.certificates.k8s.io "c" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"#
    );
    let other_signer = attrs(
        Operation::Create,
        "",
        csr("example.com/a", &masters, json!({})),
        None,
    );
    p.validate(&other_signer).await.unwrap();
    let devs = attrs(
        Operation::Create,
        "",
        csr(KUBE_APISERVER_CLIENT_SIGNER, &DEVS_CSR.concat(), json!({})),
        None,
    );
    p.validate(&devs).await.unwrap();
    let garbage = attrs(
        Operation::Create,
        "",
        csr(KUBE_APISERVER_CLIENT_SIGNER, "eA==", json!({})),
        None,
    );
    assert_eq!(
        p.validate(&garbage).await.unwrap_err().message,
        r#"certificatesigningrequests.certificates.k8s.io "c" is forbidden: failed to parse CSR: PEM block type must be CERTIFICATE REQUEST"#
    );
}
