//! A small JSON reader: any RFC 8259 text into a [`Value`] tree, for the few JSON documents
//! the widget reads in Rust (the index header, [`crate::header_json`]; the chat stream's chunks,
//! [`crate::wire`]). `serde_json`'s deserialiser with serde's error formatting cost the wasm
//! about 32 KB; this parser is a few hundred lines and keeps numbers as their text, so each
//! field parses them into the type it wants.

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
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
    /// `what` went wrong here. The widget says only where (inlined, so its `what`s are not
    /// shipped); natively, what too.
    #[inline(always)]
    fn err(&self, what: &str) -> String {
        if cfg!(target_arch = "wasm32") {
            format!("malformed JSON at byte {}", self.at)
        } else {
            format!("{what} at byte {}", self.at)
        }
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

pub(crate) fn parse(bytes: &[u8]) -> Result<Value, String> {
    let mut p = Parser { s: bytes, at: 0 };
    let v = p.value(0)?;
    p.ws();
    if p.at != bytes.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

impl Value {
    /// An object's field (the first of that name); `None` for a missing field or a non-object.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string's text.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A string, number or boolean as text (a number as it was written); `None` for the rest.
    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Value::String(s) | Value::Number(s) => Some(s.clone()),
            Value::Bool(b) => Some(if *b { "true" } else { "false" }.into()),
            _ => None,
        }
    }
}
