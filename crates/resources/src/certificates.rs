//! certificates.k8s.io/v1: certificatesigningrequests (csr) with `/status` and `/approval`,
//! as upstream's `pkg/registry/certificates/certificates` and
//! `pkg/apis/certificates/validation`. kapi signs nothing: a signer (a controller) writes
//! `status.certificate` through `/status`, an approver the conditions through `/approval`.

use crate::BuildContext;
use crate::{at, info, obj_mut, str_at, typed};
use async_trait::async_trait;
use base64::Engine;
use k8s_openapi::api::certificates::v1 as certs;
use kapi_machinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use kapi_machinery::{goformat, ApiError, BadValue, FieldError, Object};
use kapi_registry::kind::push;
use kapi_registry::rest::{
    self, ApiGroupInfo, Context, Creater, Decoded, FieldValidation, Getter, ResourceInfo, Storage,
    Updater, ValidateObjectFn, WriteOptions, WriteResult,
};
use kapi_registry::store::{Store, Subresource};
use kapi_registry::strategy::{FieldLabelConversion, NameRule, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;
use x509_parser::prelude::FromDer;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let mut s: Vec<Arc<dyn Storage>> = Vec::new();
    let main = push(&mut s, ctx, Arc::new(CsrStrategy));
    // the main storage sets the requesting user on create
    if let Some(first) = s.first_mut() {
        *first = Arc::new(CsrStore(main.clone()));
    }
    let approval = Store::new(Arc::new(CsrApprovalStrategy), main.storage().clone())
        .subresource(Subresource::Status);
    s.push(Arc::new(ApprovalStore::new(approval)));
    vec![ApiGroupInfo::single_version("certificates.k8s.io", "v1", s)]
}

/// Every key usage upstream knows (`allValidUsages`), sorted as `sets.List()` returns them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The signer name v1beta1 defaulted to; v1 refuses it on new objects.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Where an update comes from: each path may change only its own part of the status.
#[derive(Clone, Copy, PartialEq, Eq)]
enum UpdatePath {
    Main,
    Status,
    Approval,
}

pub struct CsrStrategy;
impl Strategy for CsrStrategy {
    typed!(
        certs::CertificateSigningRequest,
        zeros = &[
            (&["spec"], json!({})),
            (&["spec", "request"], json!("")),
            (&["spec", "signerName"], json!("")),
        ]
    );
    fn info(&self) -> ResourceInfo {
        info(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "CertificateSigningRequest",
            false,
            &["csr"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::CERTIFICATE_SIGNING_REQUESTS.table_convertor()
    }
    /// `ValidateCertificateRequestName` accepts any name a path segment can carry.
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
    fn has_status(&self) -> bool {
        true
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "spec.signerName",
        ]))
    }
    /// Users cannot create pre-approved or pre-issued requests (the requesting user is set
    /// by [`CsrStore`], which knows it).
    fn prepare_for_create(&self, obj: &mut Object) {
        obj.insert("status", json!({}));
    }
    /// A main-resource update changes metadata only.
    fn prepare_for_update(&self, new: &mut Object, old: &Object) {
        for key in ["spec", "status"] {
            match old.get(key) {
                Some(v) => {
                    new.insert(key, v.clone());
                }
                None => {
                    new.remove(key);
                }
            }
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validate_csr(obj, None)
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_csr_update(new, old, UpdatePath::Main)
    }
    fn validate_status_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_csr_update(new, old, UpdatePath::Status)
    }
}

/// The strategy behind `/approval`: a status write that may change the approval conditions
/// and nothing of the certificate.
pub struct CsrApprovalStrategy;
impl Strategy for CsrApprovalStrategy {
    fn info(&self) -> ResourceInfo {
        CsrStrategy.info()
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        CsrStrategy.table_convertor()
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        CsrStrategy.decode(body, validation)
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        CsrStrategy.openapi_schema(generator)
    }
    fn canonicalize(&self, obj: Object) -> Object {
        CsrStrategy.canonicalize(obj)
    }
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
    fn has_status(&self) -> bool {
        true
    }
    /// Upstream's approval strategy keeps the stored certificate.
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        kapi_registry::strategy::keep_all_but_status_and_metadata(new, old);
        match at(old, &["status", "certificate"]).cloned() {
            Some(c) => {
                obj_mut(new, &["status"]).insert("certificate".into(), c);
            }
            None => {
                obj_mut(new, &["status"]).remove("certificate");
            }
        }
    }
    fn validate_status_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_csr_update(new, old, UpdatePath::Approval)
    }
}

