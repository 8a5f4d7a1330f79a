//! [`Docs`]: one loaded index, its query embedder, and the section/page lookups the tools need.
//! No MCP here: the tools in [`crate::server`] only validate, call these and format.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use docent_core::retrieve::{retrieve, Ask};
use docent_core::search::{Hit, SearchOptions};
use docent_core::Index;
use docent_embed::Embedder;
use serde::Serialize;

use crate::error::ToolError;
use crate::text::{join_chunks, Budgeted};

/// Longest query accepted, in characters: a question or keywords, not a document.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most sections one `search_docs` call returns.
pub const MAX_TOP: usize = 20;
/// Sections `search_docs` returns when `top` is not given.
pub const DEFAULT_TOP: usize = 5;
/// Token budget (cl100k) of one section's text in `search_docs` results.
pub const SEARCH_SECTION_TOKENS: u32 = 700;
/// Token budget of `read_section` and `read_page` answers.
pub const READ_TOKENS: u32 = 24_000;

/// One section in a tool answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// `url#anchor` (just the page url for a section without an anchor): what to cite, and what
    /// `read_section` takes.
    pub url: String,
    /// The page title.
    pub title: String,
    /// Headings from the page's h1 down to this section.
    pub heading_path: Vec<String>,
    /// The docs namespace (version), empty when the index has none.
    pub namespace: String,
    /// The section's text (Markdown-ish; code blocks fenced).
    pub text: String,
    /// cl100k tokens of `text`.
    pub tokens: u32,
    /// Whether `text` stops before the section ends (the budget was reached).
    pub truncated: bool,
}

/// A ranked section of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// 1-based rank.
    pub rank: usize,
    /// The fused retrieval score (higher is better; comparable within one search only).
    pub score: f32,
    /// The section.
    #[serde(flatten)]
    pub section: Section,
}

/// What `search_docs` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchOutcome {
    /// True when the relevance floor judged that the docs do not cover the query: `results`
    /// are then only the closest sections, not answers.
    pub abstained: bool,
    /// `answered`, `uncertain` (the results may not fully answer the query: say so) or
    /// `declined` (the same as `abstained`).
    pub outcome: &'static str,
    /// The floor's confidence in the best result (0-1).
    pub confidence: f32,
    /// "hybrid" (embeddings + BM25) or "lexical" (BM25 only).
    pub retrieval: &'static str,
    /// The sections, best first.
    pub results: Vec<Found>,
}

/// A page: its sections in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    /// The page url (no anchor).
    pub url: String,
    /// The page title.
    pub title: String,
    /// The docs namespace (version), empty when the index has none.
    pub namespace: String,
    /// Its sections, in page order.
    pub sections: Vec<Section>,
    /// Sections left out because the answer reached its token budget (read them one by one).
    pub omitted: Vec<String>,
}

/// The chunks of one section (a place of the index), in order.
#[derive(Debug, Clone)]
struct Place {
    chunks: Vec<u32>,
}

/// A loaded index ready for the tools.
pub struct Docs {
    index: Index,
    embedder: Option<Arc<dyn Embedder>>,
    name: String,
    places: HashMap<u32, Place>,
    /// `url#anchor` → the places with that link (one per namespace).
    links: BTreeMap<String, Vec<u32>>,
    /// page url → for each namespace, the page's places in order.
    pages: BTreeMap<String, Vec<Vec<u32>>>,
}

impl std::fmt::Debug for Docs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Docs")
            .field("name", &self.name)
            .field("chunks", &self.index.len())
            .field("pages", &self.pages.len())
            .field("embedder", &self.embedder.as_ref().map(|e| e.info().model))
            .finish()
    }
}

