//! Label selectors, label maps and container lists as the printers render them; the
//! `fn(&[&Value]) -> Value` forms are cells of the field their column's path reaches.

use crate::fields::{arr_at, join_map, obj_at, str_at, string_map_at};
use serde_json::{json, Value};

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key,
/// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; empty for a nil or empty selector.
pub fn selector_string(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return String::new();
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    for (k, v) in obj_at(sel, &["matchLabels"]) {
        reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
    }
    for e in arr_at(sel, &["matchExpressions"]) {
        let key = str_at(e, &["key"]);
        let mut values: Vec<&str> = arr_at(e, &["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match str_at(e, &["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when it selects everything.
pub fn format_label_selector(sel: Option<&Value>) -> String {
    let s = selector_string(sel);
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}

/// The cell of a `*LabelSelector` field: [`format_label_selector`].
pub fn label_selector(selector: &[&Value]) -> Value {
    json!(format_label_selector(selector.first().copied()))
}

/// The cell of a selector printed bare (deployments): [`selector_string`].
pub fn bare_selector(selector: &[&Value]) -> Value {
    json!(selector_string(selector.first().copied()))
}

/// `labels.FormatLabels` of a `map[string]string` field: `k=v,...` sorted by key, `<none>`
/// when empty.
pub fn labels(map: &[&Value]) -> Value {
    let pairs = map
        .first()
        .map(|m| string_map_at(m, &[]))
        .unwrap_or_default();
    json!(if pairs.is_empty() {
        "<none>".to_string()
    } else {
        join_map(&pairs)
    })
}

/// `layoutContainerCells`: container names and images, comma separated.
pub fn layout_containers(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec.map_or(&[][..], |s| arr_at(s, &["containers"]));
    let names = containers
        .iter()
        .map(|c| str_at(c, &["name"]))
        .collect::<Vec<_>>()
        .join(",");
    let images = containers
        .iter()
        .map(|c| str_at(c, &["image"]))
        .collect::<Vec<_>>()
        .join(",");
    (names, images)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        let sel = json!({"matchLabels": {"tier": "fe", "app": "web"},
                         "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                              {"key": "zz", "operator": "DoesNotExist"},
                                              {"key": "canary", "operator": "Exists"}]});
        assert_eq!(
            selector_string(Some(&sel)),
            "app=web,canary,env in (dev,prod),tier=fe,!zz"
        );
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(selector_string(None), "");
    }
}
