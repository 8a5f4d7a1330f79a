//! `docent inspect`: what an index file holds and where its bytes go.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use clap::Args;
use docent_core::split::ShardKind;
use docent_core::Index;

use crate::index::human_bytes;
use crate::query::load_index;

/// Arguments of `docent inspect`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent inspect public/docent.idx
  docent inspect public/docent.idx --json | jq .sections
  docent inspect public/docent.idx --sections | grep install
  docent inspect public/docent.idx --page /docs/intro

--sections lists every section once, as a gold entry of an eval set is written
(namespace/page#anchor), a tab, and its heading path.

--page URL prints one page's sections and the text of each chunk exactly as indexed (what
search and the answers read), to see why a question misses. URL is the page URL as indexed
(see --sections); the end of it is enough when only one page ends that way.")]
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
    /// Print this page's sections and chunk texts as indexed (with --json: one object a chunk).
    #[arg(long, value_name = "URL", conflicts_with = "sections")]
    pub page: Option<String>,
}

/// The chunks of the page `url` (as indexed, without `#anchor`), in index order. An exact URL
/// wins; else the one page whose URL ends with it. A clear error when none or several match.
pub fn page_chunks(index: &Index, url: &str) -> anyhow::Result<Vec<usize>> {
    let want = url.split('#').next().unwrap_or(url).trim();
    if want.is_empty() {
        anyhow::bail!("--page needs a page URL, as `docent inspect INDEX --sections` lists them");
    }
    // A chunk's page as `--sections` names it: `namespace/url`, or the URL alone.
    let full = |i: usize| {
        let c = index.chunk_ref(i);
        if c.namespace.is_empty() {
            c.url.to_string()
        } else {
            format!("{}/{}", c.namespace, c.url)
        }
    };
    let exact: Vec<usize> =
        (0..index.len()).filter(|&i| index.chunk_ref(i).url == want || full(i) == want).collect();
    if !exact.is_empty() {
        return Ok(exact);
    }
    let mut pages: Vec<String> = Vec::new();
    for i in 0..index.len() {
        let p = full(i);
        if p.ends_with(want) && !pages.contains(&p) {
            pages.push(p);
        }
    }
    match pages.len() {
        1 => Ok((0..index.len()).filter(|&i| full(i) == pages[0]).collect()),
        0 => {
            let mut near: Vec<String> = Vec::new();
            let last = want.trim_end_matches('/').rsplit('/').next().unwrap_or(want);
            for i in 0..index.len() {
                let u = index.chunk_ref(i).url;
                if !last.is_empty() && u.contains(last) && !near.iter().any(|x| x == u) {
                    near.push(u.to_string());
                }
            }
            near.truncate(5);
            anyhow::bail!(
                "no page {want:?} in this index{}; `docent inspect INDEX --sections` lists every page",
                if near.is_empty() { String::new() } else { format!(" (similar: {})", near.join(", ")) }
            )
        }
        _ => {
            pages.truncate(5);
            anyhow::bail!(
                "{want:?} matches several pages ({}); give the whole URL",
                pages.join(", ")
            )
        }
    }
}

/// `docent inspect --page`: the page's sections and chunk texts.
fn print_page(index: &Index, url: &str, json: bool) -> anyhow::Result<()> {
    let ids = page_chunks(index, url)?;
    if json {
        for &i in &ids {
            let c = index.chunk(i);
            let line = serde_json::json!({
                "chunk": i,
                "url": c.url,
                "anchor": c.anchor,
                "namespace": c.namespace,
                "title": c.title,
                "breadcrumb": c.breadcrumb,
                "tokens": c.tokens,
                "text": c.text,
            });
            outln!("{line}");
        }
        return Ok(());
    }
    let first = index.chunk(ids[0]);
    let sections: HashSet<(String, String)> = ids
        .iter()
        .map(|&i| {
            let c = index.chunk_ref(i);
            (c.namespace.to_string(), c.anchor.to_string())
        })
        .collect();
    outln!("{}  \"{}\"", first.url, first.title);
    outln!("  {} sections, {} chunks", sections.len(), ids.len());
    let mut last: Option<(String, String)> = None;
    for &i in &ids {
        let c = index.chunk(i);
        let key = (c.namespace.clone(), c.anchor.clone());
        if last.as_ref() != Some(&key) {
            outln!();
            let ns =
                if c.namespace.is_empty() { String::new() } else { format!("[{}] ", c.namespace) };
            let path =
                if c.breadcrumb.is_empty() { c.title.clone() } else { c.breadcrumb_display() };
            outln!(
                "== {ns}{path}  ({})",
                if c.anchor.is_empty() {
                    "no anchor".to_string()
                } else {
                    format!("#{}", c.anchor)
                }
            );
            last = Some(key);
        }
        outln!("-- chunk {i}, {} tokens", c.tokens);
        outln!("{}", c.text);
    }
    Ok(())
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
    /// A split index: postings shards, text shards (their bytes are not in `file_bytes`).
    pub shards: Option<(usize, usize)>,
    /// A split index: bytes of all its postings shards and of all its text shards (texts,
    /// titles, anchors, breadcrumbs, chunk records), when the shard files are at hand.
    pub shard_bytes: Option<(u64, u64)>,
    /// A split index with vectors by cluster: clusters (one vector shard each) and the bytes
    /// of all vector shards, when the shard files are at hand.
    pub vector_shards: Option<(usize, u64)>,
    /// Bytes of all chunk texts.
    pub text_bytes: usize,
}