/// The request's DER-free PEM bytes (`spec.request` is base64 in JSON).
fn request_bytes(obj: &Object) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(str_at(obj, &["spec", "request"]))
        .unwrap_or_default()
}

/// Go's `%#v` of a `[]byte`.
fn go_bytes(b: &[u8]) -> String {
    let items: Vec<String> = b.iter().map(|x| format!("0x{x:x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

/// Upstream's `validateCSR`: the first PEM block is a CERTIFICATE REQUEST that parses and
/// whose signature verifies with its own public key.
fn check_request(pem_bytes: &[u8]) -> Result<(), String> {
    let block = pem_blocks(pem_bytes).into_iter().next();
    let Some(block) = block.filter(|b| b.label == "CERTIFICATE REQUEST") else {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    };
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .map_err(|_| "x509: malformed certificate request".to_string())?;
    csr.verify_signature().map_err(|_| {
        let alg = csr
            .certification_request_info
            .subject_pki
            .algorithm
            .algorithm
            .to_id_string();
        // Go's crypto errors for the two key types clients use
        if alg.starts_with("1.2.840.10045") {
            "x509: ECDSA verification failure".to_string()
        } else {
            "crypto/rsa: verification error".to_string()
        }
    })?;
    Ok(())
}

/// The PEM blocks of `data`, as Go's repeated `pem.Decode` finds them (text between blocks
/// skipped).
fn pem_blocks(data: &[u8]) -> Vec<x509_parser::pem::Pem> {
    x509_parser::pem::Pem::iter_from_buffer(data)
        .map_while(Result::ok)
        .collect()
}

/// Upstream's `validateCertificate` of `status.certificate`.
fn check_certificate(pem_bytes: &[u8]) -> Result<(), String> {
    if pem_bytes.is_empty() {
        return Ok(());
    }
    let blocks = pem_blocks(pem_bytes);
    if blocks.is_empty() {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    for b in blocks {
        if b.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                goformat::quote(&b.label)
            ));
        }
        if x509_parser::parse_x509_certificate(&b.contents).is_err() {
            return Err("x509: malformed certificate".into());
        }
    }
    Ok(())
}

fn certificate_bytes(obj: &Object) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(str_at(obj, &["status", "certificate"]))
        .unwrap_or_default()
}

fn strings_at<'a>(obj: &'a Object, path: &[&str]) -> Vec<&'a str> {
    at(obj, path)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

fn conditions(obj: &Object) -> Vec<&Value> {
    at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn conditions_of<'a>(obj: &'a Object, t: &str) -> Vec<&'a Value> {
    conditions(obj)
        .into_iter()
        .filter(|c| condition_type(c) == t)
        .collect()
}

