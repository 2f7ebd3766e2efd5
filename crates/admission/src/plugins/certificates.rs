//! The CertificateSigningRequest checks (upstream's `plugin/pkg/admission/certificates`), all
//! validating and on by default, as upstream:
//!
//! - **CertificateApproval**: an update of `/approval` needs `approve` on the CSR's signer
//!   (`signers` in `certificates.k8s.io`, named `<signerName>` or `<domain>/*`).
//! - **CertificateSigning**: an update of `/status` that changes `status.certificate` or
//!   `status.conditions` needs `sign` on the signer.
//! - **CertificateSubjectRestriction**: a CSR for `kubernetes.io/kube-apiserver-client` may
//!   not ask for the `system:masters` group.
//!
//! The authorizer is the server's own (`--authorization-mode`), as upstream's
//! `WantsAuthorizer`.

use super::util::handler;
use crate::policy::cel::authz::{AdmissionAuthorizer, AuthzRequest};
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, ValidationInterface};
use async_trait::async_trait;
use base64::Engine;
use kapi_machinery::{ApiError, UserInfo};
use serde_json::Value;
use std::sync::Arc;
use x509_parser::prelude::FromDer;

pub const APPROVAL: &str = "CertificateApproval";
pub const SIGNING: &str = "CertificateSigning";
pub const SUBJECT_RESTRICTION: &str = "CertificateSubjectRestriction";

const GROUP: &str = "certificates.k8s.io";
const RESOURCE: &str = "certificatesigningrequests";
const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    fn authorizer(
        ctx: &crate::PluginContext,
        plugin: &str,
    ) -> Result<Arc<dyn AdmissionAuthorizer>, AdmissionError> {
        ctx.authorizer
            .clone()
            .ok_or_else(|| AdmissionError::MissingDependency {
                plugin: plugin.into(),
                what: "an authorizer".into(),
            })
    }
    plugins.register(
        APPROVAL,
        Arc::new(|_, ctx| {
            Ok(Arc::new(CertificateApproval {
                authz: authorizer(ctx, APPROVAL)?,
            }))
        }),
    )?;
    plugins.register(
        SIGNING,
        Arc::new(|_, ctx| {
            Ok(Arc::new(CertificateSigning {
                authz: authorizer(ctx, SIGNING)?,
            }))
        }),
    )?;
    plugins.register(
        SUBJECT_RESTRICTION,
        Arc::new(|_, _| Ok(Arc::new(CertificateSubjectRestriction))),
    )
}

fn is_csr(a: &Attributes, subresource: &str) -> bool {
    a.resource.group == GROUP && a.resource.resource == RESOURCE && a.subresource == subresource
}

fn signer_name(csr: Option<&kapi_machinery::Object>) -> String {
    csr.and_then(|o| o.get("spec"))
        .and_then(|s| s.get("signerName"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Upstream's `IsAuthorizedForSignerName`: `verb` on the signer by name, else on every signer
/// of its domain (`<domain>/*`).
pub fn authorized_for_signer(
    authz: &dyn AdmissionAuthorizer,
    user: &UserInfo,
    verb: &str,
    signer: &str,
) -> bool {
    let domain = signer.split('/').next().unwrap_or_default();
    [signer.to_string(), format!("{domain}/*")]
        .into_iter()
        .any(|name| {
            authz
                .authorize(&AuthzRequest {
                    user: user.clone(),
                    verb: verb.into(),
                    resource_request: true,
                    path: String::new(),
                    group: GROUP.into(),
                    version: "*".into(),
                    resource: "signers".into(),
                    subresource: String::new(),
                    namespace: String::new(),
                    name,
                })
                .allowed
        })
}

pub struct CertificateApproval {
    authz: Arc<dyn AdmissionAuthorizer>,
}

handler!(CertificateApproval, [Update], validates);

#[async_trait]
impl ValidationInterface for CertificateApproval {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_csr(a, "approval") || a.object.is_none() {
            return Ok(());
        }
        let signer = signer_name(a.object.as_ref());
        if !authorized_for_signer(self.authz.as_ref(), &a.user, "approve", &signer) {
            return Err(a.forbidden(format!(
                "user not permitted to approve requests with signerName {signer:?}"
            )));
        }
        Ok(())
    }
}

pub struct CertificateSigning {
    authz: Arc<dyn AdmissionAuthorizer>,
}

handler!(CertificateSigning, [Update], validates);

#[async_trait]
impl ValidationInterface for CertificateSigning {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_csr(a, "status") {
            return Ok(());
        }
        let (Some(old), Some(new)) = (&a.old_object, &a.object) else {
            return Err(a.forbidden("expected type CertificateSigningRequest, got: <nil>"));
        };
        let status = |o: &kapi_machinery::Object, k: &str| {
            o.get("status")
                .and_then(|s| s.get(k))
                .filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                .filter(|v| v.as_str().is_none_or(|s| !s.is_empty()))
                .cloned()
        };
        if status(old, "certificate") == status(new, "certificate")
            && status(old, "conditions") == status(new, "conditions")
        {
            return Ok(());
        }
        let signer = signer_name(Some(old));
        if !authorized_for_signer(self.authz.as_ref(), &a.user, "sign", &signer) {
            return Err(a.forbidden(format!(
                "user not permitted to sign requests with signerName {signer:?}"
            )));
        }
        Ok(())
    }
}

pub struct CertificateSubjectRestriction;

handler!(CertificateSubjectRestriction, [Create], validates);

/// The subject organizations of a PEM certificate request.
fn csr_organizations(pem: &[u8]) -> Result<Vec<String>, String> {
    let block = x509_parser::pem::Pem::iter_from_buffer(pem)
        .map_while(Result::ok)
        .next()
        .filter(|b| b.label == "CERTIFICATE REQUEST")
        .ok_or("PEM block type must be CERTIFICATE REQUEST")?;
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .map_err(|_| "x509: malformed certificate request")?;
    Ok(csr
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect())
}

#[async_trait]
impl ValidationInterface for CertificateSubjectRestriction {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_csr(a, "") {
            return Ok(());
        }
        let Some(csr) = &a.object else {
            return Err(a.forbidden("expected type CertificateSigningRequest, got: <nil>"));
        };
        if signer_name(Some(csr)) != KUBE_APISERVER_CLIENT_SIGNER {
            return Ok(());
        }
        let request = csr
            .get("spec")
            .and_then(|s| s.get("request"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let pem = base64::engine::general_purpose::STANDARD
            .decode(request)
            .unwrap_or_default();
        let orgs = csr_organizations(&pem)
            .map_err(|e| a.forbidden(format!("failed to parse CSR: {e}")))?;
        if orgs.iter().any(|o| o == "system:masters") {
            return Err(a.forbidden(
                "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "certificates_tests.rs"]
mod tests;
