//! `docent index`: sources → chunks → (embeddings) → one index file.
//!
//! Library entry point: [`build_index`] with [`IndexSettings`] (used by `docent demo` too):
//!
//! ```no_run
//! use docent_cli::index::{build_index, IndexSettings, SourceSpec};
//! let settings = IndexSettings {
//!     sources: vec![SourceSpec { path: "docs".into(), ..SourceSpec::default() }],
//!     out: "public/docent.idx".into(),
//!     embed: "none".into(),
//!     ..IndexSettings::default()
//! };
//! let report = build_index(&settings)?;
//! println!("{}", report.summary());
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! Incremental: vectors of chunks whose content hash is unchanged are taken from the previous
//! index (`previous`, else the existing output file) when it was built with the same
//! provider/model/dims, so an unchanged site costs zero embedding calls.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::Args;
use docent_core::chunk::{cl100k_tokens, ChunkOptions, Chunker};
use docent_core::model::{Chunk, EmbedRecipe, IndexHeader, Quantization};
use docent_core::source::include::Includes;
use docent_core::source::markdown::{frontmatter, frontmatter_problems, standard_attr_delimiters};
use docent_core::source::safety::check_slug;
use docent_core::source::{
    decode_text, docusaurus_route, is_docusaurus_partial, page_url_with_slug, parse_page_with,
    Encoding, Flavor, Parsed, SourceKind, UrlStyle,
};
use docent_core::Index;
use docent_embed::{EmbedOptions, Embedder};
use indicatif::{ProgressBar, ProgressStyle};

use crate::anchors::AnchorChecker;
use crate::config::{load_index_section, split_namespace};
use crate::walk::{detect_flavor, find_files, globset, pages_of, SourceFile};

/// Arguments of `docent index`.
/// Where the pages come from and how they get URLs and namespaces: the options `docent index`
/// and `docent llms` share (both also read them from docent.toml's `[index]` section).
#[derive(Debug, Clone, Args, Default)]
pub struct SiteArgs {
    /// Source folders: `path` or `namespace=path` (Markdown/MDX sources or built HTML).
    #[arg(value_name = "SRC")]
    pub sources: Vec<String>,
    /// Public URL of the site: page URLs become absolute (https://docs.example.com/guide/intro.html).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// With --base-url: page URLs without `.html` (VitePress cleanUrls, Docusaurus).
    #[arg(long)]
    pub clean_urls: bool,
    /// Namespace for sources given without `namespace=`.
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Pages under this folder of a source get this namespace: `DIR=NAME`, e.g. `fr=fr` or
    /// `docs/1.0=1.0` (repeatable; the longest matching folder wins). For locales and versions
    /// laid out as folders of one built site.
    #[arg(long, value_name = "DIR=NAME")]
    pub namespace_dir: Vec<String>,
    /// The URL of one source folder's pages, instead of --base-url: `SRC=URL`, with SRC as
    /// given in the sources, e.g. `--source-url versioned_docs/version-1.0=/docs/1.0` for a
    /// docs version whose Markdown lives apart from the current docs (repeatable).
    #[arg(long, value_name = "SRC=URL")]
    pub source_url: Vec<String>,
    /// Only read files matching this glob (relative to the source folder; repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// A folder above the sources that pages may include files from (VitePress `<<<` snippets
    /// and `@include`s such as `@/../../packages/x/src/a.ts` in a monorepo), and that pages and
    /// folders linked into the sources may lead to. By default nothing outside the source
    /// folder is read.
    #[arg(long, value_name = "DIR")]
    pub include_root: Option<PathBuf>,
    /// Markdown anchor rules: vitepress, docusaurus (= github), docsify, auto (default).
    #[arg(long, value_name = "NAME")]
    pub flavor: Option<String>,
    /// docent.toml to read the [index] section from (default: ./docent.toml if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, Args, Default)]
#[command(after_help = "Examples:
  # built mdBook HTML, lexical only: urls like ch03-02-data-types.html#scalar-types
  docent index ~/book/html --out book.idx

  # two namespaces (filter with `docent search --namespace reference`)
  docent index book=$(rustc --print sysroot)/share/doc/rust/html/book \\
               reference=$(rustc --print sysroot)/share/doc/rust/html/reference --out rust.idx

  # VitePress sources with local embeddings and absolute clean URLs
  docent index docs --out docs/public/docent.idx --embed local \\
               --base-url https://docs.example.com --clean-urls --exclude 'drafts/**'

  # OpenAI embeddings (key in OPENAI_API_KEY); re-running reuses unchanged vectors
  docent index docs --out docent.idx --embed openai --model text-embedding-3-small --dims 512

  # everything from docent.toml's [index] section
  docent index --config docent.toml")]
pub struct IndexArgs {
    /// Sources and how their pages get URLs and namespaces.
    #[command(flatten)]
    pub site: SiteArgs,
    /// Output index file.
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Embedding provider: openai, local or none (lexical only).
    #[arg(long, value_name = "PROVIDER")]
    pub embed: Option<String>,
    /// Embedding model (openai: text-embedding-3-small; local: multilingual-e5-small, or
    /// all-MiniLM-L6-v2 when it is the only one on this machine; an id or a folder).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Vector dimensions (openai models that accept `dimensions`).
    #[arg(long, value_name = "N")]
    pub dims: Option<usize>,
    /// How vectors are stored: binary (dims/8 bytes each), int4 (dims/2) or int8 (dims); by
    /// default binary, int4 for models like e5 whose sign bits lose too much (binary again
    /// when such an index is split with over 8,000 chunks).
    /// Finer codes rank the very best section first a little more often, at 4-8 times the vector
    /// bytes: check with `docent eval --vector-bits` on your own docs.
    #[arg(long, value_name = "Q")]
    pub quantization: Option<String>,
    /// Previous index to reuse vectors from (default: the existing --out file).
    #[arg(long, value_name = "OLD")]
    pub previous: Option<PathBuf>,
    /// Max cl100k tokens per chunk (default 350).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<usize>,
    /// openai: API base URL for embeddings (Azure, Ollama, vLLM, LiteLLM...).
    #[arg(long, value_name = "URL")]
    pub embed_base_url: Option<String>,
    /// openai: NAME of the environment variable holding the API key (default OPENAI_API_KEY).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Texts per embeddings request (openai: 1-2048; default 512, 32 for a server on this
    /// machine) or per forward pass (local).
    #[arg(long, value_name = "N")]
    pub embed_batch_size: Option<usize>,
    /// openai: seconds one embeddings request may take before it is retried (default 60, 300
    /// for a server on this machine).
    #[arg(long, value_name = "SECS")]
    pub embed_timeout: Option<u64>,
    /// Relevance floor to record in the index, 0 to 1 (see `docent eval`).
    #[arg(long, value_name = "F", value_parser = crate::query::parse_floor, allow_hyphen_values = true)]
    pub floor: Option<f32>,
    /// How this model wants questions and chunks (recorded in the index).
    #[command(flatten)]
    pub prompts: PromptArgs,
    /// Check that every link a hit can show (`url#anchor`) lands on an existing element of the
    /// built site: `--check-anchors` for built HTML sources, `--check-anchors=DIR` with the
    /// built site's folder for Markdown sources.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub check_anchors: Option<Option<PathBuf>>,
    /// local: never download a missing model from the Hugging Face hub (also HF_HUB_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,
    /// Split the index into an entry file (--out) and shards next to it, fetched by need, for
    /// big sites: auto (default: when one file would be over 2 MiB), always or never. See
    /// docs/index-format.md.
    #[arg(long, value_name = "WHEN")]
    pub split: Option<String>,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The model's prompts and query variant, when they are not what docent finds by itself (a
/// local folder's `config_sentence_transformers.json`, or the known e5 / bge prompts by model
/// name). Recorded in the index: every consumer then embeds questions the same way.
#[derive(Debug, Clone, Args, Default)]
pub struct PromptArgs {
    /// Text put before every question before embedding, e.g. "query: " for e5 models
    /// ("" = none).
    #[arg(long, value_name = "TEXT")]
    pub query_prompt: Option<String>,
    /// Text put before every chunk before embedding, e.g. "passage: " for e5 models ("" = none).
    #[arg(long, value_name = "TEXT")]
    pub passage_prompt: Option<String>,
    /// openai: model name for questions when the server picks the query variant by name
    /// (default: the --model name with "passage"/"document" replaced by "query", when it has one).
    #[arg(long, value_name = "M")]
    pub query_model: Option<String>,
    /// openai: `input_type` sent with questions (e.g. "query").
    #[arg(long, value_name = "T")]
    pub query_input_type: Option<String>,
    /// openai: `input_type` sent with chunks (e.g. "passage" or "document").
    #[arg(long, value_name = "T")]
    pub passage_input_type: Option<String>,
}

/// How `docent index` stores vectors unless told otherwise: 1 bit per component. On the open
/// eval set (BENCHMARKS.md §2), hybrid search finds as many gold sections in its top 10 as with
/// int8 (R@10 90.7 %, R@5 86.7 vs 88.0 %; the best one first less often: R@1 56.0 vs 62.7 %), and
/// the answer's context is the top sections, not the first one. The vectors shrink to an eighth,
/// which keeps a ~100-page site's first answer under 900 KB (BENCHMARKS.md §4.1).
pub const DEFAULT_QUANTIZATION: Quantization = Quantization::Binary;

/// One source folder and its namespace ("" = none).
#[derive(Debug, Clone, Default)]
pub struct SourceSpec {
    /// The folder.
    pub path: PathBuf,
    /// Namespace for its chunks ("" = none).
    pub namespace: String,
    /// Where its pages are published, over the settings' `base_url` (`--source-url`).
    pub base_url: Option<String>,
    /// The VitePress `rewrites` of the site whose source folder (`srcDir`) this is: a page's
    /// URL is its rewritten path's.
    pub rewrites: Vec<(String, String)>,
    /// The VitePress site's own attribute-list delimiters (`markdown.attrs`: `%{`, `}%`), read
    /// as `{`, `}` ([`SourceSpec::standard_attrs`]).
    pub attr_delimiters: Option<(String, String)>,
    /// The config of the VitePress site the folder belongs to, read once, as the settings are
    /// made ([`settings_from_args`]), for its `srcDir`, `rewrites`, attribute delimiters and
    /// `srcExclude` (applied as the files are listed). `None`: no such config, or a source not
    /// made by [`settings_from_args`] (then the listing looks for one itself).
    pub vitepress: Option<crate::vitepress::SiteConfig>,
}

impl SourceSpec {
    /// The config of the VitePress site the folder belongs to: the one read with the settings
    /// ([`SourceSpec::vitepress`]), else looked for now.
    fn vitepress_config(&self) -> Option<Cow<'_, crate::vitepress::SiteConfig>> {
        match &self.vitepress {
            Some(cfg) => Some(Cow::Borrowed(cfg)),
            None => crate::vitepress::find(&self.path).map(Cow::Owned),
        }
    }

