//! The index format: round trips, the golden file per format version, and bad input.

use docent_core::format::{
    write_index, FormatError, Index, CENTERED_FORMAT_VERSION, FORMAT_VERSION, INT8_FORMAT_VERSION,
    MAGIC,
};
use docent_core::model::{Chunk, IndexHeader, Quantization};
use proptest::prelude::*;

fn golden_input() -> (IndexHeader, Vec<Chunk>, Vec<Vec<f32>>) {
    let header = IndexHeader {
        provider: "local".into(),
        model: "sentence-transformers/all-MiniLM-L6-v2".into(),
        tokenizer: "cl100k_base".into(),
        docent_version: "0.1.0".into(),
        built_at: 1_700_000_000,
        relevance_floor: Some(0.5),
        sources: vec!["docs".into()],
        ..Default::default()
    };
    let mut chunks = vec![
        Chunk {
            url: "guide/install.html".into(),
            anchor: "with-cargo".into(),
            title: "Installation".into(),
            breadcrumb: vec!["Installation".into(), "With cargo".into()],
            namespace: "v1".into(),
            text: "Run `cargo install docent --locked`. Set CARGO_HOME to change where it goes."
                .into(),
            tokens: 19,
            hash: 0,
        },
        Chunk {
            url: "guide/install.html".into(),
            anchor: "".into(),
            title: "Installation".into(),
            breadcrumb: vec!["Installation".into()],
            namespace: "v1".into(),
            text: "所有権 and ünïcödé text.\n\n```rust\nfn main() {}\n```".into(),
            tokens: 17,
            hash: 0,
        },
        Chunk {
            url: "reference/config.html".into(),
            anchor: "build-target-dir".into(),
            title: "Configuration".into(),
            breadcrumb: vec!["Reference".into(), "Configuration".into(), "build.target-dir".into()],
            namespace: "v2".into(),
            text: "The [build] table: build.target-dir sets the output folder.".into(),
            tokens: 14,
            hash: 0,
        },
    ];
    for c in &mut chunks {
        c.hash = c.compute_hash();
    }
    let vectors =
        vec![vec![0.1, 0.2, 0.3, 0.4], vec![-1.0, 0.0, 0.5, 0.0], vec![0.0, 0.0, 0.0, 1.0]];
    (header, chunks, vectors)
}

/// Rewrite the trailing checksum after a test has changed bytes, so the reader gets past it to
/// the check under test.
fn reseal(bytes: &mut [u8]) {
    let body = bytes.len() - 8;
    let sum = docent_core::format::checksum_of(&bytes[..body]);
    bytes[body..].copy_from_slice(&sum.to_le_bytes());
}

const GOLDEN_V1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/v1.bin");
const GOLDEN_V2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/v2.bin");
const GOLDEN_V3_INT4: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/v3-int4.bin");

#[test]
fn the_v2_golden_file_still_reads_and_the_writer_still_produces_it() {
    let (header, chunks, vectors) = golden_input();
    let written = write_index(&header, &chunks, Some(&vectors)).unwrap();
    if std::env::var_os("DOCENT_BLESS").is_some() {
        std::fs::write(GOLDEN_V2, &written).unwrap();
    }
    let golden = std::fs::read(GOLDEN_V2)
        .expect("golden file missing: run with DOCENT_BLESS=1 once, and commit it");
    let index = Index::from_bytes(golden.clone()).expect("the v2 golden file must stay readable");
    assert_eq!(index.len(), 3);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(&index.chunk(i), c);
    }
    assert_eq!(index.header().namespaces, vec!["v1".to_string(), "v2".to_string()]);
    assert_eq!(index.header().page_count, 2);
    assert_eq!(written, golden, "the writer's output changed: if the layout changed on purpose, bump FORMAT_VERSION and add a new golden file");
}

#[test]
fn the_v3_int4_golden_file_still_reads_and_the_writer_still_produces_it() {
    let (mut header, chunks, vectors) = golden_input();
    header.quantization = Quantization::Int4;
    let written = write_index(&header, &chunks, Some(&vectors)).unwrap();
    if std::env::var_os("DOCENT_BLESS").is_some() {
        std::fs::write(GOLDEN_V3_INT4, &written).unwrap();
    }
    let golden = std::fs::read(GOLDEN_V3_INT4)
        .expect("golden file missing: run with DOCENT_BLESS=1 once, and commit it");
    assert_eq!(golden[8..12], 3u32.to_le_bytes(), "packed vectors are format version 3");
    let index = Index::from_bytes(golden.clone()).expect("the v3 golden file must stay readable");
    assert_eq!(index.header().quantization, Quantization::Int4);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(&index.chunk(i), c);
    }
    // [0.1, 0.2, 0.3, 0.4] normalised, at 4 bits: levels 2, 4, 5, 7 of max/7.
    let (levels, _) = index.quantized(0).unwrap();
    assert_eq!(levels, &[2, 4, 5, 7]);
    assert_eq!(written, golden, "the writer's output changed: if the layout changed on purpose, bump FORMAT_VERSION and add a new golden file");
}

