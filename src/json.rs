//! JSON through the browser's own `JSON.parse` / `JSON.stringify` instead of serde_json: the widget
//! reads and writes a handful of small objects (config, saved conversation, request bodies, error
//! bodies, stream chunks), and serde's derive + serde_json's parser, printer and `Value` cost tens
//! of KB of wasm for that (see docs/widget.md, "Size").
//!
//! Reading: [`parse`] then [`get`] / [`string`] / [`number`] / [`items`] on the `JsValue`.
//! Writing: [`Obj`] builds a plain object; [`stringify`] turns any value into JSON text.

use js_sys::{Array, Object, Reflect, JSON};
use wasm_bindgen::{JsCast, JsValue};

/// Parse JSON text. The error is the browser's message (e.g. "Unexpected token } in JSON at
/// position 12").
pub fn parse(text: &str) -> Result<JsValue, String> {
    JSON::parse(text).map_err(|e| {
        e.dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_else(|| "invalid JSON".into())
    })
}

/// JSON text of a value (`undefined` and functions give an empty string).
pub fn stringify(v: &JsValue) -> String {
    JSON::stringify(v).ok().and_then(|s| s.as_string()).unwrap_or_default()
}

/// True for a plain JSON object (not null, not an array).
pub fn is_object(v: &JsValue) -> bool {
    v.is_object() && !Array::is_array(v)
}

/// `v[key]`, or `undefined` when `v` is not an object or has no such key.
pub fn get(v: &JsValue, key: &str) -> JsValue {
    if v.is_object() {
        Reflect::get(v, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

/// `v[i]` of an array, or `undefined`.
pub fn at(v: &JsValue, i: u32) -> JsValue {
    if Array::is_array(v) {
        Array::from(v).get(i)
    } else {
        JsValue::UNDEFINED
    }
}

/// `v[key]` when it is a string.
pub fn string(v: &JsValue, key: &str) -> Option<String> {
    get(v, key).as_string()
}

/// `v[key]` when it is a number.
pub fn number(v: &JsValue, key: &str) -> Option<f64> {
    get(v, key).as_f64()
}

/// `v[key]` when it is a boolean.
pub fn boolean(v: &JsValue, key: &str) -> Option<bool> {
    get(v, key).as_bool()
}

/// The elements of `v` when it is an array (else none).
pub fn items(v: &JsValue) -> Vec<JsValue> {
    if Array::is_array(v) {
        Array::from(v).iter().collect()
    } else {
        Vec::new()
    }
}

/// The own enumerable keys of an object, in order.
pub fn keys(v: &JsValue) -> Vec<String> {
    match v.dyn_ref::<Object>() {
        Some(o) => Object::keys(o).iter().filter_map(|k| k.as_string()).collect(),
        None => Vec::new(),
    }
}

/// A JSON array of strings.
pub fn strings<S: AsRef<str>>(xs: &[S]) -> JsValue {
    xs.iter().map(|s| JsValue::from_str(s.as_ref())).collect::<Array>().into()
}

/// A JSON array of values.
pub fn array(xs: impl IntoIterator<Item = JsValue>) -> JsValue {
    xs.into_iter().collect::<Array>().into()
}

/// A plain object under construction: `Obj::new().str("role", "user").num("n", 1.0).into()`.
pub struct Obj(Object);

impl Default for Obj {
    fn default() -> Self {
        Obj::new()
    }
}

impl Obj {
    /// An empty object.
    pub fn new() -> Obj {
        Obj(Object::new())
    }

    /// Set `key` to any value.
    pub fn val(self, key: &str, v: impl Into<JsValue>) -> Obj {
        let _ = Reflect::set(&self.0, &JsValue::from_str(key), &v.into());
        self
    }

    /// Set `key` to a string.
    pub fn str(self, key: &str, v: &str) -> Obj {
        self.val(key, JsValue::from_str(v))
    }

    /// Set `key` to a string, or `null`.
    pub fn opt_str(self, key: &str, v: Option<&str>) -> Obj {
        self.val(key, v.map(JsValue::from_str).unwrap_or(JsValue::NULL))
    }

    /// Set `key` to a number.
    pub fn num(self, key: &str, v: f64) -> Obj {
        self.val(key, JsValue::from_f64(v))
    }

    /// Set `key` to a number, or `null`.
    pub fn opt_num(self, key: &str, v: Option<f64>) -> Obj {
        self.val(key, v.map(JsValue::from_f64).unwrap_or(JsValue::NULL))
    }

    /// Set `key` to a boolean.
    pub fn bool(self, key: &str, v: bool) -> Obj {
        self.val(key, JsValue::from_bool(v))
    }

    /// The object as a value.
    pub fn build(self) -> JsValue {
        self.0.into()
    }
}

impl From<Obj> for JsValue {
    fn from(o: Obj) -> JsValue {
        o.build()
    }
}
