//! `docent serve`: command-line arguments, start-up checks, and serving with graceful shutdown.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::app::{router, AppState, EmbedBackend};
use crate::config::{Config, EmbeddingsConfig, ProviderConfig, ProviderKind};

/// Arguments of `docent serve` (also the `docent-proxy` binary).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// docent.toml with [serve], [providers.*], [limits], [moderation], [prompt]
    /// (default: ./docent.toml when it exists, else offline defaults).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on (overrides [serve] listen; default 127.0.0.1:8787).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// An OpenAI-compatible base URL (e.g. http://127.0.0.1:4000/v1) used for chat; shortcut for
    /// a [providers.upstream] table of kind "openai-compatible".
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Chat model to request from --upstream.
    #[arg(long, value_name = "MODEL", default_value = "gpt-4o-mini")]
    pub chat_model: String,
    /// Name of the environment variable holding --upstream's API key (optional).
    #[arg(long, value_name = "ENV")]
    pub upstream_key_env: Option<String>,
    /// The index the widget loads: its embedding model is checked against [serve.embeddings]
    /// (and, when no embeddings are configured and the index was built with a local model, that
    /// model is served).
    #[arg(long, value_name = "FILE")]
    pub index: Option<PathBuf>,
    /// Allow this site origin (repeatable; adds to [serve] allow_origins), e.g. https://docs.example.com.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Log as JSON lines (default: human-readable). Filter with RUST_LOG (default "info").
    #[arg(long)]
    pub log_json: bool,
}

/// Load the config named by the arguments and apply the command-line overrides (not validated).
pub fn load_config(args: &ServeArgs) -> anyhow::Result<Config> {
    let mut cfg = match &args.config {
        Some(p) => Config::from_toml_file(p)?,
        None if Path::new("docent.toml").exists() => {
            Config::from_toml_file(Path::new("docent.toml"))?
        }
        None => Config::default_offline(),
    };
    if let Some(l) = &args.listen {
        cfg.serve.listen = l.clone();
    }
    if let Some(u) = &args.upstream {
        cfg.set_upstream(u, &args.chat_model);
        if let Some(env) = &args.upstream_key_env {
            if let Some(p) = cfg.providers.get_mut("upstream") {
                p.api_key_env = Some(env.clone());
            }
        }
    }
    if let Some(i) = &args.index {
        cfg.serve.index = Some(i.clone());
    }
    cfg.serve.allow_origins.extend(args.allow_origin.iter().cloned());
    Ok(cfg)
}