    /// A Markdown page's text with the site's own attribute-list delimiters made the default
    /// ones ([`standard_attr_delimiters`]); a built HTML page's as it is.
    pub fn standard_attrs<'a>(&self, kind: SourceKind, text: Cow<'a, str>) -> Cow<'a, str> {
        let Some((left, right)) =
            self.attr_delimiters.as_ref().filter(|_| kind == SourceKind::Markdown)
        else {
            return text;
        };
        if let Cow::Owned(changed) = standard_attr_delimiters(&text, left, right) {
            return Cow::Owned(changed);
        }
        text
    }
}

/// `--namespace-dir DIR=NAME`: pages under `dir` (a folder of a source, `/`-separated, no
/// leading or trailing `/`) get `namespace`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamespaceDir {
    /// The folder, relative to the source folder.
    pub dir: String,
    /// The namespace of the pages under it.
    pub namespace: String,
}

impl NamespaceDir {
    /// Parses `DIR=NAME`; the error says what the flag wants.
    pub fn parse(s: &str) -> anyhow::Result<NamespaceDir> {
        let (dir, ns) = s.split_once('=').unwrap_or(("", ""));
        let dir = dir.trim().trim_matches('/').replace('\\', "/");
        let ns = ns.trim();
        if dir.is_empty() || ns.is_empty() || dir.split('/').any(|p| p == ".." || p == ".") {
            bail!("--namespace-dir {s:?}: write FOLDER=NAMESPACE with a folder inside the source, e.g. --namespace-dir fr=fr or --namespace-dir docs/1.0=1.0");
        }
        Ok(NamespaceDir { dir, namespace: ns.to_string() })
    }

    /// Whether this folder holds `rel` (a path relative to the source folder).
    pub fn holds(&self, rel: &str) -> bool {
        rel.strip_prefix(self.dir.as_str()).is_some_and(|rest| rest.starts_with('/'))
    }

    /// The namespace of the deepest entry whose folder holds `rel` (a path relative to the
    /// source folder), if any.
    pub fn lookup<'a>(dirs: &'a [NamespaceDir], rel: &str) -> Option<&'a str> {
        dirs.iter()
            .filter(|d| d.holds(rel))
            .max_by_key(|d| d.dir.len())
            .map(|d| d.namespace.as_str())
    }
}

/// Everything `build_index` needs.
#[derive(Debug, Clone)]
pub struct IndexSettings {
    /// Source folders.
    pub sources: Vec<SourceSpec>,
    /// Output file.
    pub out: PathBuf,
    /// `openai`, `local` or `none`.
    pub embed: String,
    /// Embedding model (provider default when None).
    pub model: Option<String>,
    /// Vector dimensions (`openai`).
    pub dims: Option<usize>,
    /// How vectors are stored in the file.
    pub quantization: Quantization,
    /// Public site URL; None = URLs relative to the source folder.
    pub base_url: Option<String>,
    /// Clean URLs (no `.html`) with a base URL.
    pub clean_urls: bool,
    /// Previous index to reuse vectors from; None = the output file if it exists.
    pub previous: Option<PathBuf>,
    /// Include globs (empty = all).
    pub include: Vec<String>,
    /// Exclude globs.
    pub exclude: Vec<String>,
    /// Where includes may be read from besides the source folder (`--include-root`).
    pub include_root: Option<PathBuf>,
    /// Markdown anchor flavor; None = detect per source folder.
    pub flavor: Option<Flavor>,
    /// Chunk sizes.
    pub chunk: ChunkOptions,
    /// `openai` settings (base URL, key variable, batch sizes...).
    pub embed_options: EmbedOptions,
    /// Relevance floor recorded in the header.
    pub floor: Option<f32>,
    /// Show progress bars.
    pub progress: bool,
    /// Namespaces by folder (`--namespace-dir`), over each source's own namespace.
    pub namespace_dirs: Vec<NamespaceDir>,
    /// Check links against the built site: None = no check, Some("") = each HTML source
    /// folder, Some(dir) = that folder (`--check-anchors[=DIR]`, see `anchors.rs`).
    pub check_anchors: Option<PathBuf>,
    /// Prompts and query variant set explicitly (flags, docent.toml); the rest is found by
    /// [`resolve_recipe`].
    pub prompts: PromptArgs,
    /// True when the quantization is docent's default rather than chosen (no `--quantization`,
    /// none in docent.toml): the build then moves from binary to int8 when its self-check finds
    /// binary loses too much for this model.
    pub auto_quantization: bool,
    /// Whether to write an entry and shards instead of one file.
    pub split: crate::shards::SplitMode,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            sources: Vec::new(),
            out: PathBuf::from("docent.idx"),
            embed: "none".into(),
            model: None,
            dims: None,
            quantization: DEFAULT_QUANTIZATION,
            base_url: None,
            clean_urls: false,
            previous: None,
            include: Vec::new(),
            exclude: Vec::new(),
            include_root: None,
            flavor: None,
            chunk: ChunkOptions::default(),
            embed_options: EmbedOptions::default(),
            floor: None,
            progress: false,
            namespace_dirs: Vec::new(),
            check_anchors: None,
            prompts: PromptArgs::default(),
            auto_quantization: false,
            split: crate::shards::SplitMode::Auto,
        }
    }
}

/// What `build_index` did.
#[derive(Debug, Clone, Default)]
pub struct IndexReport {
    /// Output file.
    pub out: PathBuf,
    /// Pages indexed.
    pub pages: usize,
    /// Pages skipped (noindex, redirects) or empty.
    pub skipped: usize,
    /// The first pages skipped (their source-relative paths) and why, for the report.
    pub skipped_pages: Vec<(String, &'static str)>,
    /// Chunks written.
    pub chunks: usize,
    /// Sum of the chunks' cl100k tokens.
    pub tokens: u64,
    /// Calls to the embedder.
    pub embed_calls: usize,
    /// Chunks embedded in this run.
    pub embedded: usize,
    /// New chunks (their section did not exist before).
    pub added: usize,
    /// Chunks of sections that existed but changed.
    pub updated: usize,
    /// Sections of the previous index that are gone.
    pub removed: usize,
    /// Chunks whose vector came from the previous index.
    pub reused: usize,
    /// Whether a previous index was found and compared.
    pub had_previous: bool,
    /// The shards, when the index was split (`--split`).
    pub split: Option<crate::shards::ShardReport>,
    /// Index file size in bytes.
    pub bytes: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Provider and model recorded.
    pub provider: String,
    /// Model recorded ("" for none).
    pub model: String,
    /// Notes to show the user (previous index not reusable, ...).
    pub notes: Vec<String>,
    /// How the vectors were stored (None without vectors).
    pub quantization: Option<Quantization>,
}

/// The build's self-check of the quantisations on the index's own vectors: each of up to 200
/// chunk vectors is a pseudo-query, and each quantisation is scored by the share of its exact
/// top-10 neighbours it keeps ([`docent_core::vector::ranking_agreement`]).
#[derive(Debug, Clone, Copy)]
pub struct SelfCheck {
    /// int8.
    pub int8: f32,
    /// Binary, relative to the mean vector (how docent stores it).
    pub binary: f32,
    /// Binary of the raw vectors (how docent stored it before the mean vector).
    pub binary_raw: f32,
}

impl SelfCheck {
    /// Pseudo-queries per check.
    const SAMPLES: usize = 200;
    /// Binary may keep this much less of the top 10 than int8 before the build stores int8.
    const MAX_BINARY_LOSS: f32 = 0.25;

    /// Runs the check on `vectors` with the mean vector `center`.
    pub fn run(vectors: &[Vec<f32>], center: &[f32]) -> SelfCheck {
        use docent_core::vector::ranking_agreement;
        SelfCheck {
            int8: ranking_agreement(vectors, 8, None, Self::SAMPLES),
            binary: ranking_agreement(vectors, 1, Some(center), Self::SAMPLES),
            binary_raw: ranking_agreement(vectors, 1, None, Self::SAMPLES),
        }
    }

    /// True when binary keeps much less of the ranking than int8.
    pub fn binary_loses_too_much(&self) -> bool {
        self.int8 - self.binary > Self::MAX_BINARY_LOSS
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        format!(
            "self-check, top-10 neighbours kept on the index's own chunks: int8 {:.2}, binary {:.2} \
             (relative to the mean vector; {:.2} without it)",
            self.int8, self.binary, self.binary_raw
        )
    }
}

/// Skipped pages the report names; the rest are counted.
const SKIPPED_NAMED: usize = 5;

/// Where one page's chunks are in the list being built.
struct PageSpan {
    rel: String,
    namespace: String,
    url: String,
    /// [`page_text_hash`] of its chunks.
    text: u64,
    chunks: std::ops::Range<usize>,
}

/// A hash of what a page's chunks say and where (anchors, headings, text), not of its URL.
fn page_text_hash(chunks: &[Chunk]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for c in chunks {
        (&c.anchor, &c.breadcrumb, &c.text).hash(&mut h);
    }
    h.finish()
}

/// The pages (indexes into `spans`) that are copies of another page of their namespace: the
/// same text under the same headings. mdBook writes its first chapter twice (`index.html` and
/// `intro.html`), which gave every answer from it two identical sources. Of a set of copies the
/// one kept is the first whose file is not an `index` page (the sidebar links to the chapter's
/// own URL), else the first.
fn copies(spans: &[PageSpan]) -> Vec<usize> {
    let is_index = |s: &PageSpan| {
        let file = s.rel.rsplit('/').next().unwrap_or(&s.rel);
        file.split('.').next() == Some("index")
    };
    let mut groups: HashMap<(&str, u64), Vec<usize>> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        groups.entry((s.namespace.as_str(), s.text)).or_default().push(i);
    }
    let mut out = Vec::new();
    for group in groups.values().filter(|g| g.len() > 1) {
        let keep = group.iter().copied().find(|&i| !is_index(&spans[i])).unwrap_or(group[0]);
        out.extend(group.iter().copied().filter(|&i| i != keep));
    }
    out.sort_unstable();
    out
}

impl IndexReport {
    /// Page `rel` was left out, for `why`.
    fn skip(&mut self, rel: &str, why: &'static str) {
        self.skipped += 1;
        if self.skipped_pages.len() < SKIPPED_NAMED {
            self.skipped_pages.push((rel.to_string(), why));
        }
    }

