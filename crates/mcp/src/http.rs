//! MCP's Streamable HTTP transport for [`DocsServer`] (rmcp's tower service), for `docent serve`
//! to mount at `/mcp`.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::docs::Docs;
use crate::server::DocsServer;

/// The tower service [`http_service`] returns.
pub type McpHttpService = StreamableHttpService<DocsServer, LocalSessionManager>;

/// How the HTTP transport guards itself (the rest is the embedding server's job).
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `Host` header values accepted (DNS-rebinding protection), e.g. `["docs.example.com"]`;
    /// empty = any host.
    pub allowed_hosts: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
}

/// A Streamable HTTP service over `docs`: stateless (no sessions to keep; every request stands
/// alone) with plain JSON answers.
pub fn http_service(docs: Arc<Docs>, opts: HttpOptions) -> McpHttpService {
    let server = DocsServer::new(docs);
    let mut cfg = StreamableHttpServerConfig::default();
    cfg.legacy_session_mode = false;
    cfg.json_response = true;
    cfg.sse_keep_alive = None;
    cfg.allowed_hosts = opts.allowed_hosts;
    if opts.max_body_bytes > 0 {
        cfg.max_request_body_bytes = opts.max_body_bytes;
    }
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        cfg,
    )
}
