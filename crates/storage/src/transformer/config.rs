//! Reading upstream's `--encryption-provider-config` file: an `EncryptionConfiguration`
//! (`apiserver.config.k8s.io/v1`) naming, per list of resources, providers in order: the first
//! encrypts new writes, every one is tried on reads (by its stored prefix).

use super::ciphers::Cipher;
use super::{Chain, Prefixed, Rule, Selector, Transformers};
use base64::Engine;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EncryptionConfiguration {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Deserialize)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Deserialize)]
struct ProviderConfiguration {
    aescbc: Option<Keys>,
    aesgcm: Option<Keys>,
    secretbox: Option<Keys>,
    identity: Option<serde_json::Value>,
    kms: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Keys {
    #[serde(default)]
    keys: Vec<Key>,
}

#[derive(Deserialize)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// The prefix upstream writes before a value a provider encrypted with a key.
pub(crate) fn stored_prefix(provider: &str, key_name: &str) -> Vec<u8> {
    format!("k8s:enc:{provider}:v1:{key_name}:").into_bytes()
}

/// Parses and checks a configuration (YAML or JSON); every problem at once.
pub(super) fn parse(text: &str) -> Result<Transformers, String> {
    let cfg: EncryptionConfiguration = serde_saphyr::from_str(text)
        .map_err(|e| format!("error decoding encryption provider configuration: {e}"))?;
    let mut errors = Vec::new();
    if cfg.kind != "EncryptionConfiguration" || cfg.api_version != "apiserver.config.k8s.io/v1" {
        errors.push(format!(
            "want kind EncryptionConfiguration of apiVersion apiserver.config.k8s.io/v1, got {:?} of {:?}",
            cfg.kind, cfg.api_version
        ));
    }
    if cfg.resources.is_empty() {
        errors.push("resources: Required value: resources must be provided".into());
    }
    let mut rules = Vec::new();
    for (i, rc) in cfg.resources.iter().enumerate() {
        let path = format!("resources[{i}]");
        if rc.resources.is_empty() {
            errors.push(format!(
                "{path}.resources: Required value: resources must be provided"
            ));
        }
        if rc.providers.is_empty() {
            errors.push(format!(
                "{path}.providers: Required value: providers must be provided"
            ));
        }
        let mut entries = Vec::new();
        for (j, p) in rc.providers.iter().enumerate() {
            let ppath = format!("{path}.providers[{j}]");
            let set = [
                p.aescbc.is_some(),
                p.aesgcm.is_some(),
                p.secretbox.is_some(),
                p.identity.is_some(),
                p.kms.is_some(),
            ]
            .iter()
            .filter(|s| **s)
            .count();
            if set != 1 {
                errors.push(format!(
                    "{ppath}: Invalid value: exactly one provider must be configured per item, found {set}"
                ));
                continue;
            }
            if p.kms.is_some() {
                errors.push(format!("{ppath}.kms: Unsupported value: KMS providers are not supported (use aescbc, aesgcm, secretbox or identity)"));
                continue;
            }
            if p.identity.is_some() {
                entries.push(Prefixed {
                    prefix: Vec::new(),
                    cipher: None,
                });
                continue;
            }
            let (name, keys) = match (&p.aescbc, &p.aesgcm, &p.secretbox) {
                (Some(k), _, _) => ("aescbc", k),
                (_, Some(k), _) => ("aesgcm", k),
                (_, _, Some(k)) => ("secretbox", k),
                _ => continue,
            };
            if keys.keys.is_empty() {
                errors.push(format!(
                    "{ppath}.{name}.keys: Required value: keys must be provided"
                ));
            }
            for (k, key) in keys.keys.iter().enumerate() {
                let kpath = format!("{ppath}.{name}.keys[{k}]");
                if key.name.is_empty() {
                    errors.push(format!(
                        "{kpath}.name: Required value: key name must be provided"
                    ));
                } else if key.name.contains(':') {
                    errors.push(format!(
                        "{kpath}.name: Invalid value: {:?}: should not contain ':'",
                        key.name
                    ));
                }
                let secret = match base64::engine::general_purpose::STANDARD
                    .decode(key.secret.trim())
                {
                    Ok(s) => s,
                    Err(e) => {
                        errors.push(format!("{kpath}.secret: Invalid value: REDACTED: secrets must be base64 encoded: {e}"));
                        continue;
                    }
                };
                match Cipher::new(name, secret) {
                    Ok(cipher) => entries.push(Prefixed {
                        prefix: stored_prefix(name, &key.name),
                        cipher: Some(cipher),
                    }),
                    Err(e) => errors.push(format!("{kpath}.secret: Invalid value: REDACTED: {e}")),
                }
            }
        }
        let chain = Arc::new(Chain { entries });
        for r in &rc.resources {
            match selector(r) {
                Ok(selector) => rules.push(Rule {
                    selector,
                    chain: chain.clone(),
                }),
                Err(e) => errors.push(format!("{path}.resources: Invalid value: {r:?}: {e}")),
            }
        }
    }
    if errors.is_empty() {
        Ok(Transformers { rules })
    } else {
        Err(errors.join("; "))
    }
}

fn selector(r: &str) -> Result<Selector, String> {
    if r == "*.*" {
        return Ok(Selector::All);
    }
    let (resource, group) = r.split_once('.').unwrap_or((r, ""));
    if resource == "*" {
        return Err(
            "only the wildcard *.* is supported; name the resources of a group one by one".into(),
        );
    }
    if resource.is_empty() || resource.contains('/') || r != r.to_lowercase() {
        return Err(
            "resource name must be a lowercase plural, optionally with its group (resource.group)"
                .into(),
        );
    }
    Ok(Selector::Resource {
        resource: resource.to_string(),
        group: group.to_string(),
    })
}
