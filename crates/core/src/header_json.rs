//! Reads the index header's JSON (written by `serde_json` in [`crate::format::write_index`]).
//!
//! The reader runs in the browser on every page that opens the widget, and `serde_json`'s
//! deserialiser with serde's error formatting cost the wasm about 32 KB. The header is one flat
//! object of strings, numbers, string arrays and `null`, so core's small JSON reader
//! ([`crate::json`], any RFC 8259 text) parses it and this module picks the fields it knows.
//! Unknown fields are ignored (a newer writer may add some); missing required fields are errors.

use crate::json::{parse, Value};
use crate::model::{EmbedRecipe, IndexHeader, Quantization};

/// Fields of the header object, by name.
struct Fields<'a>(&'a [(String, Value)]);

/// The error for a header that is not what this reader expects: `detail` natively, one message
/// in the widget (the file's checksum already vouches for its bytes, so a bad header comes from
/// a broken writer, and `docent inspect` names the problem; the details would cost the wasm).
fn fail(detail: impl FnOnce() -> String) -> String {
    if cfg!(target_arch = "wasm32") {
        "the index header is malformed; rebuild the index".into()
    } else {
        detail()
    }
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn required(&self, name: &str) -> Result<&Value, String> {
        self.get(name).ok_or_else(|| fail(|| format!("missing field `{name}`")))
    }

    fn string(&self, name: &str) -> Result<String, String> {
        match self.required(name)? {
            Value::String(s) => Ok(s.clone()),
            _ => Err(fail(|| format!("field `{name}` is not a string"))),
        }
    }

    /// An optional float field (missing or `null`: `None`).
    fn float(&self, name: &str) -> Result<Option<f32>, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => parse_f32(n)
                .map(Some)
                .ok_or_else(|| fail(|| format!("field `{name}` is out of range: {n}"))),
            Some(_) => Err(fail(|| format!("field `{name}` is not a number"))),
        }
    }

    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<T, String> {
        match self.required(name)? {
            Value::Number(n) => {
                n.parse().map_err(|_| fail(|| format!("field `{name}` is out of range: {n}")))
            }
            _ => Err(fail(|| format!("field `{name}` is not a number"))),
        }
    }

    fn strings(&self, name: &str, default: bool) -> Result<Vec<String>, String> {
        let v = match self.get(name) {
            None if default => return Ok(Vec::new()),
            v => v.ok_or_else(|| fail(|| format!("missing field `{name}`")))?,
        };
        let Value::Array(items) = v else {
            return Err(fail(|| format!("field `{name}` is not a list")));
        };
        items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                _ => Err(fail(|| format!("field `{name}` holds a non-string"))),
            })
            .collect()
    }
}

/// Parses the header JSON. The error names the problem (for "header JSON: …").
pub(crate) fn read_header(bytes: &[u8]) -> Result<IndexHeader, String> {
    let Value::Object(fields) = parse(bytes)? else {
        return Err(fail(|| "the header is not a JSON object".into()));
    };
    let f = Fields(&fields);
    let name = f.string("quantization")?;
    let quantization = Quantization::ALL
        .into_iter()
        .find(|q| q.name() == name)
        .ok_or_else(|| fail(|| format!("unknown quantization `{name}`")))?;
    f.required("relevance_floor")?;
    let relevance_floor = f.float("relevance_floor")?;
    // At most 65,535, far above any embedding model's: every size computed from it then fits
    // a 32-bit usize (the widget's), whatever a tampered header says.
    let dims = u32::from(f.number::<u16>("dims")?);
    Ok(IndexHeader {
        provider: f.string("provider")?,
        model: f.string("model")?,
        dims,
        quantization,
        tokenizer: f.string("tokenizer")?,
        chunk_count: f.number("chunk_count")?,
        page_count: f.number("page_count")?,
        namespaces: f.strings("namespaces", false)?,
        docent_version: f.string("docent_version")?,
        built_at: f.number("built_at")?,
        relevance_floor,
        sources: f.strings("sources", true)?,
        embedding: match f.get("embedding") {
            None | Some(Value::Null) => EmbedRecipe::default(),
            Some(Value::Object(fields)) => read_recipe(&Fields(fields))?,
            Some(_) => return Err(fail(|| "field `embedding` is not an object".into())),
        },
        // The error names no number: formatting an f32 would link float printing into the wasm.
        non_english: match f.float("non_english")? {
            Some(x) if !(0.0..=1.0).contains(&x) => {
                return Err(fail(|| "field `non_english` is out of range 0..1".into()))
            }
            x => x,
        },
        language: match f.get("language") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(fail(|| "field `language` is not a string".into())),
        },
    })
}

