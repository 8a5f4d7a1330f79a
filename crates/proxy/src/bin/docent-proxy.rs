//! `docent-proxy`: the same as `docent serve`, as a standalone binary.

use clap::Parser;

/// docent serve: the thin OpenAI-compatible proxy for the docent widget.
#[derive(Parser, Debug)]
#[command(name = "docent-proxy", version, about)]
struct Cli {
    #[command(flatten)]
    serve: docent_proxy::ServeArgs,
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = docent_proxy::run(cli.serve).await {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
