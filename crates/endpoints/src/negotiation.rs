//! Content negotiation: which encoding a response is written in (`Accept`) and which a request
//! body is read in (`Content-Type`), following `k8s.io/apiserver/pkg/endpoints/handlers/negotiation`.
//!
//! kapi serves JSON and YAML, and on resource endpoints the `meta.k8s.io` transforms
//! `as=Table`, `as=PartialObjectMetadata` and `as=PartialObjectMetadataList` (v1 and v1beta1).
//! Protobuf is served for built-in kinds (`negotiate_output_for`/`negotiate_input_for` with
//! `protobuf`); elsewhere an Accept listing protobuf first falls through to the next entry,
//! as upstream does for any media type it cannot produce.

use kapi_machinery::ApiError;

/// The media types kapi can write and read (for 406/415 messages).
pub const SUPPORTED_MEDIA_TYPES: &[&str] = &["application/json", "application/yaml"];
/// The media types of kinds with a protobuf form.
pub const SUPPORTED_MEDIA_TYPES_PROTOBUF: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
/// The encoding of watch streams of kinds without a protobuf form.
pub const SUPPORTED_STREAM_MEDIA_TYPES: &[&str] = &["application/json"];
/// The encodings of watch streams of kinds with a protobuf form.
pub const SUPPORTED_STREAM_MEDIA_TYPES_PROTOBUF: &[&str] =
    &["application/json", "application/vnd.kubernetes.protobuf"];
/// The patch content types of built-in kinds, in upstream's installer order (the order its 415
/// message lists them in).
pub const SUPPORTED_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
/// The patch content types of kinds without strategic-merge metadata (custom resources), as
/// upstream's custom resource handler lists them.
pub const SUPPORTED_PATCH_TYPES_UNSTRUCTURED: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// A response encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Yaml,
    Protobuf,
}

impl Encoding {
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Yaml => "application/yaml",
            Encoding::Protobuf => crate::protobuf::MEDIA_TYPE,
        }
    }
}

/// `meta.k8s.io` version of a transform target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaVersion {
    V1,
    V1beta1,
}

impl MetaVersion {
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            MetaVersion::V1 => "v1",
            MetaVersion::V1beta1 => "v1beta1",
        }
    }
}

/// A server-side conversion requested through `Accept` parameters (`as`, `g`, `v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    Table(MetaVersion),
    PartialObjectMetadata(MetaVersion),
    PartialObjectMetadataList(MetaVersion),
}

/// The outcome of negotiating `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputMediaType {
    pub encoding: Encoding,
    pub transform: Option<Transform>,
    /// `pretty=1` in the accepted media type.
    pub pretty: bool,
}

impl Default for OutputMediaType {
    fn default() -> Self {
        Self {
            encoding: Encoding::Json,
            transform: None,
            pretty: false,
        }
    }
}

/// One entry of an `Accept` header.
#[derive(Clone, Debug, PartialEq)]
struct MediaRange {
    kind: String,
    subtype: String,
    params: Vec<(String, String)>,
    q: f32,
}

fn parse_accept(header: &str) -> Vec<MediaRange> {
    let mut out = Vec::new();
    for clause in header.split(',') {
        let mut pieces = clause.split(';');
        let media = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        if media.is_empty() {
            continue;
        }
        let (kind, subtype) = match media.split_once('/') {
            Some((t, s)) => (t.trim().to_string(), s.trim().to_string()),
            // A bare `*` is how some clients write `*/*`.
            None if media == "*" => ("*".to_string(), "*".to_string()),
            None => continue,
        };
        let mut params = Vec::new();
        let mut q = 1.0f32;
        for p in pieces {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim().trim_matches('"').to_string();
            if k == "q" {
                q = v.parse().unwrap_or(0.0);
            } else {
                params.push((k, v));
            }
        }
        out.push(MediaRange {
            kind,
            subtype,
            params,
            q,
        });
    }
    // Highest q first; equal q keeps the client's order (upstream's goautoneg is stable too).
    out.sort_by(|a, b| b.q.partial_cmp(&a.q).unwrap_or(std::cmp::Ordering::Equal));
    out.retain(|m| m.q > 0.0);
    out
}

fn match_encoding(m: &MediaRange, stream: bool, protobuf: bool) -> Option<Encoding> {
    match (m.kind.as_str(), m.subtype.as_str()) {
        ("*", "*") | ("application", "*") | ("application", "json") => Some(Encoding::Json),
        ("application", "yaml") if !stream => Some(Encoding::Yaml),
        ("application", "vnd.kubernetes.protobuf") if protobuf => Some(Encoding::Protobuf),
        _ => None,
    }
}

fn transform_of(as_kind: &str, group: &str, version: &str) -> Option<Transform> {
    if group != "meta.k8s.io" {
        return None;
    }
    let v = match version {
        "v1" => MetaVersion::V1,
        "v1beta1" => MetaVersion::V1beta1,
        _ => return None,
    };
    match as_kind {
        "Table" => Some(Transform::Table(v)),
        "PartialObjectMetadata" => Some(Transform::PartialObjectMetadata(v)),
        "PartialObjectMetadataList" => Some(Transform::PartialObjectMetadataList(v)),
        _ => None,
    }
}