/// The `embedding` object: every field optional.
fn read_recipe(f: &Fields<'_>) -> Result<EmbedRecipe, String> {
    let bad =
        |name: &str| fail(|| format!("field `embedding.{name}` is not a string, or out of range"));
    let text = |name: &str| match f.get(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(name)),
    };
    let cosine = |name: &str| match f.float(name)? {
        Some(x) if !(-1.0..=1.0).contains(&x) => Err(bad(name)),
        x => Ok(x),
    };
    let off_topic_cosine = cosine("off_topic_cosine")?;
    let off_topic_top = cosine("off_topic_top")?;
    Ok(EmbedRecipe {
        query_prompt: text("query_prompt")?,
        passage_prompt: text("passage_prompt")?,
        query_model: text("query_model")?,
        query_input_type: text("query_input_type")?,
        passage_input_type: text("passage_input_type")?,
        off_topic_cosine,
        off_topic_top,
    })
}

/// Exact powers of ten as `f64` (every one up to 10^22 is representable).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A JSON number's text as `f32`, without Rust's float parser: `str::parse::<f32>` links
/// core's dec2flt (its big-number fallback and power tables), 16 KB gz of the widget's wasm for
/// this one header field.
///
/// Up to 15 significant digits make an exact `f64`, which one multiplication or division by an
/// exact power of ten (decimal exponent within ±22) rounds correctly; that `f64` is then rounded
/// to `f32`. So every number the writer produces (serde_json's shortest `f32`, at most 9
/// significant digits) reads back as exactly the `f32` it was written from; a test checks this,
/// and agreement with `str::parse::<f32>`, over many values. Longer numbers (an `f32` printed as
/// `f64`) keep their first 19 digits and land within one `f32` step of the exact result.
/// Exponents beyond ±22 after that are `None` (out of range for a header field).
fn parse_f32(text: &str) -> Option<f32> {
    let b = text.as_bytes();
    let neg = b.first() == Some(&b'-');
    let mut i = usize::from(neg);
    let (mut mantissa, mut exp, mut digits, mut any) = (0u64, 0i32, 0u32, false);
    let mut fraction = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                any = true;
                if mantissa != 0 || c != b'0' {
                    digits += 1;
                }
                if digits <= 19 {
                    // 19 digits fit a u64; later ones are below f32 precision and dropped.
                    mantissa = mantissa * 10 + u64::from(c - b'0');
                    exp = exp.saturating_sub(i32::from(fraction));
                } else if !fraction {
                    exp = exp.saturating_add(1);
                }
            }
            b'.' if !fraction => fraction = true,
            _ => break,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        let sign = match b.get(i) {
            Some(b'-') => {
                i += 1;
                -1
            }
            Some(b'+') => {
                i += 1;
                1
            }
            _ => 1,
        };
        let start = i;
        let mut e: i32 = 0;
        while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            e = e.saturating_mul(10).saturating_add(i32::from(c - b'0'));
            i += 1;
        }
        if i == start {
            return None;
        }
        exp = exp.saturating_add(sign * e);
    }
    if i != b.len() {
        return None;
    }
    let value = if mantissa == 0 {
        0.0
    } else if (0..=22).contains(&exp) {
        mantissa as f64 * POW10[exp as usize]
    } else if (-22..0).contains(&exp) {
        mantissa as f64 / POW10[(-exp) as usize]
    } else {
        return None;
    };
    let value = value as f32;
    Some(if neg { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_back_as_the_f32_the_writer_wrote() {
        let mut x: u32 = 0x9E37_79B9;
        let mut checked = 0;
        for k in 0..400_000u32 {
            // xorshift bit patterns (all finite f32 in range) plus a dense sweep of [0, 1].
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v = if k % 2 == 0 { f32::from_bits(x) } else { k as f32 / 400_000.0 };
            if !v.is_finite() {
                continue;
            }
            let text = serde_json::to_string(&v).unwrap();
            let parsed = parse_f32(&text);
            // What the widget meets: floors near [-1, 1]; anything there must read back exactly.
            if v.abs() <= 1e6 && (v == 0.0 || v.abs() >= 1e-15) {
                assert_eq!(parsed.map(f32::to_bits), Some(v.to_bits()), "{text}");
                checked += 1;
            }
            if let Some(p) = parsed {
                assert_eq!(p.to_bits(), text.parse::<f32>().unwrap().to_bits(), "{text}");
            }
            // The same value printed as an f64 (17 digits) lands within one f32 step.
            let wide = serde_json::to_string(&f64::from(v)).unwrap();
            if let Some(p) = parse_f32(&wide) {
                assert!(p.to_bits().abs_diff(v.to_bits()) <= 1, "{wide}");
            }
        }
        assert!(checked > 200_000, "{checked}");
    }

    #[test]
    fn float_forms_json_allows_are_read_and_others_refused() {
        for (text, want) in [
            ("0", Some(0.0)),
            ("-0.5", Some(-0.5)),
            ("0.0125", Some(0.0125)),
            ("1e-7", Some(1e-7)),
            ("2.5E+3", Some(2500.0)),
            ("0.000000000000000000001", Some(1e-21)),
            ("123456789012345678901", Some(1.2345679e20)),
            ("0.012500000186264515", Some(0.0125)),
            ("1e40", None),
            ("1e", None),
            ("", None),
            ("-", None),
            ("1.2.3", None),
            ("0x10", None),
        ] {
            assert_eq!(parse_f32(text), want, "{text}");
        }
    }

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
            embedding: EmbedRecipe::default(),
            non_english: None,
            language: None,
        }
    }

    #[test]
    fn the_docs_language_share_is_read_back_and_checked() {
        let h =
            IndexHeader { non_english: Some(0.97), language: Some("Chinese".into()), ..header() };
        assert_eq!(read_header(&serde_json::to_vec(&h).unwrap()).unwrap(), h);
        assert!(h.docs_speak(true) && !h.docs_speak(false));
        assert_eq!(h.docs_language(), Some("Chinese"));
        let plain = serde_json::to_string(&header()).unwrap();
        assert!(!plain.contains("non_english"), "{plain}");
        assert!(!header().docs_speak(true) && header().docs_speak(false));
        let mixed =
            IndexHeader { non_english: Some(0.4), language: Some("Chinese".into()), ..header() };
        assert!(mixed.docs_speak(true) && mixed.docs_speak(false));
        assert_eq!(mixed.docs_language(), None, "mostly English: the docs' language stays English");
        let bad = plain.replacen('{', r#"{"non_english":1.5,"#, 1);
        assert!(read_header(bad.as_bytes()).unwrap_err().contains("non_english"));
    }

    #[test]
    fn an_embedding_recipe_is_read_back_and_absent_when_empty() {
        let h = IndexHeader {
            embedding: EmbedRecipe {
                query_prompt: "query: ".into(),
                passage_prompt: "passage: ".into(),
                query_model: "e5-query".into(),
                query_input_type: "query".into(),
                passage_input_type: "passage".into(),
                off_topic_cosine: Some(0.734),
                off_topic_top: Some(0.812),
            },
            ..header()
        };
        assert_eq!(read_header(&serde_json::to_vec(&h).unwrap()).unwrap(), h);
        let plain = serde_json::to_string(&header()).unwrap();
        assert!(!plain.contains("embedding"), "{plain}");
        let bad = plain.replacen('{', r#"{"embedding":{"off_topic_cosine":"x"},"#, 1);
        assert!(read_header(bad.as_bytes()).unwrap_err().contains("off_topic_cosine"));
        let bad = plain.replacen('{', r#"{"embedding":{"off_topic_top":1.5},"#, 1);
        assert!(read_header(bad.as_bytes()).unwrap_err().contains("off_topic_top"));
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
        o.insert(
            "added_later".into(),
            serde_json::json!({"nested": [1, 2.5e-3, true, null, "🦀"]}),
        );
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
            (&ok.replace("\"dims\":384", "\"dims\":1073741824"), "`dims` is out of range"),
            (&ok.replace("\"dims\":384", "\"dims\":65536"), "`dims` is out of range"),
            (&ok.replace("\"int8\"", "\"int3\""), "unknown quantization"),
            (
                &ok.replace(",\"model\":\"sentence-transformers/all-MiniLM-L6-v2\"", ""),
                "missing field `model`",
            ),
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