    /// The human summary printed at the end of `docent index`.
    pub fn summary(&self) -> String {
        let embed = if self.provider == "none" || self.provider.is_empty() {
            "none (lexical only)".to_string()
        } else {
            format!(
                "{} {}: {} calls, {} chunks embedded",
                self.provider, self.model, self.embed_calls, self.embedded
            )
        };
        let mut s = format!(
            "wrote {} ({})\n  pages    {} indexed, {} skipped\n  chunks   {} ({} tokens)\n  embed    {embed}\n",
            self.out.display(),
            human_bytes(self.bytes),
            self.pages,
            self.skipped,
            self.chunks,
            self.tokens,
        );
        if !self.skipped_pages.is_empty() {
            let named: Vec<String> =
                self.skipped_pages.iter().map(|(p, why)| format!("{p} ({why})")).collect();
            let more = self.skipped - self.skipped_pages.len();
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            s.push_str(&format!("  skipped  {}{more}\n", named.join(", ")));
        }
        if self.had_previous {
            s.push_str(&format!(
                "  changes  {} added, {} updated, {} removed, {} reused\n",
                self.added, self.updated, self.removed, self.reused
            ));
        } else {
            s.push_str(&format!("  changes  {} added (no previous index)\n", self.added));
        }
        if let Some(sp) = &self.split {
            s.push_str(&format!(
                "  split    entry {} + {} shards ({} written, {} unchanged, {} old removed)\n",
                human_bytes(sp.entry_bytes),
                sp.shards,
                sp.written,
                sp.shards - sp.written,
                sp.removed
            ));
        }
        s.push_str(&format!("  time     {:.2}s\n", self.elapsed.as_secs_f64()));
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        s
    }
}

/// Bytes as "12.3 KiB".
pub fn human_bytes(n: usize) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n} B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else {
        format!("{:.2} MiB", n / 1024.0 / 1024.0)
    }
}

/// `docent index` from parsed arguments (+ docent.toml).
pub fn run(args: IndexArgs) -> anyhow::Result<()> {
    let settings = settings_from_args(args)?;
    let report = build_index(&settings)?;
    out!("{}", report.summary());
    Ok(())
}

/// Merge flags over the `[index]` section of the config file.
pub fn settings_from_args(args: IndexArgs) -> anyhow::Result<IndexSettings> {
    let config_path = match &args.site.config {
        Some(p) => {
            if !p.exists() {
                bail!("config file {} does not exist", p.display());
            }
            Some(p.clone())
        }
        None => Some(PathBuf::from("docent.toml"))
            .filter(|p| p.exists() && args.site.sources.is_empty()),
    };
    let section = match &config_path {
        Some(p) => load_index_section(p)?.unwrap_or_default(),
        None => Default::default(),
    };
    let default_ns = args.site.namespace.clone().or(section.namespace.clone()).unwrap_or_default();
    let raw_sources = if args.site.sources.is_empty() {
        section.sources.clone()
    } else {
        args.site.sources.clone()
    };
    if raw_sources.is_empty() {
        bail!("no sources given: pass the folder(s) with your docs, e.g. `docent index docs --out docent.idx`, or set sources in docent.toml's [index] section");
    }
    // A source folder as given, without a trailing separator: what `--source-url` names.
    let folder = |path: &str| path.trim().trim_end_matches(['/', '\\']).to_string();
    let specs: Vec<(Option<&str>, &str)> = raw_sources.iter().map(|s| split_namespace(s)).collect();
    let mut source_urls = Vec::new();
    for s in args.site.source_url.iter().chain(&section.source_urls) {
        match s.split_once('=') {
            Some((src, url)) if !src.trim().is_empty() && !url.trim().is_empty() => {
                let src = folder(src);
                if !specs.iter().any(|(_, path)| folder(path) == src) {
                    bail!("--source-url {src:?} names no source; write it exactly as the source folder is given (sources: {})",
                        raw_sources.join(", "));
                }
                source_urls.push((src, url.trim()));
            }
            _ => bail!("--source-url {s:?}: write SRC=URL with SRC one of the sources, e.g. --source-url versioned_docs/version-1.0=/docs/1.0"),
        }
    }
    for (i, &(ns, path)) in specs.iter().enumerate() {
        if specs[..i].iter().any(|&(n, p)| n == ns && folder(p) == folder(path)) {
            bail!("source {path:?} is given twice; give each folder once (a second namespace of the same folder is written NAME=FOLDER)");
        }
    }
    for (flag, url) in source_urls.iter().map(|(_, u)| ("--source-url", *u)).chain(
        args.site.base_url.iter().chain(&section.base_url).map(|u| ("--base-url", u.as_str())),
    ) {
        if !(url.starts_with('/') || url.starts_with("http://") || url.starts_with("https://")) {
            bail!("{flag} {url:?} is neither a path from the site's root nor a full URL: write /docs/ or https://docs.example.com/docs/ (relative links would break on every page below the root)");
        }
    }
    let sources: Vec<SourceSpec> = specs
        .iter()
        .map(|&(ns, path)| SourceSpec {
            path: PathBuf::from(path),
            namespace: ns.map(str::to_string).unwrap_or_else(|| default_ns.clone()),
            base_url: source_urls
                .iter()
                .find(|(src, _)| *src == folder(path))
                .map(|(_, u)| u.to_string()),
            rewrites: Vec::new(),
            attr_delimiters: None,
            vitepress: None,
        })
        .collect();
    let vitepress_possible = matches!(
        args.site.flavor.as_deref().or(section.flavor.as_deref()),
        None | Some("auto") | Some("vitepress")
    );
    let sources = if vitepress_possible {
        sources.into_iter().map(in_vitepress_src_dir).collect()
    } else {
        sources
    };
    let Some(out) = args.out.clone().or(section.out.clone()) else {
        bail!("no output file: pass --out FILE (e.g. --out public/docent.idx) or set out in docent.toml's [index] section");
    };
    let flavor = match args.site.flavor.as_deref().or(section.flavor.as_deref()) {
        None | Some("auto") => None,
        Some(f) => Some(Flavor::parse(f).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown flavor {f:?}: use vitepress, docusaurus, github, docsify or auto"
            )
        })?),
    };
    let mut chunk = ChunkOptions::default();
    if let Some(m) = args.max_tokens.or(section.max_tokens) {
        if m < 32 {
            bail!("--max-tokens {m} is too small; use at least 32 (default 350)");
        }
        chunk.max_tokens = m;
    }
    if let Some(o) = section.overlap_tokens {
        chunk.overlap_tokens = o;
    }
    let embed = args
        .embed
        .clone()
        .or(section.embed.clone())
        .unwrap_or_else(|| "none".into())
        .to_ascii_lowercase();
    if !matches!(embed.as_str(), "openai" | "local" | "none") {
        bail!("unknown --embed {embed:?}: use openai, local or none");
    }
    let dims = args.dims.or(section.dims);
    let quantization = match args.quantization.as_deref().or(section.quantization.as_deref()) {
        None => DEFAULT_QUANTIZATION,
        Some(q) => {
            Quantization::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(q)).ok_or_else(
                || anyhow::anyhow!("unknown --quantization {q:?}: use binary, int4 or int8"),
            )?
        }
    };
    if embed == "none" {
        // `--embed none` is the default: a model named without `--embed` would give a lexical
        // index without a word.
        let given = [
            ("--model", args.model.is_some()),
            ("--dims", args.dims.is_some()),
            ("--quantization", args.quantization.is_some()),
            ("--embed-base-url", args.embed_base_url.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
            bail!("{flag} is given but the index has no vectors (--embed none, the default): add --embed local (a model on this machine) or --embed openai (an embeddings API), or drop {flag}");
        }
    }
    let embed_options = EmbedOptions {
        base_url: args.embed_base_url.clone().or(section.embed_base_url.clone()),
        api_key_env: args.api_key_env.clone().or(section.api_key_env.clone()),
        dimensions: dims,
        offline: args.offline,
        batch_size: args.embed_batch_size.or(section.embed_batch_size),
        timeout: match args.embed_timeout.or(section.embed_timeout_secs) {
            Some(0) => bail!(
                "an embed timeout of 0 s (--embed-timeout, embed_timeout_secs) lets no request \
                 finish: give the seconds one may take, e.g. 300"
            ),
            t => t.map(Duration::from_secs),
        },
        ..EmbedOptions::default()
    };
    Ok(IndexSettings {
        sources,
        out,
        embed,
        model: args.model.clone().or(section.model.clone()),
        dims,
        quantization,
        base_url: args.site.base_url.clone().or(section.base_url.clone()),
        clean_urls: args.site.clean_urls || section.clean_urls.unwrap_or(false),
        previous: args.previous.clone().or(section.previous.clone()),
        include: if args.site.include.is_empty() {
            section.include.clone()
        } else {
            args.site.include.clone()
        },
        exclude: if args.site.exclude.is_empty() {
            section.exclude.clone()
        } else {
            args.site.exclude.clone()
        },
        include_root: args.site.include_root.clone().or(section.include_root.clone()),
        flavor,
        chunk,
        embed_options,
        floor: args
            .floor
            .or(section.floor)
            .map(crate::query::check_floor)
            .transpose()
            .map_err(|e| anyhow::anyhow!("[index] floor: {e}"))?,
        progress: !args.quiet,
        namespace_dirs: args
            .site
            .namespace_dir
            .iter()
            .map(|s| NamespaceDir::parse(s))
            .collect::<anyhow::Result<_>>()?,
        check_anchors: match args.check_anchors.clone().map(Option::unwrap_or_default) {
            Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => bail!(
                "--check-anchors={}: no such folder; pass the generator's output folder (e.g. docs/.vitepress/dist or build), or --check-anchors alone for built HTML sources",
                dir.display()
            ),
            other => other,
        },
        prompts: PromptArgs {
            query_prompt: args.prompts.query_prompt.clone().or(section.query_prompt.clone()),
            passage_prompt: args.prompts.passage_prompt.clone().or(section.passage_prompt.clone()),
            query_model: args.prompts.query_model.clone().or(section.query_model.clone()),
            query_input_type: args
                .prompts
                .query_input_type
                .clone()
                .or(section.query_input_type.clone()),
            passage_input_type: args
                .prompts
                .passage_input_type
                .clone()
                .or(section.passage_input_type.clone()),
        },
        auto_quantization: args.quantization.is_none() && section.quantization.is_none(),
        split: match args.split.as_deref().or(section.split.as_deref()) {
            Some(s) => crate::shards::SplitMode::parse(s)?,
            None => crate::shards::SplitMode::Auto,
        },
    })
}

/// Build the index described by `settings`, creating the embedder it names (with the model's
/// passage prompt, see [`resolve_recipe`]).
pub fn build_index(settings: &IndexSettings) -> anyhow::Result<IndexReport> {
    let (chosen, note) = choose_local_model(settings)?;
    let settings = &chosen;
    let embedder: Option<Box<dyn Embedder>> = if settings.embed == "none" {
        None
    } else {
        let recipe = resolve_recipe(
            &settings.embed,
            settings.model.as_deref(),
            settings.embed_options.model_dir.as_deref(),
            &settings.prompts,
        )?;
        let opts = EmbedOptions {
            prompt: Some(recipe.passage_prompt.clone()),
            input_type: Some(recipe.passage_input_type.clone()),
            ..settings.embed_options.clone()
        };
        Some(
            docent_embed::make_embedder(&settings.embed, settings.model.as_deref(), &opts)
                .with_context(|| format!("cannot set up the {} embedder", settings.embed))?,
        )
    };
    let mut report = build_index_with(settings, embedder.as_deref())?;
    report.notes.splice(0..0, note);
    report.notes.extend(model_folder_note(settings));
    Ok(report)
}