/// Picks the response encoding for `accept` (absent or empty means JSON). `allow_transform` is
/// true on resource endpoints; `stream` for watches (no YAML). 406 when nothing fits.
pub fn negotiate_output(
    accept: Option<&str>,
    allow_transform: bool,
    stream: bool,
) -> Result<OutputMediaType, ApiError> {
    negotiate_output_for(accept, allow_transform, stream, false)
}

/// [`negotiate_output`] for a kind that has a protobuf form when `protobuf` (transforms stay JSON).
pub fn negotiate_output_for(
    accept: Option<&str>,
    allow_transform: bool,
    stream: bool,
    protobuf: bool,
) -> Result<OutputMediaType, ApiError> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(OutputMediaType::default());
    }
    for m in parse_accept(header) {
        let Some(encoding) = match_encoding(&m, stream, protobuf) else {
            continue;
        };
        let mut out = OutputMediaType {
            encoding,
            transform: None,
            pretty: false,
        };
        let (mut as_kind, mut group, mut version) = (None, "", "");
        let mut acceptable = true;
        for (k, v) in &m.params {
            match k.as_str() {
                "as" => as_kind = Some(v.as_str()),
                "g" => group = v.as_str(),
                "v" => version = v.as_str(),
                "pretty" => out.pretty = v == "1",
                "stream" => acceptable &= stream && v == "watch",
                // Parameters upstream understands but kapi has nothing to do for.
                "charset" | "sv" | "export" => {}
                _ => acceptable = false,
            }
        }
        if let Some(kind) = as_kind {
            match transform_of(kind, group, version) {
                Some(t) if allow_transform && encoding != Encoding::Protobuf => {
                    out.transform = Some(t)
                }
                _ => acceptable = false,
            }
        }
        if acceptable {
            return Ok(out);
        }
    }
    Err(ApiError::not_acceptable(match (stream, protobuf) {
        (true, true) => SUPPORTED_STREAM_MEDIA_TYPES_PROTOBUF,
        (true, false) => SUPPORTED_STREAM_MEDIA_TYPES,
        (false, true) => SUPPORTED_MEDIA_TYPES_PROTOBUF,
        (false, false) => SUPPORTED_MEDIA_TYPES,
    }))
}

/// How a request body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    Json,
    Yaml,
    Protobuf,
}