impl Docs {
    /// Docs over `index`. `embedder` embeds queries with the model the index was built with
    /// (the caller checks that); `None` searches lexically. `name` names the docs in the
    /// server's instructions, e.g. "the docent documentation".
    pub fn new(index: Index, embedder: Option<Arc<dyn Embedder>>, name: &str) -> Docs {
        let mut places: HashMap<u32, Place> = HashMap::new();
        let mut links: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        let mut pages: BTreeMap<String, Vec<Vec<u32>>> = BTreeMap::new();
        let mut page_slot: HashMap<u32, (String, usize)> = HashMap::new();
        for i in 0..index.len() {
            let place = index.section_of(i);
            if let Some(p) = places.get_mut(&place) {
                p.chunks.push(i as u32);
                continue;
            }
            places.insert(place, Place { chunks: vec![i as u32] });
            let c = index.chunk_ref(i);
            links.entry(link(c.url, c.anchor)).or_default().push(place);
            let page = index.page_of(i);
            let (url, slot) = page_slot
                .entry(page)
                .or_insert_with(|| {
                    let list = pages.entry(c.url.to_string()).or_default();
                    list.push(Vec::new());
                    (c.url.to_string(), list.len() - 1)
                })
                .clone();
            if let Some(list) = pages.get_mut(&url) {
                list[slot].push(place);
            }
        }
        Docs { index, embedder, name: name.to_string(), places, links, pages }
    }

    /// What the docs are called in the server's instructions.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The namespaces (docs versions) in the index, sorted; empty when it has none.
    pub fn namespaces(&self) -> &[String] {
        &self.index.header().namespaces
    }

    /// Number of pages (a page in two namespaces counts twice).
    pub fn page_count(&self) -> usize {
        self.pages.values().map(Vec::len).sum()
    }

