//! A parsed `Accept` header, ordered the way kube-apiserver's negotiation (goautoneg) orders
//! it: by `q` descending, then concrete types before wildcards, otherwise in header order.

/// One media range of an `Accept` header, e.g. `application/json;g=meta.k8s.io;v=v1;as=Table`.
#[derive(Clone, Debug, PartialEq)]
pub struct AcceptClause {
    pub media_type: String,
    pub sub_type: String,
    pub q: f32,
    /// Parameters other than `q`, in header order.
    pub params: Vec<(String, String)>,
}

impl AcceptClause {
    /// The value of parameter `name`, if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this clause admits `type/subtype` (exactly, `type/*` or `*/*`).
    pub fn matches(&self, media_type: &str, sub_type: &str) -> bool {
        (self.media_type == media_type || self.media_type == "*")
            && (self.sub_type == sub_type || self.sub_type == "*")
    }
}

/// Parses an `Accept` header value. An absent or empty header is `*/*`, as upstream treats it.
pub fn parse_accept(header: Option<&str>) -> Vec<AcceptClause> {
    let header = match header.map(str::trim) {
        Some(h) if !h.is_empty() => h,
        _ => "*/*",
    };
    let mut clauses: Vec<AcceptClause> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let range = pieces.next()?.trim();
            if range.is_empty() {
                return None;
            }
            let (media_type, sub_type) = match range.split_once('/') {
                Some((t, s)) => (t.trim().to_string(), s.trim().to_string()),
                None => (range.to_string(), "*".to_string()),
            };
            let mut q = 1.0f32;
            let mut params = Vec::new();
            for param in pieces {
                let Some((k, v)) = param.split_once('=') else {
                    continue;
                };
                let (k, v) = (k.trim(), v.trim());
                if k == "q" {
                    q = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k.to_string(), v.to_string()));
                }
            }
            Some(AcceptClause {
                media_type,
                sub_type,
                q,
                params,
            })
        })
        .collect();
    // Stable, so equal clauses keep header order.
    clauses.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then((a.media_type == "*").cmp(&(b.media_type == "*")))
            .then((a.sub_type == "*").cmp(&(b.sub_type == "*")))
    });
    clauses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_quality_then_specificity() {
        let c = parse_accept(Some(
            "*/*;q=0.5, application/*, application/json;as=Table;g=meta.k8s.io",
        ));
        let order: Vec<String> = c
            .iter()
            .map(|c| format!("{}/{}", c.media_type, c.sub_type))
            .collect();
        assert_eq!(order, ["application/json", "application/*", "*/*"]);
        assert_eq!(c[0].param("as"), Some("Table"));
        assert_eq!(c[2].q, 0.5);
    }

    #[test]
    fn empty_header_is_anything() {
        let c = parse_accept(None);
        assert_eq!(c.len(), 1);
        assert!(c[0].matches("application", "json"));
        assert_eq!(parse_accept(Some("  ")), c);
    }
}
