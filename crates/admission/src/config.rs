//! `--admission-control-config-file`: an `AdmissionConfiguration`
//! (`apiserver.config.k8s.io/v1`, YAML or JSON) giving each plugin's configuration inline
//! (`configuration`) or by `path`, relative to the file.

use crate::AdmissionError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionConfiguration {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    plugins: Vec<PluginEntry>,
}

#[derive(Deserialize)]
struct PluginEntry {
    name: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    configuration: Option<serde_json::Value>,
}

const API_VERSIONS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.k8s.io/v1alpha1",
];

/// Each configured plugin's configuration bytes, by plugin name.
#[derive(Clone, Debug, Default)]
pub struct PluginConfigs(BTreeMap<String, Vec<u8>>);

impl PluginConfigs {
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(Vec::as_slice)
    }

    /// Reads and checks the file; errors name the file and the reason.
    pub fn load(path: &Path) -> Result<Self, AdmissionError> {
        let err = |reason: String| AdmissionError::ConfigFile {
            path: path.display().to_string(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&bytes, &base).map_err(err)
    }

    /// Parses file contents; `path` entries are resolved against `base`.
    pub fn parse(bytes: &[u8], base: &Path) -> Result<Self, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let cfg: AdmissionConfiguration =
            serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if cfg.kind.as_deref() != Some("AdmissionConfiguration") {
            return Err(format!(
                "kind {:?} is not AdmissionConfiguration",
                cfg.kind.unwrap_or_default()
            ));
        }
        let version = cfg.api_version.unwrap_or_default();
        if !API_VERSIONS.contains(&version.as_str()) {
            return Err(format!("unsupported apiVersion {version:?}"));
        }
        let mut out = BTreeMap::new();
        for p in cfg.plugins {
            if out.contains_key(&p.name) {
                return Err(format!("plugin {:?} is configured twice", p.name));
            }
            let bytes = match (p.path, p.configuration) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "plugin {:?}: only one of path and configuration may be set",
                        p.name
                    ))
                }
                (Some(rel), None) => {
                    let full: PathBuf = if Path::new(&rel).is_absolute() {
                        PathBuf::from(&rel)
                    } else {
                        base.join(&rel)
                    };
                    std::fs::read(&full).map_err(|e| {
                        format!("plugin {:?}: reading {}: {e}", p.name, full.display())
                    })?
                }
                (None, Some(v)) => serde_json::to_vec(&v).map_err(|e| e.to_string())?,
                (None, None) => continue,
            };
            out.insert(p.name, bytes);
        }
        Ok(Self(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_path_configurations() {
        let dir = std::env::temp_dir().join(format!("kapi-admcfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("erl.yaml"), "kind: Configuration\nlimits: []\n").unwrap();
        let file = dir.join("admission.yaml");
        std::fs::write(
            &file,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: erl.yaml\n- name: PodNodeSelector\n  configuration:\n    podNodeSelectorPluginConfig:\n      clusterDefaultNodeSelector: a=b\n",
        )
        .unwrap();
        let c = PluginConfigs::load(&file).unwrap();
        assert_eq!(
            c.get("EventRateLimit").unwrap(),
            b"kind: Configuration\nlimits: []\n"
        );
        let v: serde_json::Value =
            serde_json::from_slice(c.get("PodNodeSelector").unwrap()).unwrap();
        assert_eq!(
            v["podNodeSelectorPluginConfig"]["clusterDefaultNodeSelector"],
            "a=b"
        );
        assert!(c.get("LimitRanger").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_name_file_and_reason() {
        let e = PluginConfigs::load(Path::new("/nonexistent/adm.yaml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/adm.yaml"), "{e}");
        let e = PluginConfigs::parse(
            b"{\"kind\":\"Other\",\"apiVersion\":\"v1\"}",
            Path::new("."),
        )
        .unwrap_err();
        assert!(e.contains("AdmissionConfiguration"), "{e}");
        let e = PluginConfigs::parse(
            b"{\"kind\":\"AdmissionConfiguration\",\"apiVersion\":\"apiserver.config.k8s.io/v1\",\"plugins\":[{\"name\":\"X\",\"path\":\"missing.yaml\"}]}",
            Path::new("/nonexistent"),
        )
        .unwrap_err();
        assert!(e.contains("missing.yaml"), "{e}");
    }
}
