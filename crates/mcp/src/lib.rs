//! docent-mcp: a docs index as tools for AI agents, over the Model Context Protocol.
//!
//! The tools (`search_docs`, `read_section`, `read_page`, `list_namespaces`) run the same
//! retrieval as the widget (`docent_core::retrieve`, with the index's relevance floor) and make
//! no LLM calls. One implementation, two transports:
//!
//! - [`serve_stdio`]: `docent mcp INDEX` (a client starts the process and talks over stdin/stdout);
//! - [`http_service`]: MCP's Streamable HTTP, mounted at `/mcp` by `docent serve`.
//!
//! User documentation: docs/mcp.md.

mod docs;
mod error;
mod http;
mod server;
mod text;

pub use docs::{
    Docs, Found, Page, SearchOutcome, Section, DEFAULT_TOP, MAX_QUERY_CHARS, MAX_TOP, READ_TOKENS,
    SEARCH_SECTION_TOKENS,
};
pub use error::ToolError;
pub use http::{http_service, HttpOptions, McpHttpService};
pub use server::{instructions, DocsServer, NoParams, ReadParams, SearchParams};

use std::sync::Arc;

use rmcp::ServiceExt;

/// Why the MCP server stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The client never completed the MCP handshake (or stdin closed first).
    #[error("the MCP client did not complete the handshake: {0}; `docent mcp` is started by an MCP client (see docs/mcp.md), not run by hand")]
    Handshake(String),
    /// The connection failed while serving.
    #[error("the MCP connection failed: {0}")]
    Connection(String),
}

/// Largest message read on stdin (one JSON-RPC line). A longer line is dropped by the transport
/// (with a warning on stderr) without being read, so it gets no answer: tool arguments are a
/// query or a url, and a bound keeps a misbehaving client from growing the buffer without end.
pub const MAX_STDIO_MESSAGE_BYTES: usize = 1 << 20;

/// Serve `docs` over stdin/stdout until the client closes the connection.
pub async fn serve_stdio(docs: Arc<Docs>) -> Result<(), McpError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(stdin, stdout)
        .with_max_line_length(MAX_STDIO_MESSAGE_BYTES);
    let service = DocsServer::new(docs)
        .serve(transport)
        .await
        .map_err(|e| McpError::Handshake(e.to_string()))?;
    service.waiting().await.map_err(|e| McpError::Connection(e.to_string()))?;
    Ok(())
}
