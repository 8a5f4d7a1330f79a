//! docent-core: everything docent does that needs no DOM and no async runtime.
//!
//! It compiles for `wasm32-unknown-unknown` (the widget) and natively (the CLI, the proxy).
//!
//! - [`model`]: chunks and the index header.
//! - [`chunk`] + [`source`]: Markdown/MDX and built HTML into heading-aware, token-bounded chunks.
//! - [`format`]: the ONE module that defines the index byte layout, used by writer and reader.
//! - [`lexical`], [`vector`], [`search`]: BM25, int8 cosine, hybrid fusion, relevance floor.
//! - [`pagekind`]: release notes and changelogs told from the page, for search's prior.
//! - [`retrieve`]: the one pipeline (question, history, rewrite → queries → search → fusion)
//!   that the widget, `docent search` and `docent eval` share.
//! - [`tokens`], [`budget`], [`prompt`]: token counting, context budgeting, prompt templates.
//! - [`cite`]: numbered sources, and the check that cited sentences are backed by them.
//! - [`render`]: safe, incremental Markdown rendering with [n] citations.
//! - [`extractive`]: answers without a chat model: the best sentences, cited.
//! - [`text`]: cutting strings at character boundaries.
//! - [`sse`]: a streaming parser for OpenAI's server-sent events.
//! - [`wire`]: the widget↔proxy contract: `x-docent-*` headers, error codes, the `docent`
//!   request field, and the one decoder of streamed answers' chunks.

pub mod budget;
pub use docent_case as case;
pub mod chunk;
pub mod cite;
pub mod extractive;
pub mod format;
mod header_json;
mod json;
pub mod lang;
pub mod lexical;
pub mod model;
pub mod pagekind;
pub mod prompt;
pub mod render;
pub mod retrieve;
pub mod scope;
pub mod search;
pub mod source;
pub mod split;
pub mod sse;
pub mod text;
pub mod tokens;
pub mod vector;
pub mod wire;

pub use format::{FormatError, Index};
pub use model::{Chunk, EmbedRecipe, IndexHeader};
pub use search::{Hit, Retriever, SearchOptions, SearchResult};

/// The docent version recorded in every index header.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
