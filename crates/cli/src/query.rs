//! `docent search`, plus what `search` and `eval` share: loading an index and embedding
//! questions with the provider/model recorded in its header.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use docent_core::retrieve::{retrieve, Ask};
use docent_core::search::{Mode, SearchOptions, SearchResult};
use docent_core::Index;
use docent_embed::{EmbedOptions, Embedder};

use crate::index::block_on;

/// Which retriever(s) to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ModeArg {
    /// Vectors + BM25, fused (lexical only when the index has no vectors).
    #[default]
    Hybrid,
    /// Cosine over the vectors only.
    Vector,
    /// BM25 only.
    Lexical,
}

impl ModeArg {
    /// The core search mode.
    pub fn mode(self) -> Mode {
        match self {
            ModeArg::Hybrid => Mode::Hybrid,
            ModeArg::Vector => Mode::Vector,
            ModeArg::Lexical => Mode::Lexical,
        }
    }
    /// "hybrid", "vector" or "lexical".
    pub fn name(self) -> &'static str {
        match self {
            ModeArg::Hybrid => "hybrid",
            ModeArg::Vector => "vector",
            ModeArg::Lexical => "lexical",
        }
    }
}

/// How to reach the embedding provider recorded in the index (for `openai`).
#[derive(Debug, Clone, Args, Default)]
pub struct EmbedAccess {
    /// openai: API base URL for query embeddings (same as when indexing).
    #[arg(long, value_name = "URL")]
    pub embed_base_url: Option<String>,
    /// openai: NAME of the environment variable holding the API key.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Expected embedding provider; refused if the index was built with another.
    #[arg(long, value_name = "PROVIDER")]
    pub embed: Option<String>,
    /// Expected embedding model; refused if the index was built with another.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Expected query prompt (e.g. "query: "); refused if the index expects another. By
    /// default questions get the prompt recorded in the index.
    #[arg(long, value_name = "TEXT")]
    pub query_prompt: Option<String>,
}

/// Arguments of `docent search`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent search rust.idx \"how do integer overflows behave in release builds\"
  docent search rust.idx \"CARGO_HOME\" --mode lexical --top 3
  docent search rust.idx \"what is a trait object\" --namespace book --json
  echo '[\"How do I define a trait?\"]' > history.json
  docent search rust.idx \"and how do I give it a default method?\" --history history.json

--json prints one object per line: {\"url\",\"title\",\"breadcrumb\",\"score\",\"retriever\"}.
The question is embedded with the provider and model recorded in the index.")]
pub struct SearchArgs {
    /// The index file.
    #[arg(value_name = "INDEX")]
    pub index: PathBuf,
    /// The question.
    #[arg(value_name = "QUESTION")]
    pub question: String,
    /// Number of sections (one hit per section, with its best chunk); 1 or more.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = parse_top)]
    pub top: usize,
    /// One JSON object per hit and line.
    #[arg(long)]
    pub json: bool,
    /// For a split index: print (to stderr, one JSON line) the shards a reader's browser would
    /// fetch for this question: the postings of its terms and the texts of its hits.
    #[arg(long)]
    pub shards: bool,
    /// JSON file with earlier turns: ["question", ...] or [{"role":"user","content":...}, ...].
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Only this namespace.
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Only URLs starting with this prefix.
    #[arg(long, value_name = "PREFIX")]
    pub url_prefix: Option<String>,
    /// For a split index with vectors by cluster: score only the vectors of the clusters
    /// nearest the question that N probes buy (1.5 × N clusters' worth of chunks), as the
    /// widget does with 16 (default: every vector, exact).
    #[arg(long, value_name = "N")]
    pub nprobe: Option<usize>,
    /// Retriever(s) to run.
    #[arg(long, value_enum, default_value_t = ModeArg::Hybrid)]
    pub mode: ModeArg,
    /// Relevance floor override, 0 to 1 (0 = never abstain).
    #[arg(long, value_name = "F", value_parser = parse_floor, allow_hyphen_values = true)]
    pub floor: Option<f32>,
    /// Embedding access.
    #[command(flatten)]
    pub access: EmbedAccess,
}

/// `--top N` (`docent search`): how many sections, at least one.
pub fn parse_top(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 sections would show nothing; give 1 or more, e.g. --top 5".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a number of sections; give 1 or more, e.g. --top 5")),
    }
}

/// Check a relevance floor (`--floor`, `[index] floor`): a finite number from 0 to 1.
pub fn check_floor(f: f32) -> Result<f32, String> {
    if f.is_finite() && (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!(
            "{f} is not a relevance floor: give a number from 0 to 1 (0 never abstains; leave it \
             out for the index's floor; `docent eval` suggests one)"
        ))
    }
}

/// `--floor F` (`docent search`, `eval`, `index`): see [`check_floor`].
pub fn parse_floor(s: &str) -> Result<f32, String> {
    let f: f32 = s.trim().parse().map_err(|_| {
        format!("{s:?} is not a number; give a relevance floor from 0 to 1, e.g. --floor 0.3")
    })?;
    check_floor(f)
}