const GOLDEN_V8_SPLIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/v8-split");

/// A split index (format version 8, shard version 3): the entry and every shard, byte for byte.
#[test]
fn the_v8_split_golden_files_still_read_and_the_writer_still_produces_them() {
    use docent_core::split::write::{split_index, SplitOptions};
    let (header, chunks, vectors) = golden_input();
    let one = Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap();
    let opts = SplitOptions {
        postings_bytes: 64,
        text_bytes: 1,
        vector_clusters: false,
        ..SplitOptions::default()
    };
    let written = split_index(&one, "index", opts).unwrap();
    let dir = std::path::Path::new(GOLDEN_V8_SPLIT);
    let entry = golden_split_entry(dir, &written);
    let read = |name: &str| std::fs::read(dir.join(name));
    assert_eq!(
        entry[8..12],
        8u32.to_le_bytes(),
        "split entries without vector shards are version 8"
    );
    let index = Index::from_bytes(entry.clone()).expect("the v8 golden entry must stay readable");
    index.attach_all(read).expect("the v8 golden shards must stay readable");
    assert!(index.manifest().is_some_and(|m| m.texts.len() == 2 && m.postings.len() > 1));
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(&index.chunk(i), c);
        assert_eq!(index.quantized(i), one.quantized(i));
    }
    assert_golden_split_unchanged(dir, &entry, &written);
}

/// The golden split index in `dir`: written there first with `DOCENT_BLESS=1`; its entry bytes.
fn golden_split_entry(
    dir: &std::path::Path,
    written: &docent_core::split::write::SplitIndex,
) -> Vec<u8> {
    if std::env::var_os("DOCENT_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("index.bin"), &written.entry).unwrap();
        for (name, bytes) in &written.shards {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    std::fs::read(dir.join("index.bin"))
        .expect("golden files missing: run with DOCENT_BLESS=1 once")
}

/// The golden files in `dir` are exactly what the split writer produces today.
fn assert_golden_split_unchanged(
    dir: &std::path::Path,
    entry: &[u8],
    written: &docent_core::split::write::SplitIndex,
) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n != "index.bin")
        .collect();
    names.sort();
    assert_eq!(names, written.shards.iter().map(|s| s.0.clone()).collect::<Vec<_>>());
    let same = entry == written.entry
        && written.shards.iter().all(|(n, b)| std::fs::read(dir.join(n)).ok().as_ref() == Some(b));
    assert!(same, "the split writer's output changed: if the layout changed on purpose, bump FORMAT_VERSION (entry) or SHARD_VERSION and add new golden files");
}

const GOLDEN_V9_SPLIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/v9-split");

/// A split index with vectors by cluster (format version 9, vector shards), byte for byte.
#[test]
fn the_v9_split_golden_files_still_read_and_the_writer_still_produces_them() {
    use docent_core::split::write::{split_index, SplitOptions};
    let (mut header, chunks, vectors) = golden_input();
    header.quantization = Quantization::Binary;
    let center = docent_core::vector::mean_vector(&vectors, vectors[0].len());
    let bytes =
        docent_core::format::write_index_centered(&header, &chunks, Some(&vectors), Some(&center));
    let one = Index::from_bytes(bytes.unwrap()).unwrap();
    let opts = SplitOptions { postings_bytes: 64, text_bytes: 1, ..SplitOptions::default() };
    let written = split_index(&one, "index", opts).unwrap();
    let dir = std::path::Path::new(GOLDEN_V9_SPLIT);
    let entry = golden_split_entry(dir, &written);
    let read = |name: &str| std::fs::read(dir.join(name));
    assert_eq!(entry[8..12], 9u32.to_le_bytes(), "split entries with vector shards are version 9");
    let index = Index::from_bytes(entry.clone()).expect("the v9 golden entry must stay readable");
    index.attach_all(read).expect("the v9 golden shards must stay readable");
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(&index.chunk(i), c);
        assert_eq!(index.quantized(i), one.quantized(i));
    }
    assert!(written.shards.iter().any(|(n, _)| n.starts_with("index-v-")));
    assert_golden_split_unchanged(dir, &entry, &written);
}