/// With `--embed local --model FOLDER`: the index names the model by the folder's name only (a
/// path from the build machine does not belong in a public file), so say what a machine that
/// searches or serves it needs.
fn model_folder_note(settings: &IndexSettings) -> Option<String> {
    let dir = Path::new(settings.model.as_deref()?);
    if settings.embed != "local" || !dir.is_dir() {
        return None;
    }
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let name = abs.file_name()?.to_string_lossy();
    Some(format!(
        "the index names its model {name:?}, the folder's name: where it is searched (docent \
         search, eval, mcp) set DOCENT_MODEL_DIR={}, and point docent serve's local provider \
         (`path`) at that folder",
        abs.display()
    ))
}

/// Share of the docs' text (by letters) at and above which a build with all-MiniLM-L6-v2 (English
/// only) says that search by meaning will be poor: a site whose pages are a quarter in other
/// languages has readers who ask in them.
pub const NON_ENGLISH_SHARE: f32 = 0.25;

/// Pages read to judge the docs' language (spread evenly over the site).
const LANGUAGE_SAMPLE: usize = 200;

/// `settings`, with the model `--embed local` runs when none is named
/// ([`docent_embed::default_local_model`]: multilingual-e5-small, or all-MiniLM-L6-v2 when it
/// is the only model on this machine) and a note when that is all-MiniLM-L6-v2; or the model
/// of the existing index ([`with_previous_model`]).
fn choose_local_model(settings: &IndexSettings) -> anyhow::Result<(IndexSettings, Option<String>)> {
    if settings.embed != "local"
        || settings.model.is_some()
        || settings.embed_options.model_dir.is_some()
        || std::env::var_os("DOCENT_MODEL_DIR").is_some_and(|d| !d.is_empty())
    {
        return Ok((settings.clone(), None));
    }
    let default = docent_embed::default_local_model();
    let share = if docent_embed::is_minilm(&default) {
        non_english_share(&list_files(settings)?)
    } else {
        0.0
    };
    let (chosen, note) = model_for_language(settings, share, &default);
    let previous = settings
        .previous
        .clone()
        .or_else(|| Some(settings.out.clone()).filter(|p| p.exists()))
        .and_then(|p| Index::from_bytes(std::fs::read(p).ok()?).ok());
    let (chosen, note) =
        with_previous_model(chosen, note, previous.as_ref().map(Index::header), |m| {
            docent_embed::find_local_model(m).is_some()
        });
    if let (Some(note), true) = (&note, settings.progress) {
        eprintln!("note: {note}");
    }
    Ok((chosen, note))
}

/// `chosen` (with its `note`), or the model of the `previous` index when it was embedded
/// locally with a model this machine has (`findable`): a re-run with no model named keeps it.
/// So a rebuild never changes the model under `docent serve` (whose `[serve.embeddings] model`
/// must equal the index's) nor embeds every chunk again because another model became the
/// choice; the note then says what would have been chosen and how to switch.
pub fn with_previous_model(
    chosen: IndexSettings,
    note: Option<String>,
    previous: Option<&IndexHeader>,
    findable: impl Fn(&str) -> bool,
) -> (IndexSettings, Option<String>) {
    let Some(h) = previous.filter(|h| h.provider == "local" && !h.model.is_empty()) else {
        return (chosen, note);
    };
    if !findable(&h.model) {
        return (chosen, note);
    }
    let choice = chosen.model.clone().unwrap_or_else(|| docent_embed::DEFAULT_LOCAL_MODEL.into());
    let note = if choice.eq_ignore_ascii_case(&h.model) {
        note
    } else {
        Some(format!(
            "kept {}, the model the existing index was built with (docent serve's \
             [serve.embeddings] model must match it); {choice} would be chosen for a new index: \
             pass --model {choice} to switch (every chunk is embedded again)",
            h.model
        ))
    };
    (IndexSettings { model: Some(h.model.clone()), ..chosen }, note)
}

/// The decision of [`choose_local_model`]: `settings` with `default` (the model this machine
/// would run, [`docent_embed::default_local_model`]), and when that is the English-only
/// all-MiniLM-L6-v2 a note on how to get the default multilingual model, stronger when the
/// docs' non-English `share` calls for it.
pub fn model_for_language(
    settings: &IndexSettings,
    share: f32,
    default: &str,
) -> (IndexSettings, Option<String>) {
    let chosen = IndexSettings { model: Some(default.to_string()), ..settings.clone() };
    if !docent_embed::is_minilm(default) {
        return (chosen, None);
    }
    let e5 = docent_embed::MULTILINGUAL_LOCAL_MODEL;
    let get = format!(
        "pass --model {e5} (downloaded from the Hugging Face hub on first use, about 470 MB)"
    );
    let note = if share >= NON_ENGLISH_SHARE {
        let percent = (share * 100.0).round();
        format!("{percent}% of the docs' text is not English, but {default}, the only local model on this machine, reads English only, so search by meaning will be poor: {get}")
    } else {
        format!("embedded with {default}, the only local model on this machine; the default, {e5}, ranks better and understands questions in other languages: {get}")
    };
    (chosen, Some(note))
}

/// Share (by letters) of the sections' text that does not look English
/// ([`docent_core::lang::looks_non_english`]), over up to [`LANGUAGE_SAMPLE`] pages spread over
/// `files`, prose only. Pages that fail to parse are left out here (the build reports them).
pub fn non_english_share(files: &[(SourceFile, String, Flavor, &SourceSpec)]) -> f32 {
    language_sample(files).0
}

/// [`non_english_share`], and the language most of the non-English prose is written in
/// ([`docent_core::lang::language_name`]; `None` when there is none or it cannot be named).
pub fn language_sample(
    files: &[(SourceFile, String, Flavor, &SourceSpec)],
) -> (f32, Option<&'static str>) {
    let step = language_step(files.len());
    let mut tally = LanguageTally::default();
    let mut includes: HashMap<PathBuf, SourceIncludes> = HashMap::new();
    for (file, _, flavor, source) in files.iter().step_by(step) {
        let Ok(bytes) = std::fs::read(&file.path) else { continue };
        let content = source.standard_attrs(file.kind, page_text(&file.path, &bytes).0);
        let inc = includes
            .entry(source.path.clone())
            .or_insert_with(|| SourceIncludes::quiet(&source.path));
        if let Ok(Parsed::Page(page)) =
            parse_page_with(file.kind, &content, *flavor, &file.rel, inc)
        {
            tally.add(&page);
        }
    }
    tally.finish()
}

/// Every how many files a page is read for the language sample: [`LANGUAGE_SAMPLE`] pages spread
/// over the site.
fn language_step(files: usize) -> usize {
    files.div_ceil(LANGUAGE_SAMPLE).max(1)
}