/// Refuse a `--namespace` the index does not have: searching it would find nothing and look
/// like a bad retriever (`docent search`, `docent eval`).
pub fn check_namespace(index: &Index, namespace: Option<&str>) -> anyhow::Result<()> {
    let Some(ns) = namespace else { return Ok(()) };
    let known = &index.header().namespaces;
    if known.iter().any(|k| k == ns) {
        return Ok(());
    }
    if known.is_empty() {
        bail!("namespace {ns:?} is not in this index (it has: none); leave --namespace out");
    }
    bail!(
        "namespace {ns:?} is not in this index (it has: {}); pass one of them, or leave \
         --namespace out to search them all",
        known.join(", ")
    )
}

/// Read and validate an index file.
pub fn load_index(path: &Path) -> anyhow::Result<Index> {
    docent_core::split::read_path(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The embedder the index was built with, or None when the search needs no vectors.
pub fn query_embedder(
    index: &Index,
    mode: ModeArg,
    access: &EmbedAccess,
) -> anyhow::Result<Option<Box<dyn Embedder>>> {
    let h = index.header();
    if let Some(p) = &access.embed {
        if !p.eq_ignore_ascii_case(&h.provider) {
            bail!("the index was built with embedding provider {:?} but {p:?} was asked for; rebuild the index with --embed {p} or drop --embed", h.provider);
        }
    }
    if let Some(m) = &access.model {
        if m != &h.model && !h.model.ends_with(&format!("/{m}")) {
            bail!("the index was built with embedding model {:?} but {m:?} was asked for; questions must be embedded with the same model (rebuild the index with --model {m})", h.model);
        }
    }
    if h.provider == "none" || h.dims == 0 {
        if mode == ModeArg::Vector {
            bail!("the index has no vectors (built with --embed none); use --mode lexical or rebuild it with --embed local or --embed openai");
        }
        return Ok(None);
    }
    if mode == ModeArg::Lexical {
        return Ok(None);
    }
    let prompt = access.query_prompt.clone().unwrap_or_else(|| h.embedding.query_prompt.clone());
    let opts = EmbedOptions {
        base_url: access.embed_base_url.clone(),
        api_key_env: access.api_key_env.clone(),
        dimensions: if h.provider == "openai" { Some(h.dims as usize) } else { None },
        prompt: Some(prompt),
        input_type: Some(h.embedding.query_input_type.clone()),
        for_queries: true,
        ..EmbedOptions::default()
    };
    let e = docent_embed::make_embedder(&h.provider, Some(h.query_model()), &opts).with_context(
        || {
            format!(
                "cannot set up the {} embedder {:?} the index was built with",
                h.provider, h.model
            )
        },
    )?;
    let info = e.info();
    h.check_query_embedding(&info.model, &info.prompt)
        .map_err(|m| anyhow::anyhow!("embedding mismatch: {m}"))?;
    if info.dims != 0 && info.dims != h.dims as usize {
        bail!(
            "embedding size mismatch: the index has {} dims, the model gives {}; rebuild the index",
            h.dims,
            info.dims
        );
    }
    Ok(Some(e))
}

/// Embed texts (one call); an error mentions the provider.
pub fn embed_texts(e: &dyn Embedder, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vs = block_on(e.embed(texts)).context("cannot embed the question")?;
    if vs.len() != texts.len() {
        bail!("the embedder returned {} vectors for {} questions", vs.len(), texts.len());
    }
    Ok(vs)
}

/// The shards a browser fetches for one question, by name, on stderr as one JSON line:
/// `{"postings": [...], "vectors": [...], "texts": [...]}` (empty for a one-file index); the
/// vector shards `nprobe` probes fetch (the widget's default when None).
fn print_shards(
    path: &Path,
    question: &str,
    history: &[String],
    (result, vectors): &(SearchResult, Vec<Vec<f32>>),
    nprobe: Option<usize>,
) -> anyhow::Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let entry = Index::from_bytes(bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut texts: Vec<&str> = vec![question];
    texts.extend(history.iter().rev().take(2).map(String::as_str));
    let hits = if result.hits.is_empty() { &result.closest } else { &result.hits };
    let chunks: Vec<usize> =
        hits.iter().flat_map(|h| h.section_chunks().iter().map(|&c| c as usize)).collect();
    let names =
        |v: Vec<docent_core::split::ShardRef>| v.into_iter().map(|r| r.name).collect::<Vec<_>>();
    let ask = Ask { question, history, rewritten: None };
    let nprobe = Some(nprobe.unwrap_or(docent_core::split::vectors::DEFAULT_NPROBE));
    let opts = SearchOptions { nprobe, ..SearchOptions::default() };
    let line = serde_json::json!({
        "postings": names(entry.shards_for_query(&texts)),
        "vectors": names(docent_core::retrieve::vector_shards(&entry, &ask, vectors, &opts)),
        "texts": names(entry.shards_for_chunks(&chunks)),
    });
    eprintln!("{line}");
    Ok(())
}

/// Read a history file: a JSON array of strings or of chat messages (user turns are kept).
pub fn read_history(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read history file {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "history file {} is not JSON ({e}); write [\"earlier question\", ...]",
            path.display()
        )
    })?;
    history_from_json(&v).ok_or_else(|| {
        anyhow::anyhow!("history file {} must be a JSON array of strings or of {{\"role\",\"content\"}} messages", path.display())
    })
}