#[test]
fn int8_indexes_are_still_written_as_version_2() {
    let (h, c, v) = golden_input();
    assert_eq!(write_index(&h, &c, Some(&v)).unwrap()[8..12], INT8_FORMAT_VERSION.to_le_bytes());
    assert_eq!(write_index(&h, &c, None).unwrap()[8..12], INT8_FORMAT_VERSION.to_le_bytes());
    let lexical = Index::from_bytes(
        write_index(&IndexHeader { quantization: Quantization::Binary, ..h }, &c, None).unwrap(),
    )
    .unwrap();
    assert_eq!(
        lexical.header().quantization,
        Quantization::Int8,
        "a lexical index has no vectors to pack"
    );
}

#[test]
fn every_quantisation_round_trips_and_ranks_the_same_best_chunk() {
    let (h, c, _) = golden_input();
    // 384 dims like all-MiniLM-L6-v2, three distinct directions.
    let vectors: Vec<Vec<f32>> = (0..3)
        .map(|k| (0..384).map(|d| (((d * (k + 3) * 7919) % 211) as f32 - 105.0) / 105.0).collect())
        .collect();
    for q in Quantization::ALL {
        let header = IndexHeader { quantization: q, dims: 384, ..h.clone() };
        let bytes = write_index(&header, &c, Some(&vectors)).unwrap();
        let index =
            Index::from_bytes(bytes.clone()).unwrap_or_else(|e| panic!("{}: {e}", q.name()));
        assert_eq!(index.header().quantization, q);
        // Each chunk's own vector finds that chunk first.
        for (i, v) in vectors.iter().enumerate() {
            let r = index.search(
                &docent_core::search::Query { text: "", vector: Some(v), ..Default::default() },
                &docent_core::search::SearchOptions { floor: Some(0.0), ..Default::default() },
            );
            assert_eq!(
                r.hits.first().map(|h| h.chunk as usize),
                Some(i),
                "{}: chunk {i}",
                q.name()
            );
        }
        // The stored bytes shrink with the width: dims × bits / 8 per vector.
        let vector_bytes = index
            .section_sizes()
            .into_iter()
            .find(|(k, _)| *k == docent_core::format::SectionKind::Vectors)
            .map(|(_, l)| l);
        assert_eq!(vector_bytes, Some(3 * 384 * q.bits() as usize / 8), "{}", q.name());
    }
}

#[test]
fn a_version_2_file_claiming_packed_vectors_is_corrupt() {
    let (h, c, v) = golden_input();
    let mut bytes =
        write_index(&IndexHeader { quantization: Quantization::Int4, ..h }, &c, Some(&v)).unwrap();
    bytes[8..12].copy_from_slice(&INT8_FORMAT_VERSION.to_le_bytes());
    reseal(&mut bytes);
    let err = Index::from_bytes(bytes).unwrap_err();
    assert!(err.to_string().contains("version 2 file cannot hold int4"), "{err}");
}

#[test]
fn a_4_bit_code_outside_the_symmetric_range_is_rejected() {
    let (h, c, v) = golden_input();
    let mut bytes =
        write_index(&IndexHeader { quantization: Quantization::Int4, ..h }, &c, Some(&v)).unwrap();
    // The last vector ([0, 0, 0, 1] → levels 0, 0, 0, 7: bytes 0x00 0x70) sits right before the
    // three scales, which follow at the next 8-byte boundary.
    let needle = [0x00u8, 0x70];
    let at = bytes.windows(2).rposition(|w| w == needle).expect("the last vector's bytes");
    bytes[at + 1] = 0x80; // level -8
    reseal(&mut bytes);
    let err = Index::from_bytes(bytes).unwrap_err();
    assert!(err.to_string().contains("outside the int4 range"), "{err}");
}

#[test]
fn a_version_1_file_is_refused_with_a_request_to_rebuild() {
    let v1 = std::fs::read(GOLDEN_V1).expect("the v1 golden file is kept to test this");
    let err = Index::from_bytes(v1).unwrap_err();
    assert_eq!(err, FormatError::OlderVersion { found: 1, supported: INT8_FORMAT_VERSION });
    assert!(err.to_string().contains("rebuild the index"), "{err}");
}

