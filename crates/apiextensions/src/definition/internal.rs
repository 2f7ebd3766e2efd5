//! The internal form upstream validates a v1 CRD in (`Convert_v1_CustomResourceDefinitionSpec_To_
//! apiextensions_CustomResourceDefinitionSpec`): per-version schemas, subresources, printer
//! columns and selectable fields that are identical in every version (a single version
//! included) move to the top level, so their errors are reported under `spec.validation`,
//! `spec.subresources`, `spec.additionalPrinterColumns` and `spec.selectableFields`; the
//! webhook conversion's fields sit under `spec.conversion.webhookClientConfig` and
//! `spec.conversion.conversionReviewVersions`.

use serde_json::{Map, Value};

/// A value that is absent, null, or an empty list or map: Go's nil (semantic equality treats
/// nil and empty alike).
pub fn is_nil(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

fn non_nil(v: Option<&Value>) -> Option<&Value> {
    (!is_nil(v)).then_some(v).flatten()
}

/// One version in the internal form: the per-version fields stay only when they differ.
pub struct Version<'a> {
    pub raw: &'a Map<String, Value>,
    pub schema: Option<&'a Value>,
    pub subresources: Option<&'a Value>,
    pub columns: Option<&'a Value>,
    pub selectable_fields: Option<&'a Value>,
}

impl Version<'_> {
    pub fn name(&self) -> &str {
        self.raw
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
    pub fn storage(&self) -> bool {
        self.raw.get("storage").and_then(Value::as_bool) == Some(true)
    }
    pub fn served(&self) -> bool {
        self.raw.get("served").and_then(Value::as_bool) == Some(true)
    }
}

/// A v1 spec seen as upstream's internal spec.
pub struct Spec<'a> {
    pub raw: &'a Map<String, Value>,
    pub versions: Vec<Version<'a>>,
    /// `spec.version`: the first version's name.
    pub version: &'a str,
    pub validation: Option<&'a Value>,
    pub subresources: Option<&'a Value>,
    pub columns: Option<&'a Value>,
    pub selectable_fields: Option<&'a Value>,
}

fn all_same<'a>(vs: &[&'a Map<String, Value>], key: &str) -> (bool, Option<&'a Value>) {
    let first = vs.first().and_then(|v| non_nil(v.get(key)));
    let same = vs.iter().all(|v| non_nil(v.get(key)) == first);
    (same, first)
}

impl<'a> Spec<'a> {
    pub fn new(raw: &'a Map<String, Value>) -> Self {
        let vs: Vec<&Map<String, Value>> = raw
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .collect();
        let hoist = !vs.is_empty();
        let (sub_same, sub) = all_same(&vs, "subresources");
        let (val_same, val) = all_same(&vs, "schema");
        let (col_same, col) = all_same(&vs, "additionalPrinterColumns");
        let (sel_same, sel) = all_same(&vs, "selectableFields");
        let (sub_same, val_same, col_same) =
            (hoist && sub_same, hoist && val_same, hoist && col_same);
        let sel_same = val_same && sel_same;
        let versions = vs
            .iter()
            .map(|v| Version {
                raw: v,
                schema: if val_same {
                    None
                } else {
                    non_nil(v.get("schema"))
                },
                subresources: if sub_same {
                    None
                } else {
                    non_nil(v.get("subresources"))
                },
                columns: if col_same {
                    None
                } else {
                    non_nil(v.get("additionalPrinterColumns"))
                },
                selectable_fields: if sel_same {
                    None
                } else {
                    non_nil(v.get("selectableFields"))
                },
            })
            .collect();
        Spec {
            raw,
            versions,
            version: vs
                .first()
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default(),
            validation: if val_same { val } else { None },
            subresources: if sub_same { sub } else { None },
            columns: if col_same { col } else { None },
            selectable_fields: if sel_same { sel } else { None },
        }
    }

    pub fn str(&self, key: &str) -> &str {
        self.raw
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn names(&self) -> Option<&'a Value> {
        self.raw.get("names")
    }

    pub fn preserve_unknown_fields(&self) -> bool {
        self.raw
            .get("preserveUnknownFields")
            .and_then(Value::as_bool)
            == Some(true)
    }

    pub fn conversion(&self) -> Option<&'a Value> {
        non_nil(self.raw.get("conversion"))
    }

    /// The webhook conversion's client config (`webhookClientConfig` internally).
    pub fn webhook_client_config(&self) -> Option<&'a Value> {
        non_nil(
            self.conversion()
                .and_then(|c| c.get("webhook"))
                .and_then(|w| w.get("clientConfig")),
        )
    }

    /// `conversionReviewVersions` (internally a field of the conversion).
    pub fn conversion_review_versions(&self) -> Vec<&'a str> {
        self.conversion()
            .and_then(|c| c.get("webhook"))
            .and_then(|w| w.get("conversionReviewVersions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or_default())
            .collect()
    }

    /// The subresources that apply to a version (`getSubresourcesForVersion`).
    pub fn subresources_for(&self, v: &Version<'a>) -> Option<&'a Value> {
        if self.versions.iter().any(|v| v.subresources.is_some()) {
            v.subresources
        } else {
            self.subresources
        }
    }

    /// Every `openAPIV3Schema` of the spec (top-level first).
    pub fn schemas(&self) -> Vec<&'a Value> {
        std::iter::once(self.validation)
            .chain(self.versions.iter().map(|v| v.schema))
            .flatten()
            .filter_map(|s| s.get("openAPIV3Schema"))
            .filter(|s| !s.is_null())
            .collect()
    }
}

/// Whether subresources enable `/status`.
pub fn has_status(subresources: Option<&Value>) -> bool {
    subresources
        .and_then(|s| s.get("status"))
        .is_some_and(|s| !s.is_null())
}