/// `["q1", "q2"]` or `[{"role":"user","content":"q1"}, ...]` → user turns, oldest first.
pub fn history_from_json(v: &serde_json::Value) -> Option<Vec<String>> {
    let arr = v.as_array()?;
    let mut out = Vec::new();
    for item in arr {
        match item {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Object(o) => {
                let role = o.get("role").and_then(|r| r.as_str()).unwrap_or("user");
                let content = o.get("content").and_then(|c| c.as_str())?;
                if role == "user" {
                    out.push(content.to_string());
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Run one question through the shared retrieval pipeline (`docent_core::retrieve`), embedding
/// its inputs when there is an embedder.
pub fn search_one(
    index: &Index,
    embedder: Option<&dyn Embedder>,
    question: &str,
    history: &[String],
    opts: &SearchOptions,
) -> anyhow::Result<(SearchResult, Vec<Vec<f32>>)> {
    let ask = Ask { question, history, rewritten: None };
    let vectors = match embedder {
        Some(e) => embed_texts(e, &ask.embedding_inputs())?,
        None => Vec::new(),
    };
    Ok((retrieve(index, &ask, &vectors, opts), vectors))
}

/// `docent search`.
pub fn run(args: SearchArgs) -> anyhow::Result<()> {
    if args.question.trim().is_empty() {
        bail!("the question is empty; pass it in quotes: docent search INDEX \"how do I ...\"");
    }
    let index = load_index(&args.index)?;
    let embedder = query_embedder(&index, args.mode, &args.access)?;
    let history = match &args.history {
        Some(p) => read_history(p)?,
        None => Vec::new(),
    };
    let opts = SearchOptions {
        top_k: args.top,
        mode: args.mode.mode(),
        namespace: args.namespace.clone(),
        url_prefix: args.url_prefix.clone(),
        floor: args.floor,
        nprobe: args.nprobe,
        ..SearchOptions::default()
    };
    check_namespace(&index, args.namespace.as_deref())?;
    let searched = search_one(&index, embedder.as_deref(), &args.question, &history, &opts)?;
    if args.shards {
        print_shards(&args.index, &args.question, &history, &searched, args.nprobe)?;
    }
    let result = searched.0;
    if args.json {
        for hit in &result.hits {
            let c = index.chunk(hit.chunk as usize);
            let line = serde_json::json!({
                "url": c.link(),
                "title": c.title,
                "breadcrumb": c.breadcrumb_display(),
                "score": hit.score,
                "retriever": hit.retrievers.label(),
                "outcome": result.outcome().name(),
            });
            outln!("{line}");
        }
        if result.abstained {
            eprintln!(
                "declined: the docs don't seem to cover this (confidence {:.3})",
                result.confidence
            );
        } else if result.uncertain {
            eprintln!(
                "uncertain: these may not fully answer the question (confidence {:.3})",
                result.confidence
            );
        }
        return Ok(());
    }
    if result.abstained {
        outln!(
            "The docs don't seem to cover this (confidence {:.3} is below the decline threshold).",
            result.confidence
        );
        if !result.closest.is_empty() {
            outln!("Closest sections:");
            print_hits(&index, &result.closest)?;
        }
        return Ok(());
    }
    if result.hits.is_empty() {
        outln!("No matches.");
        return Ok(());
    }
    print_hits(&index, &result.hits)?;
    if result.uncertain {
        outln!(
            "(confidence {:.3}: uncertain, these may not fully answer the question)",
            result.confidence
        );
    } else {
        outln!("(confidence {:.3})", result.confidence);
    }
    Ok(())
}

fn print_hits(index: &Index, hits: &[docent_core::Hit]) -> std::io::Result<()> {
    for (i, hit) in hits.iter().enumerate() {
        let c = index.chunk(hit.chunk as usize);
        let crumb = if c.breadcrumb.is_empty() { c.title.clone() } else { c.breadcrumb_display() };
        let ns = if c.namespace.is_empty() { String::new() } else { format!("[{}] ", c.namespace) };
        outln!("{:>2}. {:.4}  {:<14} {ns}{crumb}", i + 1, hit.score, hit.retrievers.label());
        outln!("    {}", c.link());
        let snippet: String =
            c.text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(160).collect();
        outln!("    {snippet}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_accepts_strings_or_messages_and_keeps_user_turns() {
        let v = serde_json::json!(["a", "b"]);
        assert_eq!(history_from_json(&v).unwrap(), vec!["a", "b"]);
        let v =
            serde_json::json!([{"role":"user","content":"q"},{"role":"assistant","content":"ans"}]);
        assert_eq!(history_from_json(&v).unwrap(), vec!["q"]);
        assert!(history_from_json(&serde_json::json!({"x":1})).is_none());
    }
}
