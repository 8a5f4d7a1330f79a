//! Any bytes offered to a split index's shard readers: refused or read, never a panic. The
//! bytes are tried as each shard of a small split index (they must be refused unless they are
//! that shard), as a postings body, a text body, a vector shard body, an outline, a shard
//! manifest and a coarse quantiser (vectors by cluster); after that the index still searches
//! and reads.
#![no_main]

use std::sync::OnceLock;

use docent_core::format::{write_index, Index};
use docent_core::model::Quantization;
use docent_core::search::{Query, SearchOptions};
use docent_core::split::outline::Outline;
use docent_core::split::vectors::{parse_vectors, Coarse};
use docent_core::split::write::{split_index, SplitOptions};
use docent_core::split::{shard, Manifest};
use docent_core::{Chunk, IndexHeader};
use libfuzzer_sys::fuzz_target;

/// The entry of a three-page split index with binary vectors by cluster.
fn entry() -> &'static [u8] {
    static ENTRY: OnceLock<Vec<u8>> = OnceLock::new();
    ENTRY.get_or_init(|| {
        let chunks: Vec<Chunk> =
            ["cargo build --locked", "foo::bar café 所有権", "quick brown fox"]
                .iter()
                .enumerate()
                .map(|(i, t)| Chunk {
                    url: format!("/p{i}.html"),
                    title: "T".into(),
                    text: t.to_string(),
                    ..Default::default()
                })
                .collect();
        let header = IndexHeader {
            provider: "local".into(),
            quantization: Quantization::Binary,
            ..Default::default()
        };
        let vectors: Vec<Vec<f32>> =
            (0..3).map(|i| (0..16).map(|j| ((i * 5 + j) % 7) as f32 - 3.0).collect()).collect();
        let full =
            Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap();
        let opts = SplitOptions { postings_bytes: 8, text_bytes: 8, ..SplitOptions::default() };
        split_index(&full, "index", opts).unwrap().entry
    })
}

fuzz_target!(|data: &[u8]| {
    let index = Index::from_bytes(entry().to_vec()).expect("the fixed entry loads");
    for r in index.missing_shards() {
        let _ = index.attach(&r, data);
    }
    let _ = shard::parse_postings(data, 3, |_| true);
    for q in [Quantization::Binary, Quantization::Int4, Quantization::Int8] {
        let _ = parse_vectors(data, 3, 2, 16, q, Some(&[0.1; 16]));
    }
    for bits in [1, 3, 16] {
        let _ = Coarse::parse(data, bits, 16).map(|c| c.nearest(&[1; 16], 16));
    }
    for n in [0, 1, 3, 1_000] {
        let _ = Manifest::parse(data, n);
        let _ = Outline::parse(data, n).map(|o| {
            (0..n + 1).for_each(|i| {
                let _ = o.page_of(i);
            })
        });
        if let Ok(t) = shard::parse_texts(data, n) {
            (0..n + 1).for_each(|j| {
                let _ = t.chunk(j);
            });
        }
    }
    let v = [0.5f32; 16];
    for nprobe in [None, Some(1)] {
        let _ = index.search(
            &Query { text: "cargo build foo::bar", vector: Some(&v), ..Default::default() },
            &SearchOptions { nprobe, ..SearchOptions::default() },
        );
    }
    let _ = index.shards_for_vector(&v, None, 1.0, 2);
    for i in 0..index.len() {
        let c = index.chunk_ref(i);
        let _ = (c.text.len(), c.breadcrumb(), c.url, index.section_of(i), index.page_of(i));
        let _ = index.quantized(i);
    }
});