/// Read the index header (when `[serve] index` is set) and check it against the embeddings
/// config. With no embeddings configured and a `local` index, configures that local model.
/// Without `[serve] index`, `[mcp] index` is the one checked.
pub fn check_index(cfg: &mut Config) -> anyhow::Result<()> {
    let mcp_index = cfg.mcp.as_ref().map(|m| m.index.clone());
    let Some(path) = cfg.serve.index.clone().or(mcp_index) else { return Ok(()) };
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "cannot read the index {}; pass the file `docent index` wrote with --index",
            path.display()
        )
    })?;
    let index = docent_core::Index::from_bytes(bytes)
        .map_err(|e| anyhow::anyhow!("the index {} is not usable: {e}", path.display()))?;
    let header = index.header().clone();
    cfg.site_pages = Some(std::sync::Arc::new(crate::pages::SitePages::from_index(&index)));
    if cfg.prompt.docs_language.is_none() {
        if let Some(language) = header.docs_language() {
            tracing::info!(%language, "the docs are mostly in {language} (the index says): questions are rewritten in it");
            cfg.prompt.docs_language = Some(language.to_string());
        }
    }
    if header.provider == "none" || header.dims == 0 {
        if cfg.serve.embeddings.is_some() {
            tracing::warn!(index = %path.display(), "the index has no vectors (lexical only); [serve.embeddings] will not be used by the widget");
        }
        return Ok(());
    }
    match &cfg.serve.embeddings {
        None if header.provider == "local" => {
            cfg.providers
                .entry("local".into())
                .or_insert_with(|| ProviderConfig::new(ProviderKind::Local, None));
            // The dimensions are checked against the loaded model by `serve`.
            cfg.serve.embeddings = Some(EmbeddingsConfig {
                provider: "local".into(),
                model: header.model.clone(),
                dimensions: Some(header.dims as usize),
                query_prompt: Some(header.embedding.query_prompt.clone()),
                query_model: None,
                query_input_type: None,
            });
            tracing::info!(model = %header.model, "serving query embeddings with the index's local model");
            Ok(())
        }
        None => {
            tracing::warn!(model = %header.model, provider = %header.provider, "the index has vectors but no [serve.embeddings] is configured; the widget will search lexically only");
            Ok(())
        }
        Some(e) => {
            check_index_model(&header, e).map_err(anyhow::Error::msg)?;
            let local =
                cfg.providers.get(&e.provider).is_some_and(|p| p.kind == ProviderKind::Local);
            if let Some(e) = cfg.serve.embeddings.as_mut() {
                if local && e.dimensions.is_none() {
                    // A local model has fixed dimensions: `serve` checks them against the index's.
                    e.dimensions = Some(header.dims as usize);
                }
                // Questions are embedded as the index says (checked equal above when set).
                let r = &header.embedding;
                e.query_prompt.get_or_insert_with(|| r.query_prompt.clone());
                if e.query_model.is_none() && !r.query_model.is_empty() {
                    e.query_model = Some(r.query_model.clone());
                }
                if e.query_input_type.is_none() && !r.query_input_type.is_empty() {
                    e.query_input_type = Some(r.query_input_type.clone());
                }
            }
            Ok(())
        }
    }
}

/// A loaded local model must produce the dimensions the config (or the index) expects.
pub fn check_local_dims(
    e: &EmbeddingsConfig,
    model_dims: usize,
    model_dir: &str,
) -> Result<(), String> {
    match e.dimensions {
        Some(d) if d != model_dims => Err(format!(
            "embedding model mismatch: the local model \"{}\" ({model_dir}) produces {model_dims}-dimensional vectors, but the index (or [serve.embeddings] dimensions) needs {d}; point [providers.{}] path at the model the index was built with, or rebuild the index with this model",
            e.model, e.provider
        )),
        _ => Ok(()),
    }
}

/// The embeddings model must be the index's model (and dimensions must agree when set).
pub fn check_index_model(
    header: &docent_core::IndexHeader,
    e: &EmbeddingsConfig,
) -> Result<(), String> {
    if header.model != e.model {
        return Err(format!(
            "embedding model mismatch: the index was built with \"{}\" ({}), but [serve.embeddings] model = \"{}\"; set model = \"{}\" or rebuild the index with the server's model",
            header.model, header.provider, e.model, header.model
        ));
    }
    if let Some(d) = e.dimensions {
        if d != header.dims as usize {
            return Err(format!("[serve.embeddings] dimensions = {d} but the index has {}-dimensional vectors; set dimensions = {} or remove it", header.dims, header.dims));
        }
    }
    let r = &header.embedding;
    if let Some(p) = e.query_prompt.as_deref().filter(|p| *p != r.query_prompt) {
        return Err(format!(
            "embedding prompt mismatch: the index expects questions embedded with the prompt {:?}, but [serve.embeddings] query_prompt = {p:?}; set query_prompt = {:?} (or remove it to use the index's)",
            r.query_prompt, r.query_prompt
        ));
    }
    if let Some(m) = e.query_model.as_deref().filter(|m| *m != header.query_model()) {
        return Err(format!(
            "embedding model mismatch: the index expects questions embedded with \"{}\", but [serve.embeddings] query_model = \"{m}\"; set query_model = \"{}\" (or remove it to use the index's)",
            header.query_model(),
            header.query_model()
        ));
    }
    if let Some(t) = e.query_input_type.as_deref().filter(|t| *t != r.query_input_type) {
        return Err(format!(
            "[serve.embeddings] query_input_type = {t:?} but the index was built for {:?}; remove it to use the index's",
            r.query_input_type
        ));
    }
    Ok(())
}

