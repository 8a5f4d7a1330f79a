//! Browser measurement of hybrid search (built only by `scripts/build-widget --bench`, with the
//! shipped widget's flags plus `--cfg docent_bench`; never part of the shipped widget).
//!
//! `search_benchmark(chunks, dims, runs)` builds a synthetic index in memory (random unit vectors,
//! text drawn from a fixed vocabulary), then times `Index::search` in hybrid mode with
//! `performance.now()` and returns JSON `{chunks, dims, runs, p50_ms, p95_ms, mean_ms, modes:
//! {hybrid, vector, lexical: {p50_ms, p95_ms, mean_ms}}, build_ms, lexical_build_ms, first_search_ms, index_bytes,
//! kernel_p50_ms}` (`kernel_p50_ms`: the int8 dot-product scan alone, over a plain buffer of the same size)
//! (the first search on the fresh index is timed alone and left out of the percentiles).

use docent_core::format::write_index;
use docent_core::model::{Chunk, IndexHeader, Quantization};
use docent_core::search::{Mode, Query, SearchOptions};
use docent_core::Index;
use wasm_bindgen::prelude::*;

use crate::json::{self, Obj};

const WORDS: &[&str] = &[
    "install",
    "configure",
    "build",
    "cache",
    "target",
    "release",
    "profile",
    "feature",
    "crate",
    "module",
    "trait",
    "lifetime",
    "borrow",
    "macro",
    "async",
    "await",
    "future",
    "thread",
    "channel",
    "mutex",
    "error",
    "result",
    "option",
    "iterator",
    "closure",
    "vector",
    "string",
    "slice",
    "pattern",
    "match",
    "workspace",
    "dependency",
    "version",
    "publish",
    "registry",
    "test",
    "bench",
    "doc",
    "lint",
    "format",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A component in -127..=127 (the int8 quantiser's range).
    fn i8(&mut self) -> i8 {
        ((self.next() % 255) as i32 - 127) as i8
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    fn word(&mut self) -> String {
        // A docs-like vocabulary: a few very common words, then a long tail of 5000 terms.
        let r = self.next();
        if r.is_multiple_of(4) {
            WORDS[((r >> 8) % WORDS.len() as u64) as usize].to_string()
        } else {
            let x = (self.next() % 1_000_000) as f64 / 1_000_000.0;
            format!("term{}", (x * x * 5000.0) as u32)
        }
    }
}

fn now() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map(|p| p.now()).unwrap_or(0.0)
}

fn vector(rng: &mut Rng, dims: usize) -> Vec<f32> {
    (0..dims).map(|_| rng.unit()).collect()
}

/// Build a synthetic index and time hybrid searches over it. Returns JSON (see module docs).
#[wasm_bindgen]
pub fn search_benchmark(chunks: u32, dims: u32, runs: u32) -> Result<String, JsValue> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let t0 = now();
    let mut cs = Vec::with_capacity(chunks as usize);
    let mut vs = Vec::with_capacity(chunks as usize);
    for i in 0..chunks {
        let text: Vec<String> = (0..120).map(|_| rng.word()).collect();
        cs.push(Chunk {
            url: format!("/docs/page-{}.html", i / 10),
            anchor: format!("section-{i}"),
            title: format!("Page {}", i / 10),
            breadcrumb: vec![format!("Page {}", i / 10), format!("Section {i}")],
            namespace: String::new(),
            text: text.join(" "),
            tokens: 150,
            // (other fields, e.g. the v1 format's content hash, keep their defaults)
            ..Chunk::default()
        });
        vs.push(vector(&mut rng, dims as usize));
    }
    let header = IndexHeader {
        provider: "bench".into(),
        model: "bench".into(),
        dims,
        tokenizer: "cl100k_base".into(),
        ..IndexHeader::default()
    };
    // Loading (checksum + validation, + unpacking for packed vectors) per stored width.
    let mut load_ms = Obj::new();
    for q in Quantization::ALL {
        let packed =
            write_index(&IndexHeader { quantization: q, ..header.clone() }, &cs, Some(&vs))
                .map_err(|e| JsValue::from_str(&e.to_string()))?;
        let t = now();
        Index::from_bytes(packed).map_err(|e| JsValue::from_str(&e.to_string()))?;
        load_ms = load_ms.num(q.name(), now() - t);
    }
    let bytes =
        write_index(&header, &cs, Some(&vs)).map_err(|e| JsValue::from_str(&e.to_string()))?;
    let index_bytes = bytes.len();
    let index = Index::from_bytes(bytes).map_err(|e| JsValue::from_str(&e.to_string()))?;
    let build_ms = now() - t0;
    // The BM25 index is derived from the text once per load (the widget does it right after
    // loading); timed on its own.
    let t1 = now();
    index.lexical();
    let lexical_build_ms = now() - t1;
    // The first search on a fresh index pays one-time work (lazy structures, page faults); a
    // reader's first question sees it, so it is reported on its own and kept out of the stats.
    let first_ms = {
        let q = vector(&mut rng, dims as usize);
        let query = Query {
            text: "how do I configure the build cache",
            vector: Some(&q),
            history: &[],
            history_vector: None,
        };
        let opts = SearchOptions { floor: Some(0.0), ..SearchOptions::default() };
        let t = now();
        let r = index.search(&query, &opts);
        let ms = now() - t;
        std::hint::black_box(r.hits.len());
        ms
    };
    let modes = Obj::new().build();
    let mut hybrid = (0.0, 0.0, 0.0);
    let mut hits = 0usize;
    for (name, mode) in
        [("hybrid", Mode::Hybrid), ("vector", Mode::Vector), ("lexical", Mode::Lexical)]
    {
        let opts = SearchOptions { floor: Some(0.0), mode, ..SearchOptions::default() };
        let mut times = Vec::with_capacity(runs as usize);
        for _ in 0..runs {
            let q = vector(&mut rng, dims as usize);
            let text = format!("how do I {} the {} {}", rng.word(), rng.word(), rng.word());
            let query = Query { text: &text, vector: Some(&q), history: &[], history_vector: None };
            let t = now();
            let r = index.search(&query, &opts);
            times.push(now() - t);
            hits += r.hits.len();
        }
        times.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            times.get(((times.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0)
        };
        let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
        let _ = js_sys::Reflect::set(
            &modes,
            &name.into(),
            &Obj::new()
                .num("p50_ms", pct(0.5))
                .num("p95_ms", pct(0.95))
                .num("mean_ms", mean)
                .build(),
        );
        if name == "hybrid" {
            hybrid = (pct(0.5), pct(0.95), mean);
        }
    }
    // The int8 scan alone (the vector part's kernel), over a plain buffer of the same size.
    let kernel = {
        let all: Vec<i8> = (0..chunks as usize * dims as usize).map(|_| rng.i8()).collect();
        let mut times = Vec::with_capacity(runs as usize);
        for _ in 0..runs {
            let q: Vec<i8> = (0..dims).map(|_| rng.i8()).collect();
            let t = now();
            let d = docent_core::vector::dot_i8_many(&q, &all, dims as usize);
            times.push(now() - t);
            hits += d.len() & 1;
        }
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    let report = Obj::new()
        .num("kernel_p50_ms", kernel)
        .num("chunks", chunks as f64)
        .num("dims", dims as f64)
        .num("runs", runs as f64)
        .num("p50_ms", hybrid.0)
        .num("p95_ms", hybrid.1)
        .num("mean_ms", hybrid.2)
        .val("modes", modes)
        .num("build_ms", build_ms)
        .val("load_ms", load_ms.build())
        .num("lexical_build_ms", lexical_build_ms)
        .num("first_search_ms", first_ms)
        .num("index_bytes", index_bytes as f64)
        .num("hits_total", hits as f64);
    Ok(json::stringify(&report.build()))
}
