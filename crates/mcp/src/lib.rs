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
pub mod stdio;
mod text;

pub use docs::{
    Docs, Found, Page, SearchOutcome, Section, DEFAULT_TOP, MAX_QUERY_CHARS, MAX_TOP, READ_TOKENS,
    SEARCH_SECTION_TOKENS,
};
pub use error::ToolError;
pub use http::{http_service, HttpOptions, McpHttpService};
pub use server::{instructions, DocsServer, NoParams, ReadParams, SearchParams};

use std::sync::Arc;

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

/// Largest message read on stdin (one JSON-RPC line). A longer line is read and dropped
/// without being kept, and answered with a JSON-RPC error ([`stdio`]): tool arguments are a
/// query or a url, and a bound keeps a misbehaving client from growing the buffer without end.
pub const MAX_STDIO_MESSAGE_BYTES: usize = 1 << 20;

/// Serve `docs` over stdin/stdout until the client closes the connection.
pub async fn serve_stdio(docs: Arc<Docs>) -> Result<(), McpError> {
    stdio::serve_io(docs, tokio::io::stdin(), tokio::io::stdout()).await
}