/// `ValidateSignerName` (`pkg/apis/core/validation`).
fn validate_signer_name(errs: &mut Vec<FieldError>, name: &str) {
    const F: &str = "spec.signerName";
    if name.is_empty() {
        errs.push(FieldError::required(F, ""));
        return;
    }
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() != 2 {
        errs.push(FieldError::invalid(
            F,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    }
    let [domain, path, ..] = segments.as_slice() else {
        return;
    };
    let (domain, path) = (*domain, *path);
    if domain.len() > 253 {
        errs.push(FieldError::too_long(F, "must have at most 253 bytes"));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        let label_errs = is_dns1123_label(label);
        if !label_errs.is_empty() {
            for e in label_errs {
                errs.push(FieldError::invalid(
                    F,
                    domain,
                    format!("validating label {}: {e}", goformat::quote(label)),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            F,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for e in is_dns1123_subdomain(path) {
        errs.push(FieldError::invalid(F, path, e));
    }
}

/// `validateCertificateSigningRequest` with the compatibility allowances upstream derives
/// from the stored object (`getValidationOptions`).
fn validate_csr(obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let request = request_bytes(obj);
    if let Err(e) = check_request(&request) {
        errs.push(FieldError::invalid(
            "spec.request",
            BadValue::Go(go_bytes(&request)),
            e,
        ));
    }
    let usages = strings_at(obj, &["spec", "usages"]);
    if usages.is_empty() {
        errs.push(FieldError::required("spec.usages", ""));
    }
    let old_usages = old.map(|o| strings_at(o, &["spec", "usages"]));
    let allow_unknown = old_usages
        .as_ref()
        .is_some_and(|u| u.iter().any(|x| !USAGES.contains(x)));
    if !allow_unknown {
        for (i, u) in usages.iter().enumerate() {
            if !USAGES.contains(u) {
                errs.push(FieldError::not_supported(
                    format!("spec.usages[{i}]"),
                    *u,
                    USAGES,
                ));
            }
        }
    }
    let has_duplicates = |u: &[&str]| {
        u.iter()
            .enumerate()
            .any(|(i, x)| u.iter().take(i).any(|y| y == x))
    };
    if !old_usages.as_deref().is_some_and(has_duplicates) {
        for (i, u) in usages.iter().enumerate() {
            if usages.iter().take(i).any(|x| x == u) {
                errs.push(FieldError::duplicate(format!("spec.usages[{i}]"), *u));
            }
        }
    }
    let signer = str_at(obj, &["spec", "signerName"]);
    let old_legacy =
        old.is_some_and(|o| str_at(o, &["spec", "signerName"]) == LEGACY_UNKNOWN_SIGNER);
    if signer == LEGACY_UNKNOWN_SIGNER && !old_legacy {
        errs.push(FieldError::invalid(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        validate_signer_name(&mut errs, signer);
    }
    if let Some(secs) = at(obj, &["spec", "expirationSeconds"]).and_then(Value::as_i64) {
        if secs < 600 {
            errs.push(FieldError::invalid(
                "spec.expirationSeconds",
                secs,
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    validate_conditions(&mut errs, obj, old);
    let tolerate_certificate = old.is_some_and(|o| {
        certificate_bytes(o) == certificate_bytes(obj)
            || check_certificate(&certificate_bytes(o)).is_err()
    });
    if !tolerate_certificate {
        if let Err(e) = check_certificate(&certificate_bytes(obj)) {
            errs.push(FieldError::invalid(
                "status.certificate",
                "<certificate data>",
                e,
            ));
        }
    }
    errs
}

/// `validateConditions`: types set and not repeated, statuses True/False/Unknown (True only
/// for Approved, Denied, Failed), Approved and Denied exclusive.
fn validate_conditions(errs: &mut Vec<FieldError>, obj: &Object, old: Option<&Object>) {
    let old_conds = old.map(conditions).unwrap_or_default();
    let old_types: Vec<&str> = old_conds.iter().map(|c| condition_type(c)).collect();
    let allow_both = old_types.contains(&"Approved") && old_types.contains(&"Denied");
    let allow_duplicates = old_types
        .iter()
        .enumerate()
        .any(|(i, t)| old_types.iter().take(i).any(|x| x == t));
    let allow_empty = old_types.contains(&"");
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions(obj).into_iter().enumerate() {
        let p = format!("status.conditions[{i}]");
        let t = condition_type(c);
        if t.is_empty() && !allow_empty {
            errs.push(FieldError::required(format!("{p}.type"), ""));
        }
        let allowed: &[&str] = if matches!(t, "Approved" | "Denied" | "Failed") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        match c.get("status").and_then(Value::as_str).unwrap_or_default() {
            "" => errs.push(FieldError::required(format!("{p}.status"), "")),
            s if !allowed.contains(&s) => {
                errs.push(FieldError::not_supported(format!("{p}.status"), s, allowed))
            }
            _ => {}
        }
        if !allow_both {
            let exclusive = match t {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                errs.push(FieldError::invalid(
                    format!("{p}.type"),
                    t,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !allow_duplicates && seen.contains(&t) {
            errs.push(FieldError::duplicate(format!("{p}.type"), t));
        }
        seen.push(t);
    }
}

/// `validateCertificateSigningRequestUpdate` for the path the update came through.
fn validate_csr_update(new: &Object, old: &Object, path: UpdatePath) -> Vec<FieldError> {
    let mut errs = validate_csr(new, Some(old));
    for t in ["Approved", "Denied", "Failed"] {
        if conditions_of(new, t).len() < conditions_of(old, t).len() {
            errs.push(FieldError::forbidden(
                "status.conditions",
                format!(
                    "updates may not remove a condition of type {}",
                    goformat::quote(t)
                ),
            ));
        }
    }
    if path != UpdatePath::Approval {
        for t in ["Approved", "Denied"] {
            let (n, o) = (conditions_of(new, t), conditions_of(old, t));
            if n.len() > o.len() {
                errs.push(FieldError::forbidden(
                    "status.conditions",
                    format!(
                        "updates may not add a condition of type {}",
                        goformat::quote(t)
                    ),
                ));
            } else if n.len() == o.len() && n != o {
                errs.push(FieldError::forbidden(
                    "status.conditions",
                    format!(
                        "updates may not modify a condition of type {}",
                        goformat::quote(t)
                    ),
                ));
            }
        }
    }
    let (new_cert, old_cert) = (certificate_bytes(new), certificate_bytes(old));
    if new_cert != old_cert {
        if path != UpdatePath::Status {
            errs.push(FieldError::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_cert.is_empty() {
            errs.push(FieldError::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    errs
}

/// The main CSR storage: the Store, with upstream's `PrepareForCreate` step that needs the
/// request's user (username, uid, groups, extra replace whatever the body said).
pub struct CsrStore(Store);

impl CsrStore {
    fn with_requester(ctx: &Context, mut obj: Object) -> Object {
        let spec = obj_mut(&mut obj, &["spec"]);
        for key in ["username", "uid", "groups", "extra"] {
            spec.remove(key);
        }
        spec.extend(ctx.user.to_json_fields());
        obj
    }
}

#[async_trait]
impl Creater for CsrStore {
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        Creater::create(&self.0, ctx, Self::with_requester(ctx, obj), validate, opts).await
    }
}

impl Storage for CsrStore {
    fn info(&self) -> &ResourceInfo {
        Storage::info(&self.0)
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        Storage::decode(&self.0, body, validation)
    }
    fn as_creater(&self) -> Option<&dyn Creater> {
        Some(self)
    }
    fn as_getter(&self) -> Option<&dyn Getter> {
        self.0.as_getter()
    }
    fn as_lister(&self) -> Option<&dyn rest::Lister> {
        self.0.as_lister()
    }
    fn as_updater(&self) -> Option<&dyn Updater> {
        self.0.as_updater()
    }
    fn as_patcher(&self) -> Option<&dyn Updater> {
        self.0.as_patcher()
    }
    fn as_graceful_deleter(&self) -> Option<&dyn rest::GracefulDeleter> {
        self.0.as_graceful_deleter()
    }
    fn as_collection_deleter(&self) -> Option<&dyn rest::CollectionDeleter> {
        self.0.as_collection_deleter()
    }
    fn as_watcher(&self) -> Option<&dyn rest::Watcher> {
        self.0.as_watcher()
    }
    fn as_table_convertor(&self) -> Option<&dyn rest::TableConvertor> {
        self.0.as_table_convertor()
    }
    fn field_labels(&self) -> &[&'static str] {
        self.0.field_labels()
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Storage::openapi_schema(&self.0, generator)
    }
    fn decode_bytes(&self, body: &[u8], validation: FieldValidation) -> Decoded {
        self.0.decode_bytes(body, validation)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.0.as_any()
    }
}

/// `/approval`: a status-scoped Store of [`CsrApprovalStrategy`] served under its own name.
pub struct ApprovalStore {
    info: ResourceInfo,
    store: Store,
}

impl ApprovalStore {
    fn new(store: Store) -> Self {
        let mut info = Storage::info(&store).clone();
        info.subresource = "approval".into();
        Self { info, store }
    }
}

impl Storage for ApprovalStore {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        Storage::decode(&self.store, body, validation)
    }
    fn as_getter(&self) -> Option<&dyn Getter> {
        self.store.as_getter()
    }
    fn as_updater(&self) -> Option<&dyn Updater> {
        self.store.as_updater()
    }
    fn as_patcher(&self) -> Option<&dyn Updater> {
        self.store.as_patcher()
    }
    fn as_table_convertor(&self) -> Option<&dyn rest::TableConvertor> {
        self.store.as_table_convertor()
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Storage::openapi_schema(&self.store, generator)
    }
    fn decode_bytes(&self, body: &[u8], validation: FieldValidation) -> Decoded {
        self.store.decode_bytes(body, validation)
    }
}

#[cfg(test)]
#[path = "certificates_tests.rs"]
mod tests;
