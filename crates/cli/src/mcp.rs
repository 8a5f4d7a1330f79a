//! `docent mcp INDEX`: the docs tools for AI agents over MCP on stdin/stdout (docent-mcp does
//! the protocol; this reads the options, loads the index and its query embedder).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use docent_embed::Embedder;

use crate::query::{load_index, query_embedder, EmbedAccess, ModeArg};

/// Arguments of `docent mcp`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent mcp public/docent.idx
  docent mcp public/docent.idx --name \"the Acme docs\"
  docent mcp public/docent.idx --lexical
  OPENAI_API_KEY=... docent mcp public/docent.idx   (an index built with --embed openai)

An MCP client starts this command and speaks JSON-RPC on its stdin/stdout; nothing else is
printed there (logs go to stderr). Client configuration snippets: docs/mcp.md.
Tools: search_docs, read_section, read_page, list_namespaces. No LLM calls: search only.")]
pub struct McpArgs {
    /// The index file (`docent index` wrote it).
    #[arg(value_name = "INDEX")]
    pub index: PathBuf,
    /// What the docs are called in the instructions the server gives agents.
    #[arg(long, value_name = "NAME", default_value = "the documentation")]
    pub name: String,
    /// BM25 only: do not embed queries even when the index has vectors.
    #[arg(long)]
    pub lexical: bool,
    /// Embedding access (for an index built with --embed openai).
    #[command(flatten)]
    pub access: EmbedAccess,
}

/// `docent mcp`.
pub fn run(args: McpArgs) -> anyhow::Result<()> {
    init_stderr_logs();
    let index = load_index(&args.index)?;
    let mode = if args.lexical { ModeArg::Lexical } else { ModeArg::Hybrid };
    let embedder: Option<Arc<dyn Embedder>> =
        query_embedder(&index, mode, &args.access)?.map(Arc::from);
    let docs = Arc::new(docent_mcp::Docs::new(index, embedder, &args.name));
    tracing::info!(index = %args.index.display(), retrieval = docs.retrieval(), "docent mcp: serving over stdio");
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(docent_mcp::serve_stdio(docs))?;
    Ok(())
}

/// Logs to stderr (stdout carries the protocol), `RUST_LOG` to tune, warnings by default.
fn init_stderr_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: an MCP client logs stderr to a file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
