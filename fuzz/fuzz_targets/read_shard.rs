//! Any bytes offered to a split index's shard readers: refused or read, never a panic. The
//! bytes are tried as each shard of a small split index (they must be refused unless they are
//! that shard), as a postings body, a text body, an outline and a shard manifest; after that
//! the index still searches and reads.
#![no_main]

use std::sync::OnceLock;

use docent_core::format::{write_index, Index};
use docent_core::search::{Query, SearchOptions};
use docent_core::split::outline::Outline;
use docent_core::split::write::{split_index, SplitOptions};
use docent_core::split::{shard, Manifest};
use docent_core::{Chunk, IndexHeader};
use libfuzzer_sys::fuzz_target;

/// The entry of a three-page split index.
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
        let full = Index::from_bytes(write_index(&IndexHeader::default(), &chunks, None).unwrap())
            .unwrap();
        let opts = SplitOptions { postings_bytes: 8, text_bytes: 8 };
        split_index(&full, "index", opts).unwrap().entry
    })
}

fuzz_target!(|data: &[u8]| {
    let index = Index::from_bytes(entry().to_vec()).expect("the fixed entry loads");
    for r in index.missing_shards() {
        let _ = index.attach(&r, data);
    }
    let _ = shard::parse_postings(data, 3, |_| true);
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
    let _ = index.search(
        &Query { text: "cargo build foo::bar", ..Default::default() },
        &SearchOptions::default(),
    );
    for i in 0..index.len() {
        let c = index.chunk_ref(i);
        let _ = (c.text.len(), c.breadcrumb(), c.url, index.section_of(i), index.page_of(i));
    }
});