#[test]
fn a_vector_component_of_minus_128_is_rejected() {
    let (h, c, v) = golden_input();
    let mut bytes = write_index(&h, &c, Some(&v)).unwrap();
    // The last vector's components sit right before the scales; find a 127-magnitude one.
    let index = Index::from_bytes(bytes.clone()).unwrap();
    let (q, _) = index.quantized(2).unwrap();
    let k = q.iter().position(|&x| x == 127).expect("a normalised vector has a ±127 component");
    let at = q.as_ptr() as usize - index.as_bytes().as_ptr() as usize + k;
    bytes[at] = 0x80;
    reseal(&mut bytes);
    let err = Index::from_bytes(bytes).unwrap_err();
    assert!(err.to_string().contains("-128"), "{err}");
}

#[test]
fn truncated_index_gives_a_clear_error() {
    let (h, c, v) = golden_input();
    let bytes = write_index(&h, &c, Some(&v)).unwrap();
    for cut in [0, 3, 8, 20, 40, bytes.len() / 2, bytes.len() - 1] {
        let err = Index::from_bytes(bytes[..cut].to_vec()).unwrap_err();
        assert!(
            matches!(err, FormatError::Truncated(_) | FormatError::BadMagic),
            "cut at {cut}: {err:?}"
        );
        if cut >= 8 {
            assert!(err.to_string().contains("truncated"), "{err}");
        }
    }
}

#[test]
fn wrong_magic_is_not_a_docent_index() {
    let err = Index::from_bytes(b"<!DOCTYPE html><html>not found</html>".to_vec()).unwrap_err();
    assert_eq!(err, FormatError::BadMagic);
    assert!(err.to_string().contains("docent index"));
}

#[test]
fn a_newer_format_version_asks_to_upgrade() {
    let (h, c, v) = golden_input();
    let mut bytes = write_index(&h, &c, Some(&v)).unwrap();
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let err = Index::from_bytes(bytes).unwrap_err();
    assert!(matches!(err, FormatError::NewerVersion { .. }));
    assert!(err.to_string().contains("upgrade docent"));
}

/// Split entries of earlier layouts (5, 6 and 7: 64-bit shard checksums, `u16` chunk lengths)
/// ask for a rebuild, and never misread the new layout or the reverse.
#[test]
fn earlier_split_entries_ask_for_a_rebuild() {
    use docent_core::split::write::{split_index, SplitOptions};
    let (h, c, v) = golden_input();
    let one = Index::from_bytes(write_index(&h, &c, Some(&v)).unwrap()).unwrap();
    let opts = SplitOptions { vector_clusters: false, ..SplitOptions::default() };
    let entry = split_index(&one, "index", opts).unwrap().entry;
    for old in [5u32, 6, 7] {
        let mut b = entry.clone();
        b[8..12].copy_from_slice(&old.to_le_bytes());
        reseal(&mut b);
        let err = Index::from_bytes(b).unwrap_err();
        assert!(matches!(err, FormatError::OlderVersion { found, .. } if found == old), "{err}");
        assert!(err.to_string().contains("rebuild"), "{err}");
    }
}

#[test]
fn a_flipped_bit_is_caught_by_the_checksum() {
    let (h, c, v) = golden_input();
    let bytes = write_index(&h, &c, Some(&v)).unwrap();
    for at in [40, bytes.len() / 2, bytes.len() - 12] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        assert_eq!(Index::from_bytes(b).unwrap_err(), FormatError::Checksum, "flip at {at}");
    }
}

