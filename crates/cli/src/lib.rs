//! The `docent` command line: `index`, `search`, `inspect`, `eval`, `serve`, `mcp`, `llms`,
//! `report`, `demo`, `licenses`.
//!
//! `main.rs` only calls [`main`]; everything else lives here so other crates (and tests) can use
//! the library API, e.g. [`index::build_index`].

/// `println!` for command output that returns the write error (with `?`) instead of panicking,
/// so `docent inspect idx | head` ends quietly when the reader closes the pipe (see [`main`]).
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        writeln!(std::io::stdout())?;
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)?;
    }};
}

/// `print!` counterpart of `outln!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*)?;
    }};
}

pub mod anchors;
pub mod baseline;
pub mod config;
pub mod demo;
pub mod eval;
pub mod index;
pub mod inspect;
pub mod licenses;
pub mod llms;
pub mod mcp;
pub mod query;
pub mod report;
pub mod rewrite;
pub mod shards;
pub mod vitepress;
pub mod walk;

use clap::{Parser, Subcommand};

/// docent: AI answers for static documentation sites, from one prebuilt index file.
#[derive(Debug, Parser)]
#[command(name = "docent", version, about, long_about = None, after_help = "Examples:
  docent index docs --out public/docent.idx --embed local
  docent search public/docent.idx \"how do I configure the base URL?\"
  docent inspect public/docent.idx
  docent eval public/docent.idx eval/questions.jsonl
  docent serve --config docent.toml
  docent mcp public/docent.idx
  docent llms docs --out public
  docent demo
  docent licenses

Run `docent <command> --help` for each command's options and examples.")]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chunk a docs site (Markdown/MDX sources or built HTML) into one index file.
    Index(index::IndexArgs),
    /// Search an index from the terminal.
    Search(query::SearchArgs),
    /// Show an index file's header, counts and size breakdown.
    Inspect(inspect::InspectArgs),
    /// Measure retrieval quality on a set of questions with expected sections.
    Eval(eval::EvalArgs),
    /// Run the proxy (moderation, query embeddings, streamed chat completions).
    Serve(docent_proxy::ServeArgs),
    /// Serve the index to AI agents over MCP on stdin/stdout (search_docs, read_section, ...).
    Mcp(mcp::McpArgs),
    /// Write llms.txt, llms-full.txt and a Markdown file per page for AI agents.
    Llms(llms::LlmsArgs),
    /// Turn `docent serve`'s [analytics] records into one HTML page: outcomes over time, what the
    /// docs could not answer, answers marked not helpful.
    Report(report::ReportArgs),
    /// Run docent's own docs as a demo site with the widget.
    Demo(demo::DemoArgs),
    /// Print the licenses of the third-party code built into this binary.
    Licenses(licenses::LicensesArgs),
}

/// Run one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Index(a) => index::run(a),
        Command::Search(a) => query::run(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Serve(a) => {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(docent_proxy::run(a))
        }
        Command::Mcp(a) => mcp::run(a),
        Command::Llms(a) => llms::run(a),
        Command::Report(a) => report::run(a),
        Command::Demo(a) => {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(demo::run(a))
        }
        Command::Licenses(a) => licenses::run(a),
    }
}

/// The whole program: parse arguments, run, print errors (with their causes) and return the
/// process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => 0,
        // The reader of our output went away (`docent inspect idx | head`): stop quietly, like
        // a C tool killed by SIGPIPE, but with a success status (the reader got what it wanted).
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            1
        }
    }
}

/// Whether an error (or one of its causes) is a write to a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
