//! What a tool call can get wrong. Each message tells the agent what to do instead; the server
//! returns them as tool results with `isError: true` (MCP's tool-level errors), so the agent sees
//! them and can retry.

/// A tool call that cannot be answered as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The query is empty or whitespace.
    #[error(
        "the query is empty; pass a question or keywords, e.g. \"how do I configure the base URL\""
    )]
    EmptyQuery,
    /// The query is longer than [`crate::MAX_QUERY_CHARS`].
    #[error("the query is {got} characters long, the limit is {limit}; search with a short question or a few keywords, not a document")]
    QueryTooLong {
        /// Its length in characters.
        got: usize,
        /// The limit.
        limit: usize,
    },
    /// `top` is 0 or above [`crate::MAX_TOP`].
    #[error("top = {got} is out of range; ask for 1 to {max} sections (default {default})")]
    BadTop {
        /// What was asked for.
        got: u64,
        /// The most allowed.
        max: usize,
        /// The default.
        default: usize,
    },
    /// The namespace is not in the index.
    #[error("namespace {got:?} is not in these docs; {}", namespaces_hint(.known))]
    UnknownNamespace {
        /// What was asked for.
        got: String,
        /// The namespaces the index has.
        known: Vec<String>,
    },
    /// No section or page has this URL.
    #[error("no {what} has the url {got:?}; pass a url exactly as search_docs returned it{}", suggestion(.close))]
    UnknownUrl {
        /// "section" or "page".
        what: &'static str,
        /// What was asked for.
        got: String,
        /// Urls that look close (same page, other anchors, or same file name).
        close: Vec<String>,
    },
    /// The url names a section of a page that exists in several namespaces.
    #[error("the url {got:?} is in several namespaces ({}); pass namespace as well", .namespaces.join(", "))]
    AmbiguousUrl {
        /// What was asked for.
        got: String,
        /// The namespaces that have it.
        namespaces: Vec<String>,
    },
    /// The question could not be embedded (the model or the provider failed).
    #[error("semantic search is unavailable right now ({0}); retry, or the server's operator should check its embedding provider")]
    Embedding(String),
}

fn namespaces_hint(known: &[String]) -> String {
    if known.is_empty() {
        "these docs have no namespaces: leave namespace out".to_string()
    } else {
        format!("use one of: {} (or leave namespace out to search all)", known.join(", "))
    }
}

fn suggestion(close: &[String]) -> String {
    if close.is_empty() {
        " (search_docs first to find one)".to_string()
    } else {
        format!("; did you mean {}?", close.join(" or "))
    }
}
