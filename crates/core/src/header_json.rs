//! Reads the index header's JSON (written by `serde_json` in [`crate::format::write_index`]).
//!
//! The reader runs in the browser on every page that opens the widget, and `serde_json`'s
//! deserialiser with serde's error formatting cost the wasm about 32 KB. The header is one flat
//! object of strings, numbers, string arrays and `null`, so a small recursive-descent parser
//! that accepts any JSON (RFC 8259) and then picks the fields it knows is enough. Unknown fields
//! are ignored (a newer writer may add some); missing required fields are errors.

use crate::model::{IndexHeader, Quantization};

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    /// The number's text, parsed when a field asks for it (u32, u64 or f32).
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

/// Nesting limit: a header is flat; a hostile file must not exhaust the stack.
const MAX_DEPTH: usize = 32;

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("{what} at byte {}", self.at)
    }

    fn ws(&mut self) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.s.get(self.at) == Some(&b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
        if self.s[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(v)
        } else {
            Err(self.err("unexpected character"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.s.get(self.at) {
            None => Err(self.err("unexpected end")),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']') {
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(b']') {
                        return Ok(Value::Array(items));
                    }
                    if !self.eat(b',') {
                        return Err(self.err("expected , or ]"));
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.eat(b'}') {
                    return Ok(Value::Object(fields));
                }
                loop {
                    self.ws();
                    if self.s.get(self.at) != Some(&b'"') {
                        return Err(self.err("expected a field name"));
                    }
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b':') {
                        return Err(self.err("expected :"));
                    }
                    let v = self.value(depth + 1)?;
                    fields.push((key, v));
                    self.ws();
                    if self.eat(b'}') {
                        return Ok(Value::Object(fields));
                    }
                    if !self.eat(b',') {
                        return Err(self.err("expected , or }"));
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                self.eat(b'-');
                let digits = |p: &mut Self| {
                    let from = p.at;
                    while matches!(p.s.get(p.at), Some(b'0'..=b'9')) {
                        p.at += 1;
                    }
                    p.at > from
                };
                if !digits(self) {
                    return Err(self.err("expected a digit"));
                }
                if self.eat(b'.') && !digits(self) {
                    return Err(self.err("expected a digit"));
                }
                if self.eat(b'e') || self.eat(b'E') {
                    if !self.eat(b'+') {
                        self.eat(b'-');
                    }
                    if !digits(self) {
                        return Err(self.err("expected a digit"));
                    }
                }
                // ASCII by construction
                Ok(Value::Number(String::from_utf8_lossy(&self.s[start..self.at]).into_owned()))
            }
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.at..self.at + 4).ok_or_else(|| self.err("short \\u escape"))?;
        let h = std::str::from_utf8(h).map_err(|_| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(h, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.at += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            let b = *self.s.get(self.at).ok_or_else(|| self.err("unterminated string"))?;
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let e = *self.s.get(self.at).ok_or_else(|| self.err("unterminated string"))?;
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if !(self.eat(b'\\') && self.eat(b'u')) {
                                    return Err(self.err("unpaired surrogate"));
                                }
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(code).ok_or_else(|| self.err("unpaired surrogate"))?
                        }
                        _ => return Err(self.err("bad escape")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1F => return Err(self.err("control character in string")),
                _ => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("invalid UTF-8 in string"))
    }
}

fn parse(bytes: &[u8]) -> Result<Value, String> {
    let mut p = Parser { s: bytes, at: 0 };
    let v = p.value(0)?;
    p.ws();
    if p.at != bytes.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

/// Fields of the header object, by name.
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn required(&self, name: &str) -> Result<&Value, String> {
        self.get(name).ok_or_else(|| format!("missing field `{name}`"))
    }

    fn string(&self, name: &str) -> Result<String, String> {
        match self.required(name)? {
            Value::String(s) => Ok(s.clone()),
            _ => Err(format!("field `{name}` is not a string")),
        }
    }

    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<T, String> {
        match self.required(name)? {
            Value::Number(n) => n.parse().map_err(|_| format!("field `{name}` is out of range: {n}")),
            _ => Err(format!("field `{name}` is not a number")),
        }
    }

    fn strings(&self, name: &str, default: bool) -> Result<Vec<String>, String> {
        let v = match self.get(name) {
            None if default => return Ok(Vec::new()),
            v => v.ok_or_else(|| format!("missing field `{name}`"))?,
        };
        let Value::Array(items) = v else { return Err(format!("field `{name}` is not a list")) };
        items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format!("field `{name}` holds a non-string")),
            })
            .collect()
    }
}

/// Parses the header JSON. The error names the problem (for "header JSON: …").
pub(crate) fn read_header(bytes: &[u8]) -> Result<IndexHeader, String> {
    let Value::Object(fields) = parse(bytes)? else { return Err("the header is not a JSON object".into()) };
    let f = Fields(fields);
    let name = f.string("quantization")?;
    let quantization =
        Quantization::ALL.into_iter().find(|q| q.name() == name).ok_or_else(|| format!("unknown quantization `{name}`"))?;
    let relevance_floor = match f.required("relevance_floor")? {
        Value::Null => None,
        Value::Number(_) => Some(f.number::<f32>("relevance_floor")?),
        _ => return Err("field `relevance_floor` is not a number".into()),
    };
    Ok(IndexHeader {
        provider: f.string("provider")?,
        model: f.string("model")?,
        dims: f.number("dims")?,
        quantization,
        tokenizer: f.string("tokenizer")?,
        chunk_count: f.number("chunk_count")?,
        page_count: f.number("page_count")?,
        namespaces: f.strings("namespaces", false)?,
        docent_version: f.string("docent_version")?,
        built_at: f.number("built_at")?,
        relevance_floor,
        sources: f.strings("sources", true)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> IndexHeader {
        IndexHeader {
            provider: "local".into(),
            model: "sentence-transformers/all-MiniLM-L6-v2".into(),
            dims: 384,
            quantization: Quantization::Int8,
            tokenizer: "cl100k_base".into(),
            chunk_count: 4168,
            page_count: 321,
            namespaces: vec!["book".into(), "réf \"q\" \\ \n 🦀".into()],
            docent_version: "0.1.0".into(),
            built_at: 1_790_000_000,
            relevance_floor: Some(0.0125),
            sources: vec!["/usr/share/doc\u{1}".into()],
        }
    }

    #[test]
    fn what_serde_json_writes_is_read_back_field_for_field() {
        let h = header();
        assert_eq!(read_header(&serde_json::to_vec(&h).unwrap()).unwrap(), h);
        let none = IndexHeader { relevance_floor: None, namespaces: vec![], sources: vec![], ..h };
        assert_eq!(read_header(&serde_json::to_vec(&none).unwrap()).unwrap(), none);
        let pretty = serde_json::to_vec_pretty(&none).unwrap();
        assert_eq!(read_header(&pretty).unwrap(), none);
    }

    #[test]
    fn unknown_fields_are_ignored_and_sources_may_be_missing() {
        let mut v = serde_json::to_value(header()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("sources");
        o.insert("added_later".into(), serde_json::json!({"nested": [1, 2.5e-3, true, null, "🦀"]}));
        let h = read_header(&serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(h.sources, Vec::<String>::new());
        assert_eq!(h.dims, 384);
    }

    #[test]
    fn escaped_surrogate_pairs_decode() {
        let json = br#"{"provider":"\ud83e\udd80 \u00e9\/","model":"","dims":0,"quantization":"int8","tokenizer":"","chunk_count":0,"page_count":0,"namespaces":[],"docent_version":"","built_at":0,"relevance_floor":null}"#;
        assert_eq!(read_header(json).unwrap().provider, "🦀 é/");
    }

    #[test]
    fn bad_headers_are_errors_that_name_the_problem() {
        let ok = serde_json::to_string(&header()).unwrap();
        for (json, expect) in [
            ("", "unexpected end"),
            ("[]", "not a JSON object"),
            (&ok.replace("\"provider\":\"local\"", "\"provider\":1"), "`provider` is not a string"),
            (&ok.replace("\"dims\":384", "\"dims\":-1"), "out of range"),
            (&ok.replace("\"dims\":384", "\"dims\":99999999999"), "out of range"),
            (&ok.replace("\"int8\"", "\"int3\""), "unknown quantization"),
            (&ok.replace(",\"model\":\"sentence-transformers/all-MiniLM-L6-v2\"", ""), "missing field `model`"),
            (&format!("{ok} x"), "trailing"),
            ("{\"a\":\"\\ud83e\"}", "surrogate"),
            ("{\"a\":\"x", "unterminated"),
            ("{\"a\":01x}", "expected , or }"),
            (&"[".repeat(100), "nested too deeply"),
        ] {
            let e = read_header(json.as_bytes()).unwrap_err();
            assert!(e.contains(expect), "{json:?}: {e}");
        }
    }
}