/// Letters of the sampled pages' prose: in all, not English, and per named language.
#[derive(Default)]
struct LanguageTally {
    foreign: usize,
    all: usize,
    named: Vec<(&'static str, usize)>,
}

impl LanguageTally {
    fn add(&mut self, page: &docent_core::source::Page) {
        for section in &page.sections {
            // Prose only: code reads as English whatever the docs' language.
            let prose: Vec<&str> = section
                .blocks
                .iter()
                .filter_map(|b| match b {
                    docent_core::source::Block::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let prose = prose.join("\n");
            let letters = prose.chars().filter(|c| c.is_alphabetic()).count();
            self.all += letters;
            if docent_core::lang::looks_non_english(&prose) {
                self.foreign += letters;
                if let Some(name) = docent_core::lang::language_name(&prose) {
                    match self.named.iter_mut().find(|(n, _)| *n == name) {
                        Some(e) => e.1 += letters,
                        None => self.named.push((name, letters)),
                    }
                }
            }
        }
    }

    /// The non-English share, and the main non-English language.
    fn finish(&self) -> (f32, Option<&'static str>) {
        let main = self
            .named
            .iter()
            .filter(|(n, _)| *n != "English")
            .max_by_key(|(_, letters)| *letters)
            .map(|(n, _)| *n);
        if self.all == 0 {
            (0.0, None)
        } else {
            (self.foreign as f32 / self.all as f32, main)
        }
    }
}

/// What the index records about how the model wants its inputs: the explicit settings first;
/// then, for `local`, the prompts the model folder declares (`config_sentence_transformers.json`);
/// then the known prompts of e5 and bge models by name. For `openai`, a model named as a
/// passage variant (`e5-passage`) gets its query variant (`e5-query`) for questions.
pub fn resolve_recipe(
    embed: &str,
    model: Option<&str>,
    model_dir: Option<&Path>,
    explicit: &PromptArgs,
) -> anyhow::Result<EmbedRecipe> {
    let mut r = EmbedRecipe::default();
    if embed == "none" {
        return Ok(r);
    }
    // The model when none is named, looked for only then (the local default probes the disk).
    let model = match model {
        Some(m) => m.to_string(),
        None => match (embed, model_dir) {
            ("local", Some(dir)) => docent_embed::local_model_id(dir),
            ("local", None) => docent_embed::default_local_model(),
            _ => docent_embed::DEFAULT_OPENAI_MODEL.to_string(),
        },
    };
    let model = model.as_str();
    let mut declared = (None, None);
    if embed == "local" {
        let dir = if let Some(d) = model_dir {
            Some(d.to_path_buf())
        } else if Path::new(model).is_dir() {
            Some(PathBuf::from(model))
        } else {
            docent_embed::find_local_model(model)
        };
        if let Some(dir) = dir {
            declared = docent_embed::model_prompts(&dir)?;
        }
    }
    let known = docent_embed::known_prompts(model);
    if declared.0.is_none() && declared.1.is_none() {
        if let Some((q, p)) = known {
            declared = (Some(q.to_string()), Some(p.to_string()));
        }
    }
    r.query_prompt = explicit.query_prompt.clone().or(declared.0).unwrap_or_default();
    r.passage_prompt = explicit.passage_prompt.clone().or(declared.1).unwrap_or_default();
    if embed == "openai" {
        r.query_model = explicit
            .query_model
            .clone()
            .or_else(|| docent_embed::query_model_for(model))
            .filter(|q| q != model)
            .unwrap_or_default();
        r.query_input_type = explicit.query_input_type.clone().unwrap_or_default();
        r.passage_input_type = explicit.passage_input_type.clone().unwrap_or_default();
    } else if explicit.query_model.is_some()
        || explicit.query_input_type.is_some()
        || explicit.passage_input_type.is_some()
    {
        bail!("--query-model, --query-input-type and --passage-input-type are for --embed openai (servers that choose the variant); a local model takes prompts: use --query-prompt / --passage-prompt");
    }
    Ok(r)
}

/// A source folder that is a VitePress root whose config sets `srcDir` (`srcDir: 'src'`):
/// the pages are in that folder, and their URLs and includes are relative to it. A `srcDir`
/// that is not a folder is a warning naming the config (the root's pages are read).
/// It also takes the config's `rewrites` when the folder is the site's source folder, and warns
/// when they are written in a way docent does not read (a function).
fn in_vitepress_src_dir(mut src: SourceSpec) -> SourceSpec {
    let Some(cfg) = crate::vitepress::find(&src.path) else { return src };
    let Ok(mut here) = src.path.canonicalize() else { return src };
    let src_folder = cfg.src_folder().canonicalize().ok().filter(|f| f.is_dir());
    if let Some(dir) = cfg.src_dir.as_deref().filter(|_| here == cfg.root) {
        match &src_folder {
            Some(folder) => {
                eprintln!(
                    "note: {}: the VitePress config's srcDir is {dir:?}: pages are read from {}",
                    src.path.display(),
                    src.path.join(dir).display()
                );
                src.path = src.path.join(dir);
                here = folder.clone();
            }
            None => eprintln!(
                "warning: {}: the VitePress config ({}) sets srcDir to {dir:?}, but {} is not a folder: pages are read from {} instead. Fix srcDir in the config, or pass the folder that holds the pages",
                src.path.display(),
                cfg.file.display(),
                src.path.join(dir).display(),
                src.path.display()
            ),
        }
    }
    if let Some((left, right)) = &cfg.attr_delimiters {
        eprintln!(
            "note: {}: the VitePress config's markdown.attrs delimiters are {left} and {right}: attribute lists in them set heading ids",
            src.path.display()
        );
        src.attr_delimiters = cfg.attr_delimiters.clone();
    }
    let site_source = src_folder.as_ref() == Some(&here);
    if let Some(how) = cfg.rewrites_unread.filter(|_| site_source) {
        eprintln!(
            "warning: {}: the VitePress config's rewrites are {how}, which docent does not run: pages keep their files' URLs (en/guide/a.md is en/guide/a.html), which the site may not serve. Write rewrites as an object of strings ({{ 'en/:rest*': ':rest*' }}), or index the built HTML",
            src.path.display()
        );
    }
    if !cfg.rewrites.is_empty() {
        if site_source {
            eprintln!(
                "note: {}: the VitePress config's rewrites ({} rules) give pages their URLs",
                src.path.display(),
                cfg.rewrites.len()
            );
            src.rewrites = cfg.rewrites.clone();
        } else {
            eprintln!(
                "note: {}: the VitePress config has rewrites, applied only when the site's source folder is indexed: pages here keep their files' URLs",
                src.path.display()
            );
        }
    }
    src.vitepress = Some(cfg);
    src
}

/// The VitePress `srcExclude` globs of config `cfg` that apply to the files of source folder
/// `root`, matched against its files' paths relative to it: the config's, moved from the site's
/// `srcDir` to `root` when `root` is a folder inside it.
fn vitepress_excludes(
    root: &Path,
    cfg: &crate::vitepress::SiteConfig,
) -> anyhow::Result<Option<(globset::GlobSet, String)>> {
    let (Ok(here), Ok(src)) = (root.canonicalize(), cfg.src_folder().canonicalize()) else {
        return Ok(None);
    };
    let Ok(inside) = here.strip_prefix(&src) else { return Ok(None) };
    let prefix = inside.to_string_lossy().replace('\\', "/");
    let prefix = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
    let mut b = globset::GlobSetBuilder::new();
    for p in &cfg.src_exclude {
        match globset::Glob::new(p.trim_start_matches("./")) {
            Ok(g) => {
                b.add(g);
            }
            Err(e) => eprintln!(
                "warning: {}: the VitePress config's srcExclude {p:?} is not a glob docent reads ({e}); pass --exclude instead",
                root.display()
            ),
        }
    }
    Ok(Some((b.build()?, prefix)))
}

/// The files of every source (after --include/--exclude), each with its namespace (from the
/// source or --namespace-dir), its Markdown flavor and its source. An empty source is an error
/// that says what to check.
pub fn list_files(
    settings: &IndexSettings,
) -> anyhow::Result<Vec<(SourceFile, String, Flavor, &SourceSpec)>> {
    let include = globset(&settings.include, "include")?;
    let exclude = globset(&settings.exclude, "exclude")?;
    // Pages may be links to files under the source folder or under --include-root, no further.
    let within = settings.include_root.as_deref().and_then(|d| d.canonicalize().ok());
    let mut files = Vec::new();
    for src in &settings.sources {
        let found = find_files(&src.path, within.as_deref(), include.as_ref(), exclude.as_ref())?;
        if found.is_empty() {
            bail!(
                "no Markdown (.md, .mdx) or HTML (.html) pages in {}{}; check the folder (for a built site, point at its output folder)",
                src.path.display(),
                if include.is_some() || exclude.is_some() { " after applying --include/--exclude" } else { "" }
            );
        }
        let flavor = settings.flavor.unwrap_or_else(|| detect_flavor(&src.path));
        let mut found = pages_of(&src.path, flavor, found);
        // VitePress makes no page of what its config's srcExclude names.
        let vitepress = (flavor == Flavor::VitePress).then(|| src.vitepress_config()).flatten();
        if let Some(cfg) = vitepress {
            if let Some((globs, prefix)) = vitepress_excludes(&src.path, &cfg)? {
                let before = found.len();
                found.retain(|f| {
                    f.kind != SourceKind::Markdown || !globs.is_match(format!("{prefix}{}", f.rel))
                });
                if found.len() < before {
                    eprintln!(
                        "note: {}: {} files left out, as the VitePress config's srcExclude says",
                        src.path.display(),
                        before - found.len()
                    );
                }
            }
        }
        // Docusaurus makes no page of `_` files and folders: they are partials, inlined where
        // pages import them.
        let partials = flavor == Flavor::Docusaurus;
        let found = found.into_iter().filter(|f| {
            !(partials && f.kind == SourceKind::Markdown && is_docusaurus_partial(&f.rel))
        });
        files.extend(found.map(|f| {
            let ns = NamespaceDir::lookup(&settings.namespace_dirs, &f.rel)
                .map_or_else(|| src.namespace.clone(), str::to_string);
            (f, ns, flavor, src)
        }));
    }
    // A folder that holds no page (a typo, or a path given from the wrong place) would leave
    // its pages in the source's namespace without a word. A warning, not an error: the plugins
    // name every locale a site configures, and one may have no page yet.
    for d in &settings.namespace_dirs {
        if !files.iter().any(|(f, ..)| d.holds(&f.rel)) {
            eprintln!(
                "warning: --namespace-dir {}={}: no page is under {:?}; the folder is relative to the source folder (e.g. --namespace-dir fr=fr for SRC/fr/)",
                d.dir, d.namespace, d.dir
            );
        }
    }
    Ok(files)
}

/// Reads the files Markdown pages include (Docusaurus partials, VitePress `@include`s and `<<<`
/// snippets) from a source folder, never outside it; each warning (a missing file or region) is
/// printed once to stderr.
pub struct SourceIncludes {
    root: PathBuf,
    canonical_root: Option<PathBuf>,
    warned: std::cell::RefCell<HashSet<String>>,
    /// How many warnings of each kind ([`warning_kind`]) were given: past
    /// [`WARNINGS_PER_KIND`] they are counted, and the count is printed once at the end.
    kinds: std::cell::RefCell<HashMap<String, usize>>,
    /// Say nothing: a second reading of pages (the language sample) whose warnings the build
    /// prints once already.
    quiet: bool,
    /// Where the source folder is under its Docusaurus site's root (`@site/`), when the site's
    /// config is in it or up to two folders above it.
    site_folder: Option<String>,
    /// `--include-root` (canonical): a folder above the source folder that files may also be
    /// read from.
    include_root: Option<PathBuf>,
    /// The site's own attribute-list delimiters ([`SourceSpec::attr_delimiters`]), made the
    /// default ones in included Markdown files.
    attr_delimiters: Option<(String, String)>,
}

/// Warnings of one kind printed before the rest are only counted: a site whose 440 pages each
/// import a playground from outside the docs folder gets five lines and a count, not 440.
const WARNINGS_PER_KIND: usize = 5;

/// What a warning says without the page and the file it names: the part after the page's
/// `path: `, quoted names and paths replaced by `…`.
fn warning_kind(message: &str) -> String {
    let rest = message.split_once(": ").map_or(message, |(_, r)| r);
    let mut out = String::with_capacity(rest.len());
    let mut quoted = false;
    for c in rest.chars() {
        match c {
            '"' if quoted => {
                quoted = false;
                out.push_str("…\"");
            }
            '"' => {
                quoted = true;
                out.push('"');
            }
            _ if quoted => {}
            c => out.push(c),
        }
    }
    out
}

impl Drop for SourceIncludes {
    fn drop(&mut self) {
        let kinds = self.kinds.borrow();
        let mut more: Vec<(&String, &usize)> =
            kinds.iter().filter(|(_, &n)| n > WARNINGS_PER_KIND).collect();
        more.sort();
        for (kind, n) in more {
            eprintln!(
                "warning: {}: {} more like the above not shown: {kind}",
                self.root.display(),
                n - WARNINGS_PER_KIND
            );
        }
    }
}

/// Largest included file read, in bytes (a bigger one is a warning).
const MAX_INCLUDE_BYTES: u64 = 4 << 20;

impl SourceIncludes {
    /// Includes of the pages in the source folder `root`.
    pub fn new(root: &Path) -> SourceIncludes {
        let canonical_root = root.canonicalize().ok();
        SourceIncludes {
            root: root.to_path_buf(),
            site_folder: canonical_root.as_deref().and_then(crate::walk::docusaurus_site_folder),
            canonical_root,
            warned: Default::default(),
            kinds: Default::default(),
            quiet: false,
            include_root: None,
            attr_delimiters: None,
        }
    }

    /// The includes of `source`'s pages, made once per source folder (with `--include-root`).
    pub fn of<'a>(
        made: &'a mut HashMap<PathBuf, SourceIncludes>,
        source: &SourceSpec,
        settings: &IndexSettings,
    ) -> anyhow::Result<&'a SourceIncludes> {
        if !made.contains_key(&source.path) {
            let mut inc = SourceIncludes::new(&source.path)
                .with_include_root(settings.include_root.as_deref())?;
            inc.attr_delimiters = source.attr_delimiters.clone();
            made.insert(source.path.clone(), inc);
        }
        Ok(&made[&source.path])
    }

