//! The errors Go's `encoding/json` gives when upstream reads a body's apiVersion/kind
//! (`json.Unmarshal` into `struct { APIVersion, Kind string }`): clients and people read these
//! messages, so a syntax error names the same character and place as upstream's scanner does.

use serde_json::Value;

/// Go's syntax error for `bytes` (what any `json.Unmarshal` reports first), if any.
pub fn syntax_error(bytes: &[u8]) -> Option<String> {
    Scanner::new(bytes).check().err()
}

/// Go's message for `bytes`, or `None` when Go would read apiVersion/kind from it.
pub fn find_kind_error(bytes: &[u8]) -> Option<String> {
    if let Some(e) = syntax_error(bytes) {
        return Some(e);
    }
    // The syntax is valid: the remaining errors are type errors against the struct.
    let value: Value = serde_json::from_slice(bytes).ok()?;
    kind_type_error(&value)
}

/// Go's type error reading apiVersion/kind from a parsed body (keys matched without regard to
/// case, as Go matches struct fields), or `None` when both are strings, null or absent.
pub fn kind_type_error(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let field = if key.eq_ignore_ascii_case("apiVersion") {
                    "apiVersion"
                } else if key.eq_ignore_ascii_case("kind") {
                    "kind"
                } else {
                    continue;
                };
                if !matches!(v, Value::String(_) | Value::Null) {
                    return Some(format!(
                        "json: cannot unmarshal {} into Go struct field .{field} of type string",
                        go_type(v)
                    ));
                }
            }
            None
        }
        Value::Null => None,
        other => Some(format!(
            "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_type(other)
        )),
    }
}

/// The JSON type name Go's decoder reports.
pub fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `quoteChar`: a byte as the scanner names it in a message.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x07 => r"'\a'".into(),
        0x08 => r"'\b'".into(),
        0x0c => r"'\f'".into(),
        b'\n' => r"'\n'".into(),
        b'\r' => r"'\r'".into(),
        b'\t' => r"'\t'".into(),
        0x0b => r"'\v'".into(),
        b'\\' => r"'\\'".into(),
        c if c < 0x20 || c == 0x7f => format!(r"'\x{c:02x}'"),
        // A byte is read as the rune of the same number: C1 controls and NBSP are escaped.
        c if (0x80..=0xa0).contains(&c) || c == 0xad => format!(r"'\u{c:04x}'"),
        c => format!("'{}'", char::from(c)),
    }
}

/// A validator in the order of Go's `encoding/json` scanner, so the first error found is the
/// one Go reports.
struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
}

type ScanResult = Result<(), String>;