/// Serve `cfg` on `listener` until `shutdown` resolves; then stop accepting, let in-flight
/// requests and streams finish (at most `[serve] shutdown_grace_secs`), and return.
pub async fn serve(
    cfg: Config,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_announced(cfg, listener, shutdown, || {}).await
}

/// [`serve`], calling `ready` once the server is ready to answer (logs open, a local model
/// loaded): "listening on" is not printed by a server about to fail on an unwritable log path.
async fn serve_announced(
    cfg: Config,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(),
) -> anyhow::Result<()> {
    cfg.validate()?;
    let grace = Duration::from_secs(cfg.serve.shutdown_grace_secs);
    let cfg = Arc::new(cfg);
    let state = Arc::new(AppState::new(cfg.clone())?);
    if let Some((e, EmbedBackend::Local(local))) = &state.embed {
        let model = local.get().await.map_err(anyhow::Error::msg)?;
        use docent_embed::Embedder;
        let info = model.info();
        check_local_dims(e, info.dims, &local.location()).map_err(anyhow::Error::msg)?;
        tracing::info!(model = %e.model, dims = info.dims, "local embedding model loaded");
    }
    if let Some(r) = state.limits.redis() {
        match r.warm().await {
            Ok(()) => tracing::info!("limits shared in Redis ([limits] store)"),
            Err(e) => {
                tracing::warn!(error = %e, on_failure = ?cfg.limits.store_unavailable, "the Redis limit store does not answer yet; [limits] store_unavailable applies until it does")
            }
        }
    }
    for model in crate::budget::models_with_unknown_window(&cfg) {
        tracing::warn!(model = %model, "docent does not know this chat model's context window and assumes {} tokens; set [limits] context_window to the model's real window (e.g. 128000), or long conversations are cut short", docent_core::budget::ModelLimits::UNKNOWN.context_window);
    }
    #[cfg(feature = "otel")]
    crate::otel::init(&cfg);
    #[cfg(not(feature = "otel"))]
    if cfg.serve.otlp_endpoint.is_some() {
        tracing::warn!("[serve] otlp_endpoint is set but this binary was built without the `otel` feature; traces are off");
    }
    let app = router(state.clone());
    ready();
    serve_connections(app, listener, &state, grace, shutdown).await;
    // The last answers' audit, feedback and analytics lines are still queued for their writer
    // threads, which the process would end mid-write.
    let _ = tokio::task::spawn_blocking({
        let state = state.clone();
        move || state.flush_logs(LOG_FLUSH)
    })
    .await;
    #[cfg(feature = "otel")]
    crate::otel::flush().await;
    Ok(())
}

/// How long shutdown waits for queued log lines to reach the disk.
const LOG_FLUSH: Duration = Duration::from_secs(5);

/// How long streams cut at the end of the grace period get to send their last event.
const CUT_FLUSH: Duration = Duration::from_secs(2);

