//! Writing a split index (`docent index --split`): the entry file at `--out` and its shards
//! next to it ([`docent_core::split`]).
//!
//! Order matters for readers that fetch while a deploy or a rebuild runs: shards first (each
//! under its content hash, so an unchanged one is not even rewritten), the entry last and
//! atomically, then shards no entry names any more are removed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use docent_core::split::write::{split_index, SplitOptions};
use docent_core::Index;

/// When `docent index` splits the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SplitMode {
    /// One file.
    Never,
    /// Always an entry plus shards.
    Always,
    /// Split when the one-file index would be bigger than [`AUTO_SPLIT_BYTES`] (the default).
    #[default]
    Auto,
}

/// `--split auto` splits indexes bigger than this (their text dominates; see BENCHMARKS.md).
pub const AUTO_SPLIT_BYTES: usize = 2 * 1024 * 1024;

/// Above this many chunks, a split index of an anisotropic model (multilingual-e5) stores its
/// vectors as binary instead of int4 unless `--quantization` says otherwise: a question fetches
/// its 16 nearest clusters' vectors, and at int4 those alone took a 10,000-page site's first
/// answer to 949 KB gz (binary 553; the goal is 600) and the PostgreSQL manual's to 386 KB
/// (binary 245; goal 400). Probed that way the two rank alike (BENCHMARKS.md §4.5: R@5 0.824
/// binary, 0.820 int4, MRR 0.673 and 0.695 over eight sets split at 16 clusters); smaller
/// sites keep int4, which ranks better when every vector is at hand.
pub const BINARY_SPLIT_CHUNKS: usize = 8_000;

/// [`BINARY_SPLIT_CHUNKS`], or `DOCENT_BINARY_SPLIT_CHUNKS` (tests and benchmarks).
pub fn binary_split_chunks() -> usize {
    knob("DOCENT_BINARY_SPLIT_CHUNKS").unwrap_or(BINARY_SPLIT_CHUNKS)
}

/// A benchmark or test setting from the environment, when set and well formed.
fn knob<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

impl SplitMode {
    /// Whether a one-file index of `bytes` is written split.
    pub fn splits(self, bytes: usize) -> bool {
        match self {
            SplitMode::Never => false,
            SplitMode::Always => true,
            SplitMode::Auto => bytes > AUTO_SPLIT_BYTES,
        }
    }

    /// Parse `never`, `always` or `auto`.
    pub fn parse(s: &str) -> anyhow::Result<SplitMode> {
        Ok(match s {
            "never" | "no" | "false" => SplitMode::Never,
            "always" | "yes" | "true" => SplitMode::Always,
            "auto" => SplitMode::Auto,
            _ => bail!("--split {s:?}: use never, always or auto"),
        })
    }
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct ShardReport {
    /// Shards the entry names.
    pub shards: usize,
    /// Of them, written in this run (new content).
    pub written: usize,
    /// Old shards of this index removed.
    pub removed: usize,
    /// Bytes of the entry file.
    pub entry_bytes: usize,
}

/// The shard file name stem for an entry file: its name without the extension.
pub fn stem_of(out: &Path) -> String {
    out.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "docent".into())
}

/// Shard files of `stem` in `dir`: `{stem}-{p,t,v}-{8 hex}.bin`, and the 16-hex names of
/// earlier split layouts (format 7 and before), so a rebuild clears those away too.
fn existing_shards(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let Some(rest) = name.strip_prefix(stem) else { return false };
            let Some(hex) = rest
                .strip_prefix("-p-")
                .or_else(|| rest.strip_prefix("-t-"))
                .or_else(|| rest.strip_prefix("-v-"))
                .and_then(|r| r.strip_suffix(".bin"))
            else {
                return false;
            };
            matches!(hex.len(), 8 | 16) && hex.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .collect()
}

/// Write `bytes` (a one-file index) to `out`, split into an entry and shards when `mode` says
/// so; `write_atomic` puts a file in place atomically. Returns None when written as one file.
pub fn write(
    out: &Path,
    bytes: &[u8],
    mode: SplitMode,
    write_atomic: impl Fn(&Path, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<Option<ShardReport>> {
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stem = stem_of(out);
    let split = mode.splits(bytes.len());
    let old = existing_shards(dir, &stem);
    if !split {
        write_atomic(out, bytes)?;
        // A one-file index names no shards: those of an earlier split build are stale.
        for p in &old {
            let _ = std::fs::remove_file(p);
        }
        return Ok(None);
    }
    let index =
        Index::from_bytes(bytes.to_vec()).context("cannot read back the index to split it")?;
    let mut opts = SplitOptions::default();
    // Benchmark knobs (BENCHMARKS.md §4.5): the centroids' width in the entry, and the largest
    // cluster in quarters of the mean size (0: plain k-means).
    opts.centroid_bits = knob("DOCENT_CENTROID_BITS").unwrap_or(opts.centroid_bits);
    opts.cluster_cap = knob("DOCENT_CLUSTER_CAP").unwrap_or(opts.cluster_cap);
    let s = split_index(&index, &stem, opts)
        .with_context(|| format!("cannot split the index into shards named after {stem:?}"))?;
    let mut report =
        ShardReport { shards: s.shards.len(), entry_bytes: s.entry.len(), ..Default::default() };
    for (name, data) in &s.shards {
        let path = dir.join(name);
        // Same content: leave it (and its timestamp) alone. Compared byte for byte, not by
        // name and length: a shard damaged on disk keeps both, and "rebuild it" (what a reader
        // of a damaged shard is told) must repair it.
        let same = std::fs::metadata(&path).is_ok_and(|m| m.len() == data.len() as u64)
            && std::fs::read(&path).is_ok_and(|old| old == *data);
        if same {
            continue;
        }
        write_atomic(&path, data)?;
        report.written += 1;
    }
    write_atomic(out, &s.entry)?;
    for p in old {
        let keep = p
            .file_name()
            .map(|n| s.shards.iter().any(|(name, _)| n.to_string_lossy() == name.as_str()))
            .unwrap_or(true);
        if !keep && std::fs::remove_file(&p).is_ok() {
            report.removed += 1;
        }
    }
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_say_what_they_take() {
        assert_eq!(SplitMode::parse("auto").unwrap(), SplitMode::Auto);
        assert_eq!(SplitMode::parse("always").unwrap(), SplitMode::Always);
        assert!(SplitMode::parse("sometimes")
            .unwrap_err()
            .to_string()
            .contains("never, always or auto"));
        assert_eq!(stem_of(Path::new("public/index.bin")), "index");
        assert_eq!(stem_of(Path::new("docent.idx")), "docent");
    }

    /// A rebuild removes what the new entry does not name: this layout's shards and the
    /// 16-hex names of earlier layouts, never other files or another index's shards.
    #[test]
    fn shards_of_this_stem_and_earlier_layouts_are_found() {
        let dir = std::env::temp_dir().join(format!("docent-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ours = ["index-p-0123abcd.bin", "index-t-0123456789abcdef.bin", "index-v-ffffffff.bin"];
        let others =
            ["other-p-0123abcd.bin", "index-p-0123abc.bin", "index-x-0123abcd.bin", "index.bin"];
        for n in ours.iter().chain(&others) {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        let mut found: Vec<String> = existing_shards(&dir, "index")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        found.sort();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found, ours);
    }
}