#[test]
fn corrupted_offsets_behind_a_valid_checksum_are_rejected_without_panicking() {
    let (h, c, v) = golden_input();
    let bytes = write_index(&h, &c, Some(&v)).unwrap();
    // Overwrite each 4-byte word of the section table and records with garbage, fix the checksum.
    for at in (24..bytes.len() - 8).step_by(4) {
        let mut b = bytes.clone();
        b[at..at + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        reseal(&mut b);
        if let Ok(idx) = Index::from_bytes(b) {
            for i in 0..idx.len() {
                let _ = idx.chunk(i);
            }
        }
    }
}

#[test]
fn the_magic_is_what_the_docs_say() {
    assert_eq!(MAGIC, b"DOCENTIX");
}

fn arb_chunk() -> impl Strategy<Value = Chunk> {
    (
        "[a-z/]{1,20}\\.html",
        "[a-z-]{0,12}",
        "\\PC{0,20}",
        proptest::collection::vec("\\PC{1,12}", 0..4),
        prop_oneof![Just(String::new()), "[a-z0-9.]{1,6}"],
        "\\PC{0,300}",
        any::<u32>(),
    )
        .prop_map(|(url, anchor, title, breadcrumb, namespace, text, tokens)| {
            let mut c = Chunk {
                url,
                anchor,
                title,
                breadcrumb: breadcrumb.into_iter().filter(|p| !p.is_empty()).collect(),
                namespace,
                text,
                tokens,
                hash: 0,
            };
            // The hash is a function of the content (the file does not store it).
            c.hash = c.compute_hash();
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_chunks_and_vectors_round_trip(chunks in proptest::collection::vec(arb_chunk(), 0..20), dims in 0usize..9, seed in any::<u64>()) {
        let mut s = seed;
        let vectors: Vec<Vec<f32>> = chunks.iter().map(|_| (0..dims).map(|_| { s = s.wrapping_mul(6364136223846793005).wrapping_add(1); ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5 }).collect()).collect();
        let vecs = if dims > 0 { Some(vectors.as_slice()) } else { None };
        let bytes = write_index(&IndexHeader::default(), &chunks, vecs).unwrap();
        let index = Index::from_bytes(bytes).unwrap();
        prop_assert_eq!(index.len(), chunks.len());
        for (i, c) in chunks.iter().enumerate() {
            prop_assert_eq!(&index.chunk(i), c);
            if dims > 0 {
                let got = index.vector(i).unwrap();
                let mut want = vectors[i].clone();
                docent_core::vector::normalize(&mut want);
                for (a, b) in got.iter().zip(&want) {
                    prop_assert!((a - b).abs() < 0.01, "{} vs {}", a, b);
                }
            }
        }
    }

    #[test]
    fn any_bytes_give_an_error_or_an_index_never_a_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..400), fix in any::<bool>()) {
        if fix && bytes.len() >= 40 {
            bytes[..8].copy_from_slice(b"DOCENTIX");
            bytes[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
            let total = bytes.len() as u64;
            bytes[16..24].copy_from_slice(&total.to_le_bytes());
            reseal(&mut bytes);
        }
        let _ = Index::from_bytes(bytes);
    }
}

/// `n` unit vectors of an "anisotropic model": a large shared component plus a small part of
/// their own (deterministic pseudo-random), like e5's.
fn anisotropic(n: usize, dims: usize) -> Vec<Vec<f32>> {
    let mut x: u32 = 0x1234_5678;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x as f32 / u32::MAX as f32) - 0.5
    };
    let common: Vec<f32> = (0..dims).map(|j| if j % 3 == 0 { 0.3 } else { 0.1 } + 0.05).collect();
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = common.iter().map(|c| c + 0.12 * rnd()).collect();
            docent_core::vector::normalize(&mut v);
            v
        })
        .collect()
}

fn chunks_for(n: usize) -> Vec<Chunk> {
    (0..n)
        .map(|i| {
            let mut c = Chunk {
                url: format!("p{i}.html"),
                title: format!("Page {i}"),
                text: format!("text {i}"),
                tokens: 2,
                ..Default::default()
            };
            c.hash = c.compute_hash();
            c
        })
        .collect()
}