/// Bytes of the shard file of `kind` with name hash `sum` of the split index at `path` (next
/// to it; 0 when it is missing).
fn shard_file_len(path: &std::path::Path, stem: &str, kind: ShardKind, sum: u32) -> u64 {
    let dir = path.parent().unwrap_or(std::path::Path::new(""));
    let name = docent_core::split::shard_name(stem, kind, sum);
    std::fs::metadata(dir.join(name)).map(|f| f.len()).unwrap_or(0)
}

/// Bytes of a split index's postings and text shards, from the files next to `path`.
pub fn shard_bytes(index: &Index, path: &std::path::Path) -> Option<(u64, u64)> {
    let m = index.manifest()?;
    let size = |kind, sum| shard_file_len(path, &m.stem, kind, sum);
    Some((
        m.postings.iter().map(|&c| size(ShardKind::Postings, c)).sum(),
        m.texts.iter().map(|&(_, c)| size(ShardKind::Text, c)).sum(),
    ))
}

/// Clusters of a split index with vectors by cluster and the bytes of their vector shards.
pub fn vector_shard_bytes(index: &Index, path: &std::path::Path) -> Option<(usize, u64)> {
    let (m, c) = (index.manifest()?, index.clusters()?);
    let bytes = c.hashes.iter().map(|&sum| shard_file_len(path, &m.stem, ShardKind::Vectors, sum));
    Some((c.hashes.len(), bytes.sum()))
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
    let shards = index.manifest().map(|m| (m.postings.len(), m.texts.len()));
    Inspection {
        shards,
        shard_bytes: None,
        vector_shards: index.clusters().map(|c| (c.hashes.len(), 0)),
        text_bytes,
        file_bytes,
        header: serde_json::to_value(index.header()).unwrap_or(serde_json::Value::Null),
        chunks: index.len(),
        pages: pages.len(),
        namespaces,
        tokens_total,
        tokens_mean: tokens_total as f64 / n as f64,
        tokens_max,
        sections,
        // A split entry holds no text at all.
        overhead_per_chunk: if index.is_split() {
            file_bytes
        } else {
            file_bytes.saturating_sub(text_bytes)
        } as f64
            / n as f64,
    }
}

/// `docent inspect`.
pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let index = load_index(&args.index)?;
    if let Some(url) = &args.page {
        return print_page(&index, url, args.json);
    }
    if args.sections {
        for (link, path) in section_list(&index) {
            outln!("{link}\t{path}");
        }
        return Ok(());
    }
    let mut ins = inspect(&index);
    ins.shard_bytes = shard_bytes(&index, &args.index);
    ins.vector_shards = vector_shard_bytes(&index, &args.index);
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
        if let Some(b) = r.off_topic_cosine {
            outln!("  cosines     {b:.3} from off-topic texts to the chunks (the floor reads cosines relative to it)");
        }
        if let Some(t) = r.off_topic_top {
            outln!("              {t:.3} from off-topic texts to their closest chunk");
        }
        if index.center().is_some() {
            outln!("  vectors     stored relative to the mean vector");
        }
    }
    outln!("  tokenizer   {}", h.tokenizer);
    if let Some(share) = h.non_english {
        let judged = match (h.docs_speak(false), h.docs_speak(true)) {
            (true, true) => "questions in English and in other languages are judged by their words",
            (false, _) => "questions not in English are judged by their words, English ones hedged",
            (true, false) => "English questions are judged by their words, others hedged",
        };
        let named = h.language.as_deref().map(|l| format!(", mostly {l}")).unwrap_or_default();
        outln!(
            "  language    {:.0}% of the docs' prose is not English{named}: {judged}",
            share * 100.0
        );
    }
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
    match ins.shards {
        None => outln!("  bytes per chunk beyond its text: {:.1}", ins.overhead_per_chunk),
        Some((p, t)) => {
            outln!("  entry bytes per chunk (what ranking needs): {:.1}", ins.overhead_per_chunk);
            let (pb, tb) = ins.shard_bytes.unwrap_or_default();
            let meta = (tb as usize).saturating_sub(ins.text_bytes);
            outln!("  split: this entry file names, next to it,");
            outln!("    {p:>6} postings shards  {:>12}", human_bytes(pb as usize));
            outln!("    {t:>6} text shards      {:>12}", human_bytes(tb as usize));
            outln!(
                "           texts {}, the rest {} ({:.1} bytes per chunk: titles, anchors, breadcrumbs, chunk records)",
                human_bytes(ins.text_bytes),
                human_bytes(meta),
                meta as f64 / ins.chunks.max(1) as f64
            );
            if let Some((k, vb)) = ins.vector_shards {
                outln!("    {k:>6} vector shards    {:>12}", human_bytes(vb as usize));
                outln!(
                    "           one per cluster of vectors; a question fetches its {} nearest",
                    docent_core::split::vectors::DEFAULT_NPROBE
                );
            }
            outln!("  a reader's browser fetches the shards each question needs (docs/index-format.md)");
        }
    }
    Ok(())
}
