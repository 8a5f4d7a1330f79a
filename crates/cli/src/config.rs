//! The `[index]` section of `docent.toml`.
//!
//! Other sections (`[serve]`, `[providers.*]`, `[widget]`, ...) belong to other parts and are
//! ignored here, but a name that is no section at all (`[indx]`) is an error, and so are
//! unknown keys INSIDE `[index]`: typos are reported.
//!
//! ```toml
//! [index]
//! sources = ["docs", "v1=versioned_docs/version-1"]
//! out = "public/docent.idx"
//! embed = "local"                  # openai | local | none
//! model = "all-MiniLM-L6-v2"
//! base_url = "https://docs.example.com"
//! source_urls = ["versioned_docs/version-1=https://docs.example.com/v1"]
//! clean_urls = true
//! include = ["**/*.md"]
//! exclude = ["drafts/**"]
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

/// The whole file, as far as `docent index` cares.
#[derive(Debug, Default, Deserialize)]
pub struct ConfigFile {
    /// `[index]`.
    #[serde(default)]
    pub index: Option<IndexSection>,
}

/// `[index]`: the same settings as `docent index`'s flags (flags win).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSection {
    /// Source folders, `path` or `namespace=path`, relative to the config file.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Output file, relative to the config file.
    pub out: Option<PathBuf>,
    /// `openai`, `local` or `none`.
    pub embed: Option<String>,
    /// Embedding model id (or a local model folder).
    pub model: Option<String>,
    /// Vector dimensions (`openai` models that support `dimensions`).
    pub dims: Option<usize>,
    /// How vectors are stored: `binary` (default), `int4` or `int8`.
    pub quantization: Option<String>,
    /// Public URL of the site; page URLs become absolute.
    pub base_url: Option<String>,
    /// Page URLs without `.html` (VitePress `cleanUrls`, Docusaurus).
    pub clean_urls: Option<bool>,
    /// Namespace for sources given without one.
    pub namespace: Option<String>,
    /// `SRC=URL`: the URL of one source folder's pages, instead of `base_url`.
    #[serde(default)]
    pub source_urls: Vec<String>,
    /// Previous index whose vectors may be reused.
    pub previous: Option<PathBuf>,
    /// Only files matching one of these globs (relative to the source folder).
    #[serde(default)]
    pub include: Vec<String>,
    /// Skip files matching any of these globs.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// A folder above the sources that pages may include files from (and that linked pages may
    /// lead to), relative to the config file.
    pub include_root: Option<PathBuf>,
    /// Markdown anchor rules: `vitepress`, `docusaurus` (github), `docsify`, or `auto`.
    pub flavor: Option<String>,
    /// Max cl100k tokens per chunk.
    pub max_tokens: Option<usize>,
    /// `never`, `always` or `auto`: an entry file plus shards fetched by need (big sites).
    pub split: Option<String>,
    /// Overlap between consecutive chunks of one section, in tokens.
    pub overlap_tokens: Option<usize>,
    /// `openai`: API base URL for embeddings.
    pub embed_base_url: Option<String>,
    /// `openai`: NAME of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// `openai`: texts per embeddings request.
    pub embed_batch_size: Option<usize>,
    /// `openai`: seconds one embeddings request may take.
    pub embed_timeout_secs: Option<u64>,
    /// Relevance floor to record in the index header (from `docent eval --calibrate`).
    pub floor: Option<f32>,
    /// Text put before every question before embedding (the model's query prompt).
    pub query_prompt: Option<String>,
    /// Text put before every chunk before embedding (the model's passage prompt).
    pub passage_prompt: Option<String>,
    /// `openai`: the model questions are embedded with, when the server picks the query
    /// variant by name (`e5-query` beside `--model e5-passage`).
    pub query_model: Option<String>,
    /// `openai`: `input_type` sent with questions.
    pub query_input_type: Option<String>,
    /// `openai`: `input_type` sent with chunks.
    pub passage_input_type: Option<String>,
}

/// Read `path`'s `[index]` section. Paths inside it are made relative to the file's folder.
pub fn load_index_section(path: &Path) -> anyhow::Result<Option<IndexSection>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    let invalid = |e: String| anyhow::anyhow!("{} is not valid: {}", path.display(), e.trim());
    let table: toml::Table = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    docent_proxy::config::check_sections(&table).map_err(invalid)?;
    let file: ConfigFile = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let Some(mut section) = file.index else { return Ok(None) };
    let base = path.parent().unwrap_or(Path::new("."));
    section.out = section.out.map(|p| base.join(p));
    section.previous = section.previous.map(|p| base.join(p));
    section.include_root = section.include_root.map(|p| base.join(p));
    section.sources = section
        .sources
        .into_iter()
        .map(|s| match split_namespace(&s) {
            (Some(ns), p) => format!("{ns}={}", base.join(p).display()),
            (None, p) => base.join(p).display().to_string(),
        })
        .collect();
    Ok(Some(section))
}

/// `book=path/to/book` → (Some("book"), "path/to/book"); a plain path → (None, path).
/// A `=` only counts when the part before it looks like a name (no `/` or `\`).
pub fn split_namespace(spec: &str) -> (Option<&str>, &str) {
    if let Some((ns, path)) = spec.split_once('=') {
        let ok = !ns.is_empty() && !ns.contains(['/', '\\']) && !Path::new(spec).exists();
        if ok {
            return (Some(ns), path);
        }
    }
    (None, spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_prefix_is_split_only_when_it_looks_like_a_name() {
        assert_eq!(split_namespace("book=/a/b"), (Some("book"), "/a/b"));
        assert_eq!(split_namespace("/a=b/c"), (None, "/a=b/c"));
        assert_eq!(split_namespace("docs"), (None, "docs"));
    }

    #[test]
    fn unknown_keys_in_the_index_section_are_reported_and_other_sections_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("docent.toml");
        std::fs::write(
            &p,
            "[serve]\nlisten = \"x\"\n[index]\nsources = [\"docs\"]\nout = \"o.idx\"\n",
        )
        .unwrap();
        let s = load_index_section(&p).unwrap().unwrap();
        assert_eq!(s.out.unwrap(), dir.path().join("o.idx"));
        assert_eq!(s.sources, vec![dir.path().join("docs").display().to_string()]);
        std::fs::write(&p, "[index]\nsoruces = [\"docs\"]\n").unwrap();
        let err = load_index_section(&p).unwrap_err().to_string();
        assert!(err.contains("soruces"), "{err}");
        std::fs::write(&p, "[indx]\nsources = [\"docs\"]\n").unwrap();
        let err = load_index_section(&p).unwrap_err().to_string();
        assert!(err.contains("unknown section [indx]; did you mean [index]?"), "{err}");
    }
}