/// The accept loop: at most `[serve] max_connections` connections at once (further clients
/// wait in the listen backlog), TCP_NODELAY, a header-read deadline that also closes idle
/// keep-alive and silent connections (`header_timeout_ms`), a send deadline that closes a
/// connection whose client takes no byte for `send_timeout_ms` (it stopped reading: the
/// response, its stream slot and its token charge go with it), and graceful shutdown: stop
/// accepting, let in-flight requests finish for `grace`, then end the streams still open with
/// an error event.
async fn serve_connections(
    app: axum::Router,
    listener: tokio::net::TcpListener,
    state: &Arc<AppState>,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    use hyper::server::conn::http1;
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    use tower::ServiceExt;

    let serve_cfg = &state.cfg.serve;
    let slots = Arc::new(tokio::sync::Semaphore::new(serve_cfg.max_connections));
    let header_timeout = Duration::from_millis(serve_cfg.header_timeout_ms);
    let send_timeout = Duration::from_millis(serve_cfg.send_timeout_ms);
    let max_header_bytes = serve_cfg.max_header_bytes;
    let (close_tx, close_rx) = tokio::sync::watch::channel(false);
    // Every connection task holds a sender; `recv` returns None once all have ended.
    let (alive_tx, mut alive_rx) = tokio::sync::mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Streams are many small writes (a few tokens each): without TCP_NODELAY, Nagle's
        // algorithm holds a chunk back until the client's (delayed, up to 40 ms) ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on a client connection");
        }
        let svc =
            app.clone().map_request(move |req: axum::http::Request<hyper::body::Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                req
            });
        let mut close = close_rx.clone();
        let closing = async move {
            let _ = close.wait_for(|c| *c).await;
        };
        let alive = alive_tx.clone();
        let st = state.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _alive = alive;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_header_size(max_header_bytes);
            let stall = Arc::new(Stall::new());
            let io = TokioIo::new(Watched { io: tcp, stall: stall.clone() });
            let conn = builder.serve_connection(io, TowerToHyperService::new(svc));
            tokio::pin!(conn);
            // Its own timer: hyper polls the response body only when the socket takes bytes,
            // so nothing inside the body runs for a client that stopped reading.
            let stalled = stalled(&stall, send_timeout);
            tokio::pin!(stalled);
            let gone = |peer| {
                st.metrics.stalled_client();
                tracing::info!(peer = %peer, send_timeout_ms = send_timeout.as_millis() as u64, "client stopped reading; connection closed");
            };
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(peer = %peer, error = %e, "connection ended with an error");
                    }
                }
                _ = &mut stalled => gone(peer),
                _ = closing => {
                    conn.as_mut().graceful_shutdown();
                    tokio::select! {
                        _ = conn => {}
                        _ = stalled => gone(peer),
                    }
                }
            }
        });
    }
    drop(listener);
    drop(alive_tx);
    let _ = close_tx.send(true);
    tracing::info!(
        open_streams = state.metrics.open_streams(),
        grace_secs = grace.as_secs(),
        "shutting down: draining in-flight requests"
    );
    if tokio::time::timeout(grace, alive_rx.recv()).await.is_err() {
        tracing::warn!(
            open_streams = state.metrics.open_streams(),
            "grace period over; ending the remaining streams"
        );
        state.shutdown.send_replace(true);
        let _ = tokio::time::timeout(CUT_FLUSH, alive_rx.recv()).await;
    }
}

/// How a client connection's writes are going: when the server last found the client's
/// receive window closed (a write that could not proceed), until a write gets through again.
/// Read by [`stalled`], a timer of its own: hyper only polls a response body when the socket
/// takes bytes, so checks inside the body (the relay's) never run for a client that stops
/// reading.
struct Stall {
    origin: tokio::time::Instant,
    /// Milliseconds since `origin` (+1) when writing blocked; 0 while writes get through.
    since: AtomicU64,
    /// Wakes [`stalled`] when writing blocks.
    blocked: tokio::sync::Notify,
}

impl Stall {
    fn new() -> Stall {
        Stall {
            origin: tokio::time::Instant::now(),
            since: AtomicU64::new(0),
            blocked: tokio::sync::Notify::new(),
        }
    }

    fn wrote(&self, pending: bool) {
        if !pending {
            self.since.store(0, Ordering::Relaxed);
        } else if self.since.load(Ordering::Relaxed) == 0 {
            let ms = self.origin.elapsed().as_millis() as u64 + 1;
            self.since.store(ms, Ordering::Relaxed);
            self.blocked.notify_one();
        }
    }

    fn blocked_at(&self) -> Option<tokio::time::Instant> {
        match self.since.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(self.origin + Duration::from_millis(ms - 1)),
        }
    }
}

