//! Any bytes given to the index reader: an error or an index, never a panic. Indexes that load
//! are also searched and every chunk read, so a lie in a validated offset would surface here.
#![no_main]

use docent_core::format::Index;
use docent_core::search::{Query, SearchOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Most random inputs fail the checksum; also try with a fixed-up checksum so the fuzzer
    // reaches the structural validation behind it.
    let _ = Index::from_bytes(data.to_vec());
    if data.len() >= 40 {
        let mut fixed = data.to_vec();
        let total = fixed.len() as u64;
        fixed[..8].copy_from_slice(b"DOCENTIX");
        // Both the newest one-file layout and a split index's entry (version 5).
        let version = if data[8] & 1 == 0 {
            docent_core::format::CENTERED_FORMAT_VERSION
        } else {
            docent_core::format::FORMAT_VERSION
        };
        fixed[8..12].copy_from_slice(&version.to_le_bytes());
        fixed[16..24].copy_from_slice(&total.to_le_bytes());
        let body = fixed.len() - 8;
        let sum = xxh3(&fixed[..body]);
        fixed[body..].copy_from_slice(&sum.to_le_bytes());
        if let Ok(index) = Index::from_bytes(fixed) {
            let _ = (index.shards_for_query(&["cargo build"]), index.shards_for_chunks(&[0, 1]));
            for i in 0..index.len().min(64) {
                let c = index.chunk_ref(i);
                let _ = (c.url.len(), c.text.len(), index.vector(i));
            }
            let q = vec![0.5f32; index.dims()];
            let _ = index.search(
                &Query {
                    text: "cargo build --locked foo::bar 所有権",
                    vector: Some(&q),
                    ..Default::default()
                },
                &SearchOptions::default(),
            );
        }
    }
});

fn xxh3(b: &[u8]) -> u64 {
    docent_core::format::checksum_of(b)
}