    /// "hybrid" when queries are embedded, else "lexical".
    pub fn retrieval(&self) -> &'static str {
        if self.embedder.is_some() {
            "hybrid"
        } else {
            "lexical"
        }
    }

    /// Validate `search_docs` arguments: the query (trimmed), top and namespace.
    pub fn check_search<'q>(
        &self,
        query: &'q str,
        top: Option<u64>,
        namespace: Option<&str>,
    ) -> Result<(&'q str, usize), ToolError> {
        let q = query.trim();
        if q.is_empty() {
            return Err(ToolError::EmptyQuery);
        }
        let chars = q.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(ToolError::QueryTooLong { got: chars, limit: MAX_QUERY_CHARS });
        }
        let top = match top {
            None => DEFAULT_TOP,
            Some(t) if (1..=MAX_TOP as u64).contains(&t) => t as usize,
            Some(t) => {
                return Err(ToolError::BadTop { got: t, max: MAX_TOP, default: DEFAULT_TOP })
            }
        };
        if let Some(ns) = namespace {
            if !self.namespaces().iter().any(|n| n == ns) {
                return Err(ToolError::UnknownNamespace {
                    got: ns.chars().take(100).collect(),
                    known: self.namespaces().to_vec(),
                });
            }
        }
        Ok((q, top))
    }

    /// Search: the widget's pipeline (`docent_core::retrieve`, the index's relevance floor),
    /// one result per section, each section's text within [`SEARCH_SECTION_TOKENS`].
    pub async fn search(
        &self,
        query: &str,
        top: Option<u64>,
        namespace: Option<&str>,
    ) -> Result<SearchOutcome, ToolError> {
        let (q, top) = self.check_search(query, top, namespace)?;
        let ask = Ask { question: q, history: &[], rewritten: None };
        let vectors = match &self.embedder {
            Some(e) => {
                let inputs = ask.embedding_inputs();
                let v = e.embed(&inputs).await.map_err(|e| ToolError::Embedding(e.to_string()))?;
                if v.len() != inputs.len() {
                    return Err(ToolError::Embedding(format!(
                        "{} vectors for {} inputs",
                        v.len(),
                        inputs.len()
                    )));
                }
                v
            }
            None => Vec::new(),
        };
        // Hits are sections: `top` of them.
        let opts = SearchOptions {
            top_k: top,
            namespace: namespace.map(str::to_string),
            ..SearchOptions::default()
        };
        let result = retrieve(&self.index, &ask, &vectors, &opts);
        let hits = if result.abstained { &result.closest } else { &result.hits };
        Ok(SearchOutcome {
            abstained: result.abstained,
            outcome: result.outcome().name(),
            confidence: result.confidence,
            retrieval: self.retrieval(),
            results: self.per_section(hits, top),
        })
    }

    /// One result per section hit (hits are distinct sections already; a repeat is skipped all
    /// the same), its text windowed around its best chunk.
    fn per_section(&self, hits: &[Hit], top: usize) -> Vec<Found> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for h in hits {
            if h.chunk as usize >= self.index.len() {
                continue;
            }
            let place = self.index.section_of(h.chunk as usize);
            if seen.contains(&place) {
                continue;
            }
            seen.push(place);
            out.push(Found {
                rank: out.len() + 1,
                score: h.score,
                section: self.section(place, SEARCH_SECTION_TOKENS, Some(h.chunk)),
            });
            if out.len() == top {
                break;
            }
        }
        out
    }

    /// One section's text within `budget` tokens; `must_show` is a chunk the window must
    /// include (the one that matched a search).
    fn section(&self, place: u32, budget: u32, must_show: Option<u32>) -> Section {
        let chunks = self.places.get(&place).map(|p| p.chunks.as_slice()).unwrap_or(&[]);
        let first = chunks.first().copied().unwrap_or(0) as usize;
        let c = self.index.chunk_ref(first);
        let tokens: Vec<u32> =
            chunks.iter().map(|&i| self.index.chunk_ref(i as usize).tokens).collect();
        let window = Budgeted::window(
            &tokens,
            budget,
            must_show.and_then(|m| chunks.iter().position(|&i| i == m)),
        );
        let texts: Vec<&str> = chunks[window.start..window.end]
            .iter()
            .map(|&i| self.index.chunk_ref(i as usize).text)
            .collect();
        Section {
            url: link(c.url, c.anchor),
            title: c.title.to_string(),
            heading_path: c.breadcrumb().into_iter().map(str::to_string).collect(),
            namespace: c.namespace.to_string(),
            text: join_chunks(&texts),
            tokens: tokens[window.start..window.end].iter().sum(),
            truncated: window.start > 0 || window.end < chunks.len(),
        }
    }

    /// The place of `url` (`url#anchor` as search_docs gives it), in `namespace` when given.
    fn find_section(&self, url: &str, namespace: Option<&str>) -> Result<u32, ToolError> {
        let url = url.trim();
        let candidates = match self.links.get(url) {
            Some(c) => c.clone(),
            // A page url without an anchor: its first section.
            None => match self.pages.get(url.split('#').next().unwrap_or(url)) {
                Some(list) if !url.contains('#') => {
                    list.iter().filter_map(|p| p.first().copied()).collect()
                }
                _ => {
                    return Err(ToolError::UnknownUrl {
                        what: "section",
                        got: url.chars().take(300).collect(),
                        close: self.close_to(url),
                    })
                }
            },
        };
        self.pick_namespace(url, candidates, namespace, |p| *p)
    }

    /// Pick the candidate in `namespace` (or the only one); `place` gives a candidate's place.
    fn pick_namespace<T: Clone>(
        &self,
        url: &str,
        candidates: Vec<T>,
        namespace: Option<&str>,
        place: impl Fn(&T) -> u32 + Copy,
    ) -> Result<T, ToolError> {
        let ns_of = |t: &T| self.namespace_of_place(place(t));
        if let Some(ns) = namespace {
            return candidates.iter().find(|t| ns_of(t) == ns).cloned().ok_or_else(|| {
                if self.namespaces().iter().any(|n| n == ns) {
                    ToolError::UnknownUrl {
                        what: "section",
                        got: format!("{url} (namespace {ns})"),
                        close: Vec::new(),
                    }
                } else {
                    ToolError::UnknownNamespace {
                        got: ns.chars().take(100).collect(),
                        known: self.namespaces().to_vec(),
                    }
                }
            });
        }
        match candidates.len() {
            1 => Ok(candidates[0].clone()),
            _ => Err(ToolError::AmbiguousUrl {
                got: url.to_string(),
                namespaces: candidates.iter().map(|t| ns_of(t).to_string()).collect(),
            }),
        }
    }

    fn namespace_of_place(&self, place: u32) -> &str {
        let first = self.places.get(&place).and_then(|p| p.chunks.first()).copied().unwrap_or(0);
        self.index.chunk_ref(first as usize).namespace
    }

    /// Up to 5 known links close to an unknown `url`: the same page's sections (those whose
    /// anchor starts like the asked one first), else pages with the same file name.
    fn close_to(&self, url: &str) -> Vec<String> {
        let page = url.split('#').next().unwrap_or(url);
        if self.pages.contains_key(page) {
            let asked = url.split_once('#').map(|(_, a)| a).unwrap_or("");
            let prefix = format!("{page}#");
            let mut same: Vec<&String> = self
                .links
                .range(prefix.clone()..)
                .map(|(k, _)| k)
                .take_while(|k| k.starts_with(&prefix))
                .collect();
            same.sort_by_key(|k| {
                let a = &k[prefix.len()..];
                let shared = a.chars().zip(asked.chars()).take_while(|(x, y)| x == y).count();
                (std::cmp::Reverse(shared), a.len().abs_diff(asked.len()))
            });
            return same.into_iter().take(5).cloned().collect();
        }
        let name = page.trim_end_matches('/').rsplit('/').next().unwrap_or(page);
        let stem = name.split('.').next().unwrap_or(name);
        if stem.is_empty() {
            return Vec::new();
        }
        self.pages
            .keys()
            .filter(|k| {
                let n = k.trim_end_matches('/').rsplit('/').next().unwrap_or(k);
                n.split('.').next() == Some(stem)
            })
            .take(5)
            .cloned()
            .collect()
    }

    /// `read_section`: one section's whole text (within [`READ_TOKENS`]).
    pub fn read_section(&self, url: &str, namespace: Option<&str>) -> Result<Section, ToolError> {
        let place = self.find_section(url, namespace)?;
        Ok(self.section(place, READ_TOKENS, None))
    }

    /// `read_page`: a page's sections in order (within [`READ_TOKENS`] in all; the rest are
    /// listed in [`Page::omitted`]). A `#anchor` on `url` is ignored.
    pub fn read_page(&self, url: &str, namespace: Option<&str>) -> Result<Page, ToolError> {
        let page_url = url.trim().split('#').next().unwrap_or("");
        let Some(list) = self.pages.get(page_url) else {
            return Err(ToolError::UnknownUrl {
                what: "page",
                got: url.trim().chars().take(300).collect(),
                close: self.close_to(page_url),
            });
        };
        let places = self.pick_namespace(page_url, list.clone(), namespace, |p: &Vec<u32>| {
            p.first().copied().unwrap_or(0)
        })?;
        let mut left = READ_TOKENS;
        let mut sections = Vec::new();
        let mut omitted = Vec::new();
        for place in places {
            let s = self.section(place, left.max(1), None);
            if !omitted.is_empty() || (s.tokens > left && !sections.is_empty()) {
                omitted.push(s.url);
                continue;
            }
            left = left.saturating_sub(s.tokens);
            sections.push(s);
        }
        let first = sections.first();
        Ok(Page {
            url: page_url.to_string(),
            title: first.map(|s| s.title.clone()).unwrap_or_default(),
            namespace: first.map(|s| s.namespace.clone()).unwrap_or_default(),
            sections,
            omitted,
        })
    }
}

/// `url#anchor`, or `url` when there is no anchor (as `Chunk::link`).
fn link(url: &str, anchor: &str) -> String {
    if anchor.is_empty() {
        url.to_string()
    } else {
        format!("{url}#{anchor}")
    }
}