/// Resolves once writing to the client has been blocked for `limit` without a byte getting
/// through (the client stopped reading); never while writes progress or nothing is written.
async fn stalled(stall: &Stall, limit: Duration) {
    loop {
        match stall.blocked_at() {
            None => stall.blocked.notified().await,
            Some(at) if at.elapsed() >= limit => return,
            Some(at) => tokio::time::sleep_until(at + limit).await,
        }
    }
}

/// A client socket whose writes are watched ([`Stall`]).
struct Watched<T> {
    io: T,
    stall: Arc<Stall>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.note(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.note(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T> Watched<T> {
    fn note(&self, r: &Poll<std::io::Result<usize>>) {
        match r {
            Poll::Pending => self.stall.wrote(true),
            Poll::Ready(Ok(n)) if *n > 0 => self.stall.wrote(false),
            Poll::Ready(_) => {}
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

fn init_tracing(json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: under systemd or docker, stderr is a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // The CLI may have installed a subscriber already; that one wins.
    let _ = if json { builder.json().try_init() } else { builder.try_init() };
}

/// Why `docent serve` cannot listen on `addr`, and what to do about it.
fn listen_error(addr: &str, e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    let what = match e.kind() {
        PermissionDenied => {
            "ports below 1024 need root or the CAP_NET_BIND_SERVICE capability \
             (`sudo setcap cap_net_bind_service=+ep \"$(command -v docent)\"`); or listen on a \
             port above 1024 (`--listen 127.0.0.1:8787`) behind your web server"
        }
        AddrInUse => "another program listens there: stop it, or pick another port with --listen",
        AddrNotAvailable => {
            "this machine has no such address: use 127.0.0.1 (this machine only) or 0.0.0.0 \
             (every interface) with --listen"
        }
        _ => "pick another address with --listen",
    };
    format!("cannot listen on {addr}: {e}; {what}")
}

/// `docent serve`: load + validate the config, check the index, bind, serve until Ctrl-C/SIGTERM.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_tracing(args.log_json);
    let mut cfg = load_config(&args)?;
    cfg.validate()?;
    check_index(&mut cfg)?;
    let listener = tokio::net::TcpListener::bind(&cfg.serve.listen)
        .await
        .map_err(|e| anyhow::anyhow!(listen_error(&cfg.serve.listen, &e)))?;
    let addr = listener.local_addr()?;
    let chat = match &cfg.serve.chat {
        Some(c) => format!("chat: {} via [providers.{}]", c.model, c.provider),
        None => "chat: none (clients answer extractively)".into(),
    };
    let emb = match &cfg.serve.embeddings {
        Some(e) => format!("embeddings: {} via [providers.{}]", e.model, e.provider),
        None => "embeddings: none".into(),
    };
    let moderation = if cfg.moderation.enabled { "on" } else { "off" };
    let ready = move || {
        eprintln!(
            "docent serve listening on http://{addr} ({chat}; {emb}; moderation: {moderation})"
        )
    };
    serve_announced(cfg, listener, shutdown_signal(), ready).await
}

#[cfg(test)]
mod tests {
    use super::listen_error;

    #[test]
    fn a_failed_listen_says_why_and_what_to_do() {
        // A port taken by another listener: the real error from the system.
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let e = std::net::TcpListener::bind(&addr).unwrap_err();
        let msg = listen_error(&addr, &e);
        assert!(msg.contains(&addr) && msg.contains("another program listens there"), "{msg}");
        // A low port without the right (root here, so not reproducible by binding).
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let msg = listen_error("0.0.0.0:80", &denied);
        assert!(msg.contains("CAP_NET_BIND_SERVICE") && msg.contains("8787"), "{msg}");
        let absent = std::io::Error::from(std::io::ErrorKind::AddrNotAvailable);
        assert!(listen_error("10.9.9.9:8787", &absent).contains("no such address"));
    }
}