#[test]
fn binary_vectors_relative_to_the_mean_vector_are_version_4_and_keep_the_cosine_scale() {
    use docent_core::format::{write_index_centered, PACKED_FORMAT_VERSION};
    use docent_core::search::{Mode, Query, SearchOptions};
    let dims = 64;
    let vs = anisotropic(80, dims);
    let mean = docent_core::vector::mean_vector(&vs, dims);
    let h = IndexHeader {
        provider: "openai".into(),
        model: "e5".into(),
        dims: dims as u32,
        quantization: Quantization::Binary,
        ..Default::default()
    };
    let chunks = chunks_for(vs.len());
    let centered = write_index_centered(&h, &chunks, Some(&vs), Some(&mean)).unwrap();
    assert_eq!(centered[8..12], CENTERED_FORMAT_VERSION.to_le_bytes());
    let raw = write_index(&h, &chunks, Some(&vs)).unwrap();
    assert_eq!(raw[8..12], PACKED_FORMAT_VERSION.to_le_bytes());
    let centered = Index::from_bytes(centered).unwrap();
    let raw = Index::from_bytes(raw).unwrap();
    assert_eq!(centered.center().unwrap(), &mean[..]);
    assert!(raw.center().is_none());

    // A question close to chunk 7: the true cosines and what each index reports.
    let mut q: Vec<f32> = vs[7].iter().zip(&vs[8]).map(|(a, b)| 0.8 * a + 0.2 * b).collect();
    docent_core::vector::normalize(&mut q);
    let opts =
        SearchOptions { mode: Mode::Vector, top_k: 5, floor: Some(0.0), ..Default::default() };
    let query = Query { text: "q", vector: Some(&q), history: &[], history_vector: None };
    let truth = |i: usize| vs[i].iter().zip(&q).map(|(a, b)| a * b).sum::<f32>();
    let got = centered.search(&query, &opts);
    assert_eq!(got.hits[0].chunk, 7, "{:?}", got.hits);
    let cos = got.hits[0].cosine.unwrap();
    assert!((cos - truth(7)).abs() < 0.03, "centered binary cosine {cos} vs true {}", truth(7));
    // Sign bits of the raw vectors are all alike: their cosines say little.
    let raw_cos = raw.search(&query, &opts).hits[0].cosine.unwrap();
    assert!((raw_cos - truth(7)).abs() > 0.05, "raw binary cosine {raw_cos} vs {}", truth(7));
    // Re-indexing a reused vector with the same mean vector gives back the same codes.
    let again: Vec<Vec<f32>> = (0..vs.len()).map(|i| centered.vector(i).unwrap()).collect();
    let rebuilt =
        Index::from_bytes(write_index_centered(&h, &chunks, Some(&again), Some(&mean)).unwrap())
            .unwrap();
    for i in 0..vs.len() {
        assert_eq!(rebuilt.quantized(i).unwrap().0, centered.quantized(i).unwrap().0, "chunk {i}");
    }
}

#[test]
fn a_mean_vector_in_an_older_version_or_of_the_wrong_size_is_refused() {
    use docent_core::format::write_index_centered;
    let dims = 16;
    let vs = anisotropic(12, dims);
    let mean = docent_core::vector::mean_vector(&vs, dims);
    let h = IndexHeader {
        model: "e5".into(),
        dims: dims as u32,
        quantization: Quantization::Binary,
        ..Default::default()
    };
    let chunks = chunks_for(vs.len());
    let mut bytes = write_index_centered(&h, &chunks, Some(&vs), Some(&mean)).unwrap();
    bytes[8..12].copy_from_slice(&3u32.to_le_bytes());
    reseal(&mut bytes);
    let err = Index::from_bytes(bytes).unwrap_err().to_string();
    assert!(err.contains("version 4") && err.contains("mean vector"), "{err}");
    let err = write_index_centered(&h, &chunks, Some(&vs), Some(&mean[..4])).unwrap_err();
    assert!(err.to_string().contains("mean vector"), "{err}");
}

#[test]
fn an_index_that_records_a_query_prompt_is_version_4_and_reads_it_back() {
    let (h, c, v) = golden_input();
    let h = IndexHeader {
        embedding: docent_core::EmbedRecipe {
            query_prompt: "query: ".into(),
            passage_prompt: "passage: ".into(),
            ..Default::default()
        },
        ..h
    };
    let bytes = write_index(&h, &c, Some(&v)).unwrap();
    assert_eq!(bytes[8..12], CENTERED_FORMAT_VERSION.to_le_bytes(), "older readers must refuse it");
    let index = Index::from_bytes(bytes).unwrap();
    assert_eq!(index.header().embedding.query_prompt, "query: ");
    assert_eq!(index.header().embedding.passage_prompt, "passage: ");
}

/// The plugins refuse an index whose format the widget cannot read (packages/widget/package.json
/// `docent.indexFormats`): its range must be the one this reader accepts.
#[test]
fn the_widget_package_declares_the_formats_this_reader_accepts() {
    let pkg = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages/widget/package.json"),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&pkg).unwrap();
    let formats = &v["docent"]["indexFormats"];
    assert_eq!(formats["min"], INT8_FORMAT_VERSION, "{formats}");
    assert_eq!(formats["max"], FORMAT_VERSION, "{formats}: bump it with FORMAT_VERSION");
    // The versions in that range this reader refuses (earlier split layouts).
    let retired: Vec<u32> = (docent_core::format::OLDEST_SPLIT_FORMAT_VERSION
        ..docent_core::format::SPLIT_FORMAT_VERSION)
        .collect();
    assert_eq!(formats["retired"], serde_json::json!(retired), "{formats}");
}