    /// Includes may also be read from anywhere under `dir` (`--include-root`), a folder that
    /// holds the source folder; an error that says so when it does not.
    pub fn with_include_root(mut self, dir: Option<&Path>) -> anyhow::Result<SourceIncludes> {
        let Some(dir) = dir else { return Ok(self) };
        let allowed = dir.canonicalize().with_context(|| {
            format!(
                "--include-root {}: no such folder; pass a folder that holds the sources",
                dir.display()
            )
        })?;
        if !self.canonical_root.as_ref().is_some_and(|r| r.starts_with(&allowed)) {
            bail!(
                "--include-root {} does not hold the source folder {}; pass a folder above it (e.g. the repository's root)",
                dir.display(),
                self.root.display()
            );
        }
        self.include_root = Some(allowed);
        Ok(self)
    }

    /// Like [`SourceIncludes::new`], without warnings.
    fn quiet(root: &Path) -> SourceIncludes {
        let mut inc = SourceIncludes::new(root);
        inc.quiet = true;
        inc
    }
}

impl Includes for SourceIncludes {
    fn read(&self, path: &str) -> Option<String> {
        let file = self.root.join(path);
        let real = file.canonicalize().ok()?;
        // Nothing outside the source folder (or `--include-root`), a symlink's target included.
        if let Some(allowed) = self.include_root.as_ref().or(self.canonical_root.as_ref()) {
            if !real.starts_with(allowed) {
                self.warn(format!(
                    "{path} is outside {}; not read (pass --include-root with a folder above the sources to allow it)",
                    allowed.display()
                ));
                return None;
            }
        }
        let meta = std::fs::metadata(&real).ok()?;
        if !meta.is_file() {
            return None;
        }
        if meta.len() > MAX_INCLUDE_BYTES {
            self.warn(format!("{path} is larger than {} bytes; not included", MAX_INCLUDE_BYTES));
            return None;
        }
        let bytes = std::fs::read(&real).ok()?;
        let (text, warning) = page_text(Path::new(path), &bytes);
        if let Some(w) = warning {
            self.warn(w);
        }
        match &self.attr_delimiters {
            Some((left, right)) if path.ends_with(".md") => {
                Some(standard_attr_delimiters(&text, left, right).into_owned())
            }
            _ => Some(text.into_owned()),
        }
    }

    fn warn(&self, message: String) {
        if self.quiet || !self.warned.borrow_mut().insert(message.clone()) {
            return;
        }
        let mut kinds = self.kinds.borrow_mut();
        let seen = kinds.entry(warning_kind(&message)).or_default();
        *seen += 1;
        if *seen <= WARNINGS_PER_KIND {
            eprintln!("warning: {}: {message}", self.root.display());
        }
    }

    fn site_folder(&self) -> Option<&str> {
        self.site_folder.as_deref()
    }

    fn may_leave(&self) -> bool {
        self.include_root.is_some()
    }
}

/// A page's (or an included file's) text from its bytes ([`decode_text`]), and a warning naming
/// `path` when it is not UTF-8: read as Windows-1252 (Latin-1), or as UTF-8 with its invalid
/// bytes replaced.
pub fn page_text<'a>(path: &Path, bytes: &'a [u8]) -> (std::borrow::Cow<'a, str>, Option<String>) {
    let (text, encoding) = decode_text(bytes);
    let how = match encoding {
        Encoding::Utf8 => return (text, None),
        Encoding::Windows1252 => "read as Windows-1252 (Latin-1)",
        Encoding::Utf8Lossy => "read as UTF-8 with its invalid bytes replaced (U+FFFD)",
    };
    let w = format!("{} is not UTF-8: {how}; save it as UTF-8", path.display());
    (text, Some(w))
}

/// The URL of a page (as its chunks get it): relative to its source folder, or under its
/// source's URL (`--source-url`) or `base_url`; Docusaurus' `slug` frontmatter moves a doc, and
/// so does its `id` when there is no slug (VitePress and Docsify have neither).
pub fn page_url(
    settings: &IndexSettings,
    source: &SourceSpec,
    file: &SourceFile,
    flavor: Flavor,
    content: &str,
) -> String {
    page_url_checked(settings, source, file, flavor, content).0
}

/// A VitePress page's path for [`page_url_with_slug`], which gives a `README.md` its folder's
/// URL (Docsify's and GitHub's way): a README stands as the `.html` page VitePress makes of it.
fn vitepress_readme(rel: &str) -> String {
    let (dir, file) = rel.rsplit_once(['/', '\\']).map_or(("", rel), |(d, f)| (d, f));
    match file.rsplit_once('.') {
        Some((stem, _)) if stem.eq_ignore_ascii_case("readme") => {
            let page = format!("{stem}.html");
            if dir.is_empty() {
                page
            } else {
                format!("{dir}/{page}")
            }
        }
        _ => rel.to_string(),
    }
}

/// [`page_url`], plus warnings naming the file when its `slug:` was refused (a slug is a path
/// on the site, and one a browser would read as a link to another scheme or host,
/// `https:/attacker.example/`, `//host`, `javascript:`, is ignored, the page keeping its
/// file's URL) or its frontmatter has values that are not strings (`slug: [a, b]`, an unclosed
/// quote: not read, [`frontmatter_problems`]).
pub fn page_url_checked(
    settings: &IndexSettings,
    source: &SourceSpec,
    file: &SourceFile,
    flavor: Flavor,
    content: &str,
) -> (String, Vec<String>) {
    let style = if settings.clean_urls { UrlStyle::Clean } else { UrlStyle::Html };
    // Docusaurus routes `01-intro.md` at `intro` and `guide/guide.md` at `guide/`.
    let rel = match (file.kind, flavor) {
        (SourceKind::Markdown, Flavor::Docusaurus) => docusaurus_route(&file.rel),
        // VitePress makes a page of `README.md` like any other file (`README.html`): only
        // `index.md` is its folder's page.
        (SourceKind::Markdown, Flavor::VitePress) => {
            let rel = file.rel.replace('\\', "/");
            vitepress_readme(&crate::vitepress::rewrite(&source.rewrites, &rel).unwrap_or(rel))
        }
        _ => file.rel.clone(),
    };
    let slug = match (file.kind, flavor) {
        (SourceKind::Markdown, Flavor::Docusaurus | Flavor::GitHub) => {
            frontmatter(content).0.route_slug(&rel)
        }
        _ => None,
    };
    let mut warnings: Vec<String> = if file.kind == SourceKind::Markdown {
        let problems = frontmatter_problems(content).into_iter();
        problems
            .map(|p| {
                format!("{}: frontmatter {p}; fix the YAML (quote the value)", file.path.display())
            })
            .collect()
    } else {
        Vec::new()
    };
    warnings.extend(slug.as_deref().and_then(|s| {
        let problem = check_slug(s.trim()).err()?;
        Some(format!(
            "{}: slug {:?} ignored ({problem}); the page keeps the URL of its file",
            file.path.display(),
            s.trim()
        ))
    }));
    let base = source.base_url.as_deref().or(settings.base_url.as_deref());
    let mut url = page_url_with_slug(&rel, slug.as_deref(), base, style);
    if file.kind == SourceKind::Html {
        // The form the site links (`/docs/features` or `/docs/features/`), from the page's own
        // canonical link when it names this page.
        let index_file = file.rel.rsplit(['/', '\\']).next() == Some("index.html");
        if let Some(aligned) = docent_core::source::canonical::canonical_href(content)
            .and_then(|c| docent_core::source::canonical::align_to_canonical(&url, index_file, &c))
        {
            url = aligned;
        }
    }
    (url, warnings)
}

