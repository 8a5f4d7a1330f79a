//! `docent-upstream-double --listen 127.0.0.1:PORT [--delay-ms N]`: a local server that speaks
//! OpenAI's wire format, for tests and benchmarks. See `docent_bench::double` for its keywords.

use clap::Parser;

/// The OpenAI upstream test double.
#[derive(Parser, Debug)]
#[command(name = "docent-upstream-double", version, about)]
struct Args {
    /// Address to listen on (loopback only is recommended).
    #[arg(long, default_value = "127.0.0.1:8788")]
    listen: String,
    /// Delay between streamed chunks of the default answer, in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Do not record requests for GET /_requests (load tests).
    #[arg(long)]
    no_record: bool,
    /// Stamp every streamed chunk with `bench_recv_ns`/`bench_sent_ns` (benchmarks).
    #[arg(long)]
    stamp: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(&args.listen).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {}: {e}; pick a free port with --listen 127.0.0.1:PORT",
            args.listen
        )
    })?;
    let addr = listener.local_addr()?;
    println!("docent-upstream-double listening on http://{addr}");
    docent_bench::double::serve(
        listener,
        docent_bench::double::DoubleOptions { delay_ms: args.delay_ms, stamp: args.stamp },
        !args.no_record,
    )
    .await
}
