//! `docent inspect`: what an index file holds and where its bytes go.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use clap::Args;
use docent_core::Index;

use crate::index::human_bytes;
use crate::query::load_index;

/// Arguments of `docent inspect`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent inspect public/docent.idx
  docent inspect public/docent.idx --json | jq .sections
  docent inspect public/docent.idx --sections | grep install

--sections lists every section once, as a gold entry of an eval set is written
(namespace/page#anchor), a tab, and its heading path.")]
pub struct InspectArgs {
    /// The index file.
    #[arg(value_name = "INDEX")]
    pub index: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// List every section (`namespace/page#anchor<TAB>heading path`) instead of the summary.
    #[arg(long, conflicts_with = "json")]
    pub sections: bool,
}

/// Every section of the index once, in index order: its link as an eval gold entry is written
/// (`namespace/url#anchor`, no namespace prefix when it has none) and its heading path.
pub fn section_list(index: &Index) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for i in 0..index.len() {
        let c = index.chunk(i);
        let link =
            if c.namespace.is_empty() { c.link() } else { format!("{}/{}", c.namespace, c.link()) };
        if seen.insert(link.clone()) {
            let path =
                if c.breadcrumb.is_empty() { c.title.clone() } else { c.breadcrumb_display() };
            out.push((link, path));
        }
    }
    out
}

/// Everything `inspect` reports, computed from a loaded index.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Inspection {
    /// File size in bytes.
    pub file_bytes: usize,
    /// The header as JSON.
    pub header: serde_json::Value,
    /// Chunks.
    pub chunks: usize,
    /// Distinct pages (namespace + url).
    pub pages: usize,
    /// Chunks per namespace ("" = none).
    pub namespaces: BTreeMap<String, usize>,
    /// Total, mean and max cl100k tokens per chunk.
    pub tokens_total: u64,
    /// Mean tokens per chunk.
    pub tokens_mean: f64,
    /// Largest chunk in tokens.
    pub tokens_max: u32,
    /// Bytes per section of the file, in file order; "header and tables" is the rest.
    pub sections: Vec<(String, usize)>,
    /// File bytes per chunk beyond its text.
    pub overhead_per_chunk: f64,
}

/// Compute the inspection of a loaded index.
pub fn inspect(index: &Index) -> Inspection {
    let mut namespaces: BTreeMap<String, usize> = BTreeMap::new();
    let mut pages: HashSet<(String, String)> = HashSet::new();
    let mut tokens_total = 0u64;
    let mut tokens_max = 0u32;
    let mut text_bytes = 0usize;
    for i in 0..index.len() {
        let c = index.chunk_ref(i);
        *namespaces.entry(c.namespace.to_string()).or_default() += 1;
        pages.insert((c.namespace.to_string(), c.url.to_string()));
        tokens_total += c.tokens as u64;
        tokens_max = tokens_max.max(c.tokens);
        text_bytes += c.text.len();
    }
    let file_bytes = index.as_bytes().len();
    let mut sections: Vec<(String, usize)> =
        index.section_sizes().into_iter().map(|(k, n)| (k.name().to_string(), n)).collect();
    let accounted: usize = sections.iter().map(|(_, n)| n).sum();
    sections.push((
        "header, section table, checksum".to_string(),
        file_bytes.saturating_sub(accounted),
    ));
    let n = index.len().max(1);
    Inspection {
        file_bytes,
        header: serde_json::to_value(index.header()).unwrap_or(serde_json::Value::Null),
        chunks: index.len(),
        pages: pages.len(),
        namespaces,
        tokens_total,
        tokens_mean: tokens_total as f64 / n as f64,
        tokens_max,
        sections,
        overhead_per_chunk: (file_bytes.saturating_sub(text_bytes)) as f64 / n as f64,
    }
}

/// `docent inspect`.
pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let index = load_index(&args.index)?;
    if args.sections {
        for (link, path) in section_list(&index) {
            outln!("{link}\t{path}");
        }
        return Ok(());
    }
    let ins = inspect(&index);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&ins)?);
        return Ok(());
    }
    let h = index.header();
    outln!("{}  ({})", args.index.display(), human_bytes(ins.file_bytes));
    outln!("  docent      {}", h.docent_version);
    outln!("  built       {} (unix time)", h.built_at);
    if h.provider == "none" {
        outln!("  embeddings  none (lexical only)");
    } else {
        outln!(
            "  embeddings  {} {} ({} dims, {})",
            h.provider,
            h.model,
            h.dims,
            h.quantization.name()
        );
        let r = &h.embedding;
        if r.changes_queries() {
            outln!(
                "  questions   model {}, prompt {:?}{}",
                h.query_model(),
                r.query_prompt,
                if r.query_input_type.is_empty() {
                    String::new()
                } else {
                    format!(", input_type {:?}", r.query_input_type)
                }
            );
            outln!(
                "  chunks as   prompt {:?}{}",
                r.passage_prompt,
                if r.passage_input_type.is_empty() {
                    String::new()
                } else {
                    format!(", input_type {:?}", r.passage_input_type)
                }
            );
        }
        if let Some(b) = r.cosine_baseline {
            outln!("  cosines     {b:.3} between unrelated chunks (the floor reads cosines relative to it)");
        }
        if index.center().is_some() {
            outln!("  vectors     stored relative to the mean vector");
        }
    }
    outln!("  tokenizer   {}", h.tokenizer);
    match h.relevance_floor {
        Some(f) => outln!("  floor       {f}"),
        None => outln!("  floor       default"),
    }
    for s in &h.sources {
        outln!("  source      {s}");
    }
    outln!("  checksum    {:016x}", index.checksum());
    outln!();
    outln!("  pages       {}", ins.pages);
    outln!("  chunks      {}", ins.chunks);
    outln!(
        "  tokens      {} total, {:.0} mean, {} max per chunk",
        ins.tokens_total,
        ins.tokens_mean,
        ins.tokens_max
    );
    if ins.namespaces.len() > 1 || ins.namespaces.keys().any(|k| !k.is_empty()) {
        for (ns, n) in &ins.namespaces {
            outln!("  namespace   {:<20} {n} chunks", if ns.is_empty() { "(none)" } else { ns });
        }
    }
    outln!();
    outln!("  size by section:");
    for (name, bytes) in &ins.sections {
        let pct =
            if ins.file_bytes > 0 { 100.0 * *bytes as f64 / ins.file_bytes as f64 } else { 0.0 };
        outln!("    {name:<34} {:>12} {pct:>5.1}%", human_bytes(*bytes));
    }
    outln!("  bytes per chunk beyond its text: {:.1}", ins.overhead_per_chunk);
    Ok(())
}