impl<'a> Scanner<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// The byte at the cursor; past the end the scanner is fed a space, as Go's `eof` does.
    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// Moves past the byte at the cursor (the cursor never passes `data.len()`, far below
    /// `usize::MAX`).
    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    fn invalid(c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote_char(c))
    }

    /// Go's `eof`: a space ends a pending number or literal (and may be the error itself).
    fn unexpected_end() -> String {
        "unexpected end of JSON input".to_string()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.bump();
        }
    }

    fn check(mut self) -> ScanResult {
        self.skip_space();
        self.value()?;
        self.skip_space();
        match self.peek() {
            None => Ok(()),
            Some(c) => Err(Self::invalid(c, "after top-level value")),
        }
    }

    fn value(&mut self) -> ScanResult {
        let Some(c) = self.peek() else {
            return Err(Self::unexpected_end());
        };
        match c {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            c => Err(Self::invalid(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> ScanResult {
        self.bump();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.bump();
            return Ok(());
        }
        loop {
            match self.peek() {
                Some(b'"') => self.string()?,
                Some(c) => {
                    return Err(Self::invalid(
                        c,
                        "looking for beginning of object key string",
                    ))
                }
                None => return Err(Self::unexpected_end()),
            }
            self.skip_space();
            match self.peek() {
                Some(b':') => self.bump(),
                Some(c) => return Err(Self::invalid(c, "after object key")),
                None => return Err(Self::unexpected_end()),
            }
            self.skip_space();
            self.value()?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b'}') => {
                    self.bump();
                    return Ok(());
                }
                Some(c) => return Err(Self::invalid(c, "after object key:value pair")),
                None => return Err(Self::unexpected_end()),
            }
            self.skip_space();
        }
    }

    fn array(&mut self) -> ScanResult {
        self.bump();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.bump();
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b']') => {
                    self.bump();
                    return Ok(());
                }
                Some(c) => return Err(Self::invalid(c, "after array element")),
                None => return Err(Self::unexpected_end()),
            }
            self.skip_space();
        }
    }

    fn string(&mut self) -> ScanResult {
        self.bump();
        loop {
            let Some(c) = self.peek() else {
                return Err(Self::unexpected_end());
            };
            self.bump();
            match c {
                b'"' => return Ok(()),
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(Self::unexpected_end());
                    };
                    self.bump();
                    match e {
                        b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {}
                        b'u' => {
                            for _ in 0..4 {
                                let Some(h) = self.peek() else {
                                    return Err(Self::unexpected_end());
                                };
                                if !h.is_ascii_hexdigit() {
                                    return Err(Self::invalid(
                                        h,
                                        "in \\u hexadecimal character escape",
                                    ));
                                }
                                self.bump();
                            }
                        }
                        e => return Err(Self::invalid(e, "in string escape code")),
                    }
                }
                c if c < 0x20 => return Err(Self::invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    /// The byte a number or literal state sees next: past the end, Go's `eof` feeds a space.
    fn next_or_space(&self) -> u8 {
        self.peek().unwrap_or(b' ')
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.bump();
        }
    }

    fn number(&mut self) -> ScanResult {
        if self.peek() == Some(b'-') {
            self.bump();
            match self.next_or_space() {
                b'0'..=b'9' => {}
                c => return Err(Self::invalid(c, "in numeric literal")),
            }
        }
        if self.peek() == Some(b'0') {
            self.bump();
        } else {
            self.digits();
        }
        if self.peek() == Some(b'.') {
            self.bump();
            match self.next_or_space() {
                b'0'..=b'9' => self.digits(),
                c => return Err(Self::invalid(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.bump();
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.bump();
            }
            match self.next_or_space() {
                b'0'..=b'9' => self.digits(),
                c => return Err(Self::invalid(c, "in exponent of numeric literal")),
            }
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> ScanResult {
        self.bump();
        for expected in word.bytes().skip(1) {
            let c = self.next_or_space();
            if c != expected {
                return Err(Self::invalid(
                    c,
                    &format!("in literal {word} (expecting {})", quote_char(expected)),
                ));
            }
            self.bump();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::find_kind_error;

    fn err(s: &str) -> String {
        find_kind_error(s.as_bytes()).unwrap_or_default()
    }

    #[test]
    fn syntax_errors_read_as_go_reports_them() {
        assert_eq!(err(""), "unexpected end of JSON input");
        assert_eq!(err("  "), "unexpected end of JSON input");
        assert_eq!(err(r#"{"metadata": "#), "unexpected end of JSON input");
        assert_eq!(
            err("{not json"),
            "invalid character 'n' looking for beginning of object key string"
        );
        assert_eq!(err(r#"{"a" 1}"#), "invalid character '1' after object key");
        assert_eq!(
            err(r#"{"a": 1 "b": 2}"#),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(err("[1 2]"), "invalid character '2' after array element");
        assert_eq!(err("{} x"), "invalid character 'x' after top-level value");
        assert_eq!(
            err(r#"{"a": tru}"#),
            "invalid character '}' in literal true (expecting 'e')"
        );
        assert_eq!(
            err("nul"),
            "invalid character ' ' in literal null (expecting 'l')"
        );
        assert_eq!(err("-"), "invalid character ' ' in numeric literal");
        assert_eq!(
            err(r#"{"a": 1.}"#),
            "invalid character '}' after decimal point in numeric literal"
        );
        assert_eq!(
            err(r#"{"a": 1e+}"#),
            "invalid character '}' in exponent of numeric literal"
        );
        assert_eq!(
            err("{\"a\": \"\\q\"}"),
            "invalid character 'q' in string escape code"
        );
        assert_eq!(
            err("{\"a\": \"\t\"}"),
            r"invalid character '\t' in string literal"
        );
        assert_eq!(
            err("{'a': 1}"),
            r"invalid character '\'' looking for beginning of object key string"
        );
        assert_eq!(
            err("{\"a\": }"),
            "invalid character '}' looking for beginning of value"
        );
    }

    #[test]
    fn type_errors_name_the_struct() {
        assert_eq!(
            err("[1]"),
            r#"json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#
        );
        assert_eq!(
            err(r#"{"kind": 1}"#),
            "json: cannot unmarshal number into Go struct field .kind of type string"
        );
        assert_eq!(
            find_kind_error(br#"{"kind": "ConfigMap", "data": {}}"#),
            None
        );
        assert_eq!(find_kind_error(b"null"), None);
    }
}