/// The media type of a `Content-Type` value, without parameters, lowercased.
pub fn media_type_of(content_type: Option<&str>) -> String {
    let ct = content_type.unwrap_or("");
    ct.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The format of a create/update body (upstream's `NegotiateInputSerializerForMediaType`): an
/// absent or empty Content-Type is the first supported type, JSON (typed clients such as the
/// official Python client send none); 415 for anything else kapi cannot read.
pub fn negotiate_input(content_type: Option<&str>) -> Result<InputFormat, ApiError> {
    negotiate_input_for(content_type, false)
}

/// [`negotiate_input`] for a kind that has a protobuf form when `protobuf`.
pub fn negotiate_input_for(
    content_type: Option<&str>,
    protobuf: bool,
) -> Result<InputFormat, ApiError> {
    match media_type_of(content_type).as_str() {
        "" | "application/json" => Ok(InputFormat::Json),
        "application/yaml" => Ok(InputFormat::Yaml),
        crate::protobuf::MEDIA_TYPE if protobuf => Ok(InputFormat::Protobuf),
        other => Err(ApiError::unsupported_media_type(
            other,
            if protobuf {
                SUPPORTED_MEDIA_TYPES_PROTOBUF
            } else {
                SUPPORTED_MEDIA_TYPES
            },
        )),
    }
}

/// The patch types kapi understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

/// The patch type of a PATCH request (upstream's `PatchResource`: the Content-Type without
/// parameters must be one of the endpoint's patch types; an absent one is not, so it is a 415
/// too). `strategic` is false for kinds without strategic-merge metadata, which do not list it.
pub fn negotiate_patch(content_type: Option<&str>, strategic: bool) -> Result<PatchType, ApiError> {
    let supported = if strategic {
        SUPPORTED_PATCH_TYPES
    } else {
        SUPPORTED_PATCH_TYPES_UNSTRUCTURED
    };
    let media = media_type_of(content_type);
    let kind = match media.as_str() {
        "application/json-patch+json" => PatchType::Json,
        "application/merge-patch+json" => PatchType::Merge,
        "application/strategic-merge-patch+json" if strategic => PatchType::Strategic,
        "application/apply-patch+yaml" => PatchType::Apply,
        other => return Err(ApiError::unsupported_media_type(other, supported)),
    };
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_GET: &str =
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn kubectl_table_accept_picks_table_v1() {
        let m = negotiate_output(Some(KUBECTL_GET), true, false).unwrap();
        assert_eq!(m.transform, Some(Transform::Table(MetaVersion::V1)));
        assert_eq!(m.encoding, Encoding::Json);
        // Without transforms (e.g. an error body) the plain JSON entry wins.
        let m = negotiate_output(Some(KUBECTL_GET), false, false).unwrap();
        assert_eq!(m.transform, None);
    }

    #[test]
    fn protobuf_falls_back_to_json() {
        let m = negotiate_output(
            Some("application/vnd.kubernetes.protobuf,application/json"),
            true,
            false,
        )
        .unwrap();
        assert_eq!(m.encoding, Encoding::Json);
        let e =
            negotiate_output(Some("application/vnd.kubernetes.protobuf"), true, false).unwrap_err();
        assert_eq!(e.code, 406);
        assert_eq!(
            e.message,
            "only the following media types are accepted: application/json, application/yaml"
        );
    }

    #[test]
    fn protobuf_streams_for_kinds_with_a_form() {
        let kubectl = Some("application/vnd.kubernetes.protobuf, application/json");
        let m = negotiate_output_for(kubectl, true, true, true).unwrap();
        assert_eq!(m.encoding, Encoding::Protobuf);
        let m = negotiate_output_for(
            Some("application/vnd.kubernetes.protobuf;stream=watch"),
            true,
            true,
            true,
        )
        .unwrap();
        assert_eq!(m.encoding, Encoding::Protobuf);
        // Custom resources: the JSON entry.
        let m = negotiate_output_for(kubectl, true, true, false).unwrap();
        assert_eq!(m.encoding, Encoding::Json);
        let e = negotiate_output_for(Some("application/yaml"), true, true, true).unwrap_err();
        assert_eq!(
            e.message,
            "only the following media types are accepted: application/json, application/vnd.kubernetes.protobuf"
        );
        // A Table watch stays JSON even when protobuf is listed first.
        let m = negotiate_output_for(
            Some("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1"),
            true,
            true,
            true,
        )
        .unwrap();
        assert_eq!(
            (m.encoding, m.transform),
            (Encoding::Json, Some(Transform::Table(MetaVersion::V1)))
        );
    }

    #[test]
    fn yaml_wildcards_quality_and_unknown_params() {
        assert_eq!(
            negotiate_output(Some("application/yaml"), true, false)
                .unwrap()
                .encoding,
            Encoding::Yaml
        );
        assert_eq!(
            negotiate_output(Some("*/*"), true, false).unwrap().encoding,
            Encoding::Json
        );
        assert_eq!(
            negotiate_output(Some("application/json;q=0.5,application/yaml"), true, false)
                .unwrap()
                .encoding,
            Encoding::Yaml
        );
        assert!(negotiate_output(Some("application/json;as=Table"), true, false).is_err());
        assert!(negotiate_output(
            Some("application/json;as=Table;g=meta.k8s.io;v=v2"),
            true,
            false
        )
        .is_err());
        assert!(negotiate_output(Some("application/yaml"), true, true).is_err());
        assert!(
            negotiate_output(Some("application/json;pretty=1"), true, false)
                .unwrap()
                .pretty
        );
        let m = negotiate_output(
            Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"),
            true,
            false,
        )
        .unwrap();
        assert_eq!(
            m.transform,
            Some(Transform::PartialObjectMetadataList(MetaVersion::V1beta1))
        );
    }

    #[test]
    fn input_types() {
        assert_eq!(
            negotiate_input(Some("application/json; charset=utf-8")).unwrap(),
            InputFormat::Json
        );
        assert_eq!(
            negotiate_input(Some("application/yaml")).unwrap(),
            InputFormat::Yaml
        );
        // No Content-Type, or an empty one, is read as JSON, as upstream reads it.
        assert_eq!(negotiate_input(None).unwrap(), InputFormat::Json);
        assert_eq!(negotiate_input(Some("")).unwrap(), InputFormat::Json);
        let e = negotiate_input(Some("text/plain")).unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (415, "UnsupportedMediaType"));
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
        );
        let e = negotiate_input_for(Some("application/octet-stream"), true).unwrap_err();
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn patch_types() {
        assert_eq!(
            negotiate_patch(Some("application/merge-patch+json; charset=utf-8"), true).unwrap(),
            PatchType::Merge
        );
        assert_eq!(
            negotiate_patch(Some("application/apply-patch+yaml"), false).unwrap(),
            PatchType::Apply
        );
        // A PATCH has no default type: without a Content-Type it is a 415 listing the types.
        for ct in [None, Some(""), Some("application/json")] {
            let e = negotiate_patch(ct, true).unwrap_err();
            assert_eq!((e.code, e.reason.as_str()), (415, "UnsupportedMediaType"));
            assert_eq!(
                e.message,
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
            );
        }
        let e = negotiate_patch(Some("application/strategic-merge-patch+json"), false).unwrap_err();
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }
}