/// Build with a given embedder (None = lexical only). Tests pass a counting embedder here.
pub fn build_index_with(
    settings: &IndexSettings,
    embedder: Option<&dyn Embedder>,
) -> anyhow::Result<IndexReport> {
    let started = Instant::now();
    let mut report = IndexReport { out: settings.out.clone(), ..Default::default() };
    if settings.sources.is_empty() {
        bail!("no sources given: pass the folder(s) with your docs");
    }
    check_writable(&settings.out)?;

    // 1. Find files.
    let files = list_files(settings)?;
    let mut anchors =
        settings.check_anchors.as_ref().map(|_| AnchorChecker::new(settings.base_url.as_deref()));

    // 2. Parse and chunk.
    let info = embedder.map(|e| e.info());
    let limit = info.as_ref().and_then(|i| i.max_input_tokens);
    let fits_fn = |text: &str| -> bool {
        match (embedder, limit) {
            (Some(e), Some(max)) => e.count_tokens(text).map(|n| n <= max).unwrap_or(true),
            _ => true,
        }
    };
    let count_fn = |text: &str| cl100k_tokens(text);
    // A model limit (e.g. 256 word pieces) is a good first guess for the cl100k limit too:
    // cl100k needs fewer tokens than WordPiece for the same text, so few chunks need re-splitting.
    let mut chunk_opts = settings.chunk;
    if let Some(m) = limit {
        chunk_opts.max_tokens = chunk_opts.max_tokens.min(m.saturating_sub(16).max(32));
    }
    let chunker = Chunker {
        opts: chunk_opts,
        count: &count_fn,
        fits: if limit.is_some() { Some(&fits_fn) } else { None },
    };
    let bar = progress(settings.progress, files.len() as u64, "chunking");
    let mut chunks: Vec<Chunk> = Vec::new();
    // Each (namespace, URL) indexed, and the file it came from first.
    let mut pages: HashMap<(String, String), String> = HashMap::new();
    // Each page's chunks in `chunks`, to leave out a page that is a copy of another.
    let mut spans: Vec<PageSpan> = Vec::new();
    let mut includes: HashMap<PathBuf, SourceIncludes> = HashMap::new();
    // The header's language figures: the pages `language_sample` would read, tallied as they are
    // parsed here instead of reading them again.
    let (language_every, mut languages) = (language_step(files.len()), LanguageTally::default());
    for (n, (file, namespace, flavor, source)) in files.iter().enumerate() {
        bar.set_message(file.rel.clone());
        // A page that cannot be read (removed since the folder was listed, a device error, a
        // link into /proc) is left out with a warning, like a folder that cannot be listed.
        let bytes = match std::fs::read(&file.path) {
            Ok(b) => b,
            Err(e) => {
                let w = format!(
                    "cannot read {} ({e}); it is left out of the index",
                    file.path.display()
                );
                bar.suspend(|| eprintln!("warning: {w}"));
                report.notes.push(w);
                report.skip(&file.rel, "cannot be read");
                bar.inc(1);
                continue;
            }
        };
        let (content, warning) = page_text(&file.path, &bytes);
        if let Some(w) = warning {
            bar.suspend(|| eprintln!("warning: {w}"));
            report.notes.push(w);
        }
        let content = source.standard_attrs(file.kind, content);
        let inc = SourceIncludes::of(&mut includes, source, settings)?;
        let page = match parse_page_with(file.kind, &content, *flavor, &file.rel, inc)? {
            Parsed::Page(p) => p,
            Parsed::Skipped(why) => {
                report.skip(&file.rel, why);
                bar.inc(1);
                continue;
            }
        };
        if n % language_every == 0 {
            languages.add(&page);
        }
        let (url, warnings) = page_url_checked(settings, source, file, *flavor, &content);
        for w in warnings {
            bar.suspend(|| eprintln!("warning: {w}"));
            report.notes.push(w);
        }
        let page_chunks = chunker.chunk_page(&page, &url, namespace)?;
        if let (Some(checker), Some(dir)) = (anchors.as_mut(), &settings.check_anchors) {
            let site = if !dir.as_os_str().is_empty() {
                dir.as_path()
            } else if file.kind == SourceKind::Html {
                source.path.as_path()
            } else {
                bail!("--check-anchors needs the built site for Markdown sources: pass --check-anchors=BUILD_DIR (the generator's output folder), or index the built HTML");
            };
            checker.check_page(site, &file.rel, &page_chunks);
        }
        if page_chunks.is_empty() {
            report.skip(&file.rel, "no text");
        } else {
            spans.push(PageSpan {
                rel: file.rel.clone(),
                namespace: namespace.clone(),
                url: url.clone(),
                text: page_text_hash(&page_chunks),
                chunks: chunks.len()..chunks.len() + page_chunks.len(),
            });
            let key = (namespace.clone(), url);
            if let Some(first) = pages.get(&key) {
                // `a.md` beside `a.mdx`, two names that are not UTF-8, a `rewrites` collision:
                // the site can serve only one of them at that URL.
                let w = format!(
                    "{} and {first} are both served at {}: their sections share one page in the index (rename or exclude one)",
                    file.rel, key.1
                );
                bar.suspend(|| eprintln!("warning: {w}"));
                report.notes.push(w);
            } else {
                pages.insert(key, file.rel.clone());
            }
            chunks.extend(page_chunks);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut copied = vec![false; chunks.len()];
    for copy in copies(&spans) {
        let s = &spans[copy];
        report.skip(&s.rel, "the same text as another page");
        pages.remove(&(s.namespace.clone(), s.url.clone()));
        copied[s.chunks.clone()].iter_mut().for_each(|c| *c = true);
    }
    let mut copied = copied.into_iter();
    chunks.retain(|_| !copied.next().unwrap_or(false));
    if let Some(checker) = &anchors {
        checker.finish()?;
        report.notes.push(format!(
            "--check-anchors: all {} links land on an existing heading",
            checker.checked()
        ));
    }
    if chunks.is_empty() {
        bail!("the site is empty: no page had any text to index ({} pages skipped as noindex, redirects or empty)", report.skipped);
    }
    report.pages = pages.len();
    report.chunks = chunks.len();
    report.tokens = chunks.iter().map(|c| c.tokens as u64).sum();

    // 3. Compare with the previous index; reuse vectors.
    let previous_path =
        settings.previous.clone().or_else(|| Some(settings.out.clone()).filter(|p| p.exists()));
    let previous = match &previous_path {
        Some(p) => match load_previous(p, settings.previous.is_some()) {
            Ok(idx) => Some(idx),
            Err(e) if settings.previous.is_none() => {
                report.notes.push(format!("existing {} not reused: {e}", p.display()));
                None
            }
            Err(e) => return Err(e),
        },
        None => None,
    };
    let (provider, model, dims) = match &info {
        Some(i) => (i.provider.clone(), i.model.clone(), i.dims),
        None => ("none".to_string(), String::new(), 0),
    };
    let mut recipe = match &info {
        Some(i) => resolve_recipe(
            &i.provider,
            settings.model.as_deref().or(Some(&i.model)),
            settings.embed_options.model_dir.as_deref(),
            &settings.prompts,
        )?,
        None => EmbedRecipe::default(),
    };
    if let Some(i) = &info {
        if i.prompt != recipe.passage_prompt {
            bail!(
                "the embedder puts {:?} before each chunk but the index would record the passage prompt {:?}; \
                 set --passage-prompt to the one the embedder uses",
                i.prompt,
                recipe.passage_prompt
            );
        }
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; chunks.len()];
    if let Some(prev) = &previous {
        report.had_previous = true;
        let ph = prev.header();
        let same_model = ph.provider == provider
            && ph.model == model
            && (dims == 0 || ph.dims as usize == dims)
            && ph.embedding.passage_prompt == recipe.passage_prompt
            && ph.embedding.passage_input_type == recipe.passage_input_type;
        // Stored vectors are reused when they are at least as fine as the new file's: int8 ones
        // can be stored at 4 bits, but 4-bit ones cannot become int8 again.
        // An anisotropic model's vectors will be stored as int4 by default (see below), so its
        // binary codes are not fine enough.
        // A big split index of such a model stores binary (see the write below): a rebuild of
        // one keeps its codes.
        let big_split = prev.is_split() && prev.len() > crate::shards::binary_split_chunks();
        let target = if settings.auto_quantization
            && settings.quantization == Quantization::Binary
            && ph.embedding.anisotropic()
            && !(big_split && ph.quantization == Quantization::Binary)
        {
            Quantization::Int4
        } else {
            settings.quantization
        };
        let fine_enough = ph.quantization.bits() >= target.bits();
        if embedder.is_some() && same_model && !fine_enough {
            report.notes.push(format!(
                "previous index stores {} vectors, coarser than {}; all chunks are embedded again",
                ph.quantization.name(),
                target.name()
            ));
        }
        let reuse = same_model && fine_enough;
        let mut by_hash: HashMap<u64, usize> = HashMap::new();
        let mut old_links: HashSet<String> = HashSet::new();
        for i in 0..prev.len() {
            let c = prev.chunk(i);
            by_hash.entry(c.hash).or_insert(i);
            old_links.insert(format!("{}\u{0}{}", c.namespace, c.link()));
        }
        let new_links: HashSet<String> =
            chunks.iter().map(|c| format!("{}\u{0}{}", c.namespace, c.link())).collect();
        report.removed = old_links.difference(&new_links).count();
        if embedder.is_some() && !same_model {
            report.notes.push(format!(
                "previous index was built with {} {} ({} dims); all chunks are embedded again",
                ph.provider, ph.model, ph.dims
            ));
        }
        for (i, c) in chunks.iter().enumerate() {
            match by_hash.get(&c.hash) {
                Some(&j) => {
                    if embedder.is_none() {
                        report.reused += 1;
                    } else if reuse {
                        vectors[i] = prev.vector(j);
                        if vectors[i].is_some() {
                            report.reused += 1;
                        }
                    }
                }
                None => {
                    if old_links.contains(&format!("{}\u{0}{}", c.namespace, c.link())) {
                        report.updated += 1;
                    } else {
                        report.added += 1;
                    }
                }
            }
        }
    } else {
        report.added = chunks.len();
    }

    // 4. Embed what is missing.
    let final_vectors: Option<Vec<Vec<f32>>> = match embedder {
        None => None,
        Some(e) => {
            let todo: Vec<usize> = (0..chunks.len()).filter(|&i| vectors[i].is_none()).collect();
            if !todo.is_empty() {
                let bar = progress(settings.progress, todo.len() as u64, "embedding");
                let (calls, result) = embed_all(e, &chunks, &todo, &bar)?;
                bar.finish_and_clear();
                report.embed_calls = calls;
                report.embedded = todo.len();
                for (i, v) in todo.iter().zip(result) {
                    vectors[*i] = Some(v);
                }
            }
            let vs: Vec<Vec<f32>> = vectors.into_iter().map(|v| v.unwrap_or_default()).collect();
            Some(vs)
        }
    };
    let dims = match (&final_vectors, dims) {
        (Some(vs), 0) => vs.first().map(|v| v.len()).unwrap_or(0),
        _ => dims,
    };
    if let Some(vs) = &final_vectors {
        if let Some(bad) = vs.iter().position(|v| v.len() != dims) {
            bail!(
                "the embedder returned a vector of {} dims for chunk {} but {dims} for others",
                vs[bad].len(),
                chunks[bad].link()
            );
        }
    }

    // 5. What the vectors say about the model: its cosine baseline (the floor reads cosines
    // relative to it), the mean vector packed vectors are stored relative to, and how much of
    // the ranking each quantisation keeps (the self-check).
    let mut quantization = settings.quantization;
    // Set when int4 was chosen for an anisotropic model: the index of the note saying so.
    let mut int4_for_anisotropy: Option<usize> = None;
    let mut center: Option<Vec<f32>> = None;
    if let Some(vs) = final_vectors.as_deref().filter(|_| dims > 0) {
        // Re-runs with the same model, passage prompt and chunks keep the previous measures (an
        // unchanged site costs no embedding call); the best match depends on the chunks.
        let unchanged = report.embedded == 0 && report.removed == 0;
        let kept = previous
            .as_ref()
            .map(|p| p.header())
            .filter(|ph| ph.model == model && ph.embedding.passage_prompt == recipe.passage_prompt)
            .filter(|_| unchanged)
            .and_then(|ph| Some((ph.embedding.off_topic_cosine?, ph.embedding.off_topic_top?)));
        (recipe.off_topic_cosine, recipe.off_topic_top) = match (kept, embedder) {
            (Some((c, t)), _) => (Some(c), Some(t)),
            (None, Some(e)) => {
                let probes: Vec<String> = OFF_TOPIC_PROBES.iter().map(|t| t.to_string()).collect();
                match block_on(e.embed(&probes)) {
                    Ok(pv) => {
                        report.embed_calls += 1;
                        (
                            docent_core::vector::off_topic_cosine(&pv, vs, 500),
                            docent_core::vector::off_topic_top(&pv, vs),
                        )
                    }
                    Err(err) => {
                        report.notes.push(format!(
                            "could not embed the off-topic probes ({err}): the floor reads this \
                             model's cosines as all-MiniLM-L6-v2's"
                        ));
                        (None, None)
                    }
                }
            }
            (None, None) => (None, None),
        };
        // Re-runs keep the previous mean vector, so reused vectors keep their codes.
        let previous_center = previous
            .as_ref()
            .filter(|p| {
                let ph = p.header();
                ph.model == model && ph.dims as usize == dims
            })
            .and_then(|p| p.center().map(<[f32]>::to_vec));
        let mean = previous_center.unwrap_or_else(|| docent_core::vector::mean_vector(vs, dims));
        let check = SelfCheck::run(vs, &mean);
        report.notes.push(check.summary());
        let anisotropic = recipe.anisotropic();
        // An anisotropic model is stored as int4 whatever the self-check says: e5's binary loss
        // sits near the threshold (0.23 on Material for MkDocs, 0.27 when the same vectors come
        // back from an int4 index), and a rebuild must not flip the index to int8.
        if settings.auto_quantization
            && quantization == Quantization::Binary
            && check.binary_loses_too_much()
            && !anisotropic
        {
            report.notes.push(format!(
                "binary vectors lose too much of the ranking for {model} (see above): stored as int8; \
                 pass --quantization binary to keep binary"
            ));
            quantization = Quantization::Int8;
        } else if settings.auto_quantization && quantization == Quantization::Binary && anisotropic
        {
            int4_for_anisotropy = Some(report.notes.len());
            report.notes.push(format!(
                "{model} gives unrelated texts a cosine of {:.2}: its vectors share a large common \
                 part, and sign bits lose what tells sections apart, so they are stored as int4; \
                 pass --quantization binary for the smallest file",
                recipe.off_topic_cosine.unwrap_or_default()
            ));
            quantization = Quantization::Int4;
        }
        if quantization != Quantization::Int8 {
            center = Some(mean);
        }
    }
    report.quantization = Some(quantization);

    // 6. Write.
    let namespaces: BTreeSet<String> =
        chunks.iter().map(|c| c.namespace.clone()).filter(|n| !n.is_empty()).collect();
    let languages = languages.finish();
    let mut header = IndexHeader {
        provider: provider.clone(),
        model: model.clone(),
        dims: dims as u32,
        quantization,
        tokenizer: "cl100k_base".into(),
        chunk_count: chunks.len() as u32,
        page_count: report.pages as u32,
        namespaces: namespaces.into_iter().collect(),
        docent_version: docent_core::VERSION.to_string(),
        built_at: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        relevance_floor: settings
            .floor
            .or_else(|| previous.as_ref().and_then(|p| p.header().relevance_floor)),
        sources: settings
            .sources
            .iter()
            .map(|s| {
                if s.namespace.is_empty() {
                    s.path.display().to_string()
                } else {
                    format!("{}={}", s.namespace, s.path.display())
                }
            })
            .chain(settings.base_url.iter().map(|b| format!("base_url={b}")))
            .collect(),
        embedding: recipe,
        // Recorded from a quarter up (a site with a few translated pages stays English).
        non_english: Some((languages.0 * 100.0).round() / 100.0)
            .filter(|&s| s >= NON_ENGLISH_SHARE),
        language: languages.1.filter(|_| languages.0 >= NON_ENGLISH_SHARE).map(str::to_string),
    };
    let encode = |header: &IndexHeader| {
        docent_core::format::write_index_centered(
            header,
            &chunks,
            final_vectors.as_deref(),
            center.as_deref(),
        )
        .context("cannot encode the index")
    };
    let mut bytes = encode(&header)?;
    if let Some(note) = int4_for_anisotropy.filter(|_| {
        chunks.len() > crate::shards::binary_split_chunks() && settings.split.splits(bytes.len())
    }) {
        // In place of the int4 note: one note says how the vectors are stored.
        report.notes[note] = format!(
            "{model} gives unrelated texts a cosine of {:.2} (its vectors share a large common \
             part), and the index has {} chunks and is split: vectors stored as binary relative \
             to the mean vector, so a question fetches {} clusters' vectors at a quarter of \
             int4's bytes; pass --quantization int4 to keep int4",
            header.embedding.off_topic_cosine.unwrap_or_default(),
            chunks.len(),
            docent_core::split::vectors::DEFAULT_NPROBE
        );
        header.quantization = Quantization::Binary;
        report.quantization = Some(Quantization::Binary);
        bytes = encode(&header)?;
    }
    report.bytes = bytes.len();
    report.split = crate::shards::write(&settings.out, &bytes, settings.split, write_atomic)?;
    report.provider = provider;
    report.model = model;
    report.elapsed = started.elapsed();
    Ok(report)
}

fn load_previous(path: &Path, explicit: bool) -> anyhow::Result<Index> {
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read the previous index {}", path.display()))?;
    if !meta.is_file() || meta.len() > MAX_PREVIOUS_BYTES {
        bail!(
            "{} is not an index file (not a regular file, or over {} GiB)",
            path.display(),
            MAX_PREVIOUS_BYTES >> 30
        );
    }
    let bytes = std::fs::read(path).with_context(|| {
        if explicit {
            format!("cannot read the previous index {} (--previous)", path.display())
        } else {
            format!("cannot read {}", path.display())
        }
    })?;
    let index = Index::from_bytes(bytes)
        .map_err(|e| anyhow::anyhow!("{} is not a usable index: {e}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    index
        .attach_all(|name| std::fs::read(dir.join(name)))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(index)
}

/// Inputs per `embed` call (the provider may batch further internally).
const EMBED_BATCH: usize = 64;

/// Texts about nothing a docs site covers, embedded at build to learn where an off-topic
/// question lands with the index's model ([`docent_core::model::EmbedRecipe::off_topic_cosine`]).
/// Everyday subjects in several registers; changing them changes every index's floor.
const OFF_TOPIC_PROBES: [&str; 12] = [
    "What will the weather be like this weekend?",
    "How long should I boil an egg for a soft yolk?",
    "Who won the football match last night?",
    "The cat slept on the warm windowsill all afternoon.",
    "What is a good name for a golden retriever puppy?",
    "How many calories are in a slice of chocolate cake?",
    "Tips for planting tomatoes in a small garden",
    "The train to the coast was delayed by twenty minutes.",
    "Which museums should I visit on a trip to Rome?",
    "How do I get red wine stains out of a carpet?",
    "She bought fresh bread and flowers at the market.",
    "What are the symptoms of the common cold?",
];

/// Embed `todo` chunks; returns (calls, vectors in `todo` order).
fn embed_all(
    e: &dyn Embedder,
    chunks: &[Chunk],
    todo: &[usize],
    bar: &ProgressBar,
) -> anyhow::Result<(usize, Vec<Vec<f32>>)> {
    let inputs: Vec<String> = todo.iter().map(|&i| chunks[i].embedding_input()).collect();
    let work = async {
        let mut out = Vec::with_capacity(inputs.len());
        let mut calls = 0;
        for batch in inputs.chunks(EMBED_BATCH) {
            calls += 1;
            let vs = e.embed(batch).await.context("embedding failed")?;
            if vs.len() != batch.len() {
                bail!("the embedder returned {} vectors for {} inputs", vs.len(), batch.len());
            }
            out.extend(vs);
            bar.inc(batch.len() as u64);
        }
        Ok((calls, out))
    };
    block_on(work)
}

/// Run a future to completion on a fresh runtime in a scoped thread, so this works from plain
/// threads, `spawn_blocking` and inside other runtimes alike.
pub fn block_on<F: std::future::Future + Send>(fut: F) -> F::Output
where
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cannot start the async runtime");
            rt.block_on(fut)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

fn progress(show: bool, len: u64, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(&format!(
        "{what:>10} [{{bar:30}}] {{pos}}/{{len}} {{wide_msg}}"
    ))
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

fn check_writable(out: &Path) -> anyhow::Result<()> {
    if out.is_dir() {
        bail!(
            "--out {} is a folder; give a file name such as {}/docent.idx",
            out.display(),
            out.display()
        );
    }
    check_replaceable(out)?;
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.exists() {
        bail!(
            "cannot write {}: folder {} does not exist (create it first)",
            out.display(),
            dir.display()
        );
    }
    let probe = dir.join(format!(".docent-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        anyhow::anyhow!("cannot write {}: {e} (check the folder's permissions)", out.display())
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// An existing `--out` is replaced only when it is a docent index (or empty): a typo that names
/// a page of the docs, notes or a device (`/dev/null` as a dry run) must not be lost to it.
fn check_replaceable(out: &Path) -> anyhow::Result<()> {
    let Ok(meta) = std::fs::metadata(out) else { return Ok(()) };
    if !meta.is_file() {
        bail!(
            "--out {} exists and is not a regular file (a device, pipe or socket); docent writes the index as a new file in its place, so give a file path such as public/docent.idx",
            out.display()
        );
    }
    if meta.len() == 0 {
        return Ok(());
    }
    let mut head = [0u8; 8];
    let n = std::fs::File::open(out)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .with_context(|| format!("cannot read {}", out.display()))?;
    if n < head.len() || &head != docent_core::format::MAGIC {
        bail!(
            "--out {} exists and is not a docent index; docent never overwrites other files: choose another --out, or delete the file first if it is not needed",
            out.display()
        );
    }
    Ok(())
}

/// The largest file read as a previous index: far more than any docs site needs (a 100,000-
/// chunk index is ~60 MB), and a bound on what a wrong path costs.
const MAX_PREVIOUS_BYTES: u64 = 4 << 30;

fn write_atomic(out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "docent.idx".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::write(&tmp, bytes)
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, out).with_context(|| {
                format!("cannot move the new index into place at {}", out.display())
            })
        });
    if written.is_err() {
        // A full disk or a bad path leaves no half-written temporary file behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    #[test]
    fn warnings_of_one_kind_share_a_kind_whatever_page_and_file_they_name() {
        let a = super::warning_kind(
            "api/a.md: import \"@site/static/usage/v9/a/index.md\" leaves the source folder; not inlined",
        );
        let b = super::warning_kind(
            "b.md: import \"@site/static/usage/v9/b/index.md\" leaves the source folder; not inlined",
        );
        assert_eq!(a, b);
        assert_eq!(a, "import \"…\" leaves the source folder; not inlined");
        assert_ne!(a, super::warning_kind("b.md: imports nest deeper than 8 at x.md; not inlined"));
    }

    use super::*;

    #[test]
    fn a_sites_attribute_delimiters_change_its_markdown_pages_only() {
        let src =
            SourceSpec { attr_delimiters: Some(("%{".into(), "}%".into())), ..Default::default() };
        let text = "## Props %{#props}%\n";
        assert_eq!(src.standard_attrs(SourceKind::Markdown, text.into()), "## Props {#props}\n");
        assert_eq!(src.standard_attrs(SourceKind::Html, text.into()), text);
        assert_eq!(SourceSpec::default().standard_attrs(SourceKind::Markdown, text.into()), text);
    }

    #[test]
    fn a_model_folder_build_says_what_searching_it_needs() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("my-model");
        std::fs::create_dir(&model).unwrap();
        let settings = |embed: &str, model: Option<&Path>| IndexSettings {
            embed: embed.into(),
            model: model.map(|m| m.display().to_string()),
            ..IndexSettings::default()
        };
        let note = model_folder_note(&settings("local", Some(&model))).unwrap();
        assert!(note.contains("\"my-model\"") && note.contains("DOCENT_MODEL_DIR="), "{note}");
        assert!(note.contains(&std::fs::canonicalize(&model).unwrap().display().to_string()));
        // A model named by id, or a remote embedder, gets no note.
        assert_eq!(model_folder_note(&settings("local", None)), None);
        let id = IndexSettings {
            model: Some("intfloat/multilingual-e5-small".into()),
            ..settings("local", None)
        };
        assert_eq!(model_folder_note(&id), None);
        assert_eq!(model_folder_note(&settings("openai", Some(&model))), None);
    }
}
