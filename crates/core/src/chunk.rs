//! Heading-aware, token-bounded chunking of [`Page`]s.
//!
//! - A chunk never spans two sections (h1–h4): each [`Section`] is chunked on its own.
//! - A section that fits `max_tokens` (cl100k) is one chunk. A longer one is packed from whole
//!   blocks (paragraphs, list items, code blocks) up to `max_tokens`, each new chunk starting with
//!   a short overlap (the last sentences of the previous chunk's last paragraph). Code blocks are
//!   never cut unless one alone is longer than the limit (then it is split between lines and each
//!   piece re-fenced); over-long paragraphs split between sentences, then words.
//! - An optional `fits` callback (the embedding model's own tokenizer and input limit) is checked
//!   on every chunk's [`Chunk::embedding_input`]; a chunk that does not fit is split further with a
//!   smaller limit until it does. Nothing is ever silently truncated: if even a one-word chunk
//!   cannot fit (the breadcrumb alone is too long), [`ChunkError::DoesNotFit`] says so.

use crate::model::Chunk;
use crate::source::{Block, Page};
use std::rc::Rc;

/// Chunk size settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkOptions {
    /// Upper bound on a chunk's cl100k tokens (default 350).
    pub max_tokens: usize,
    /// Tokens of the previous chunk repeated at the start of the next one within a section
    /// (default 40). Only whole sentences of text, never code.
    pub overlap_tokens: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions { max_tokens: 350, overlap_tokens: 40 }
    }
}

/// A chunk that cannot be made to fit the embedding model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// Even the smallest split of this section exceeds the model's input limit.
    #[error("section {link} cannot fit the embedding model's input limit even when split to single words (its title and breadcrumb alone are too long?); use a model with a larger input limit or shorten the heading")]
    DoesNotFit {
        /// `url#anchor` of the section.
        link: String,
    },
}

/// The cl100k_base token count of `text` (tiktoken's embedded ranks; native builds).
#[cfg(feature = "embedded-ranks")]
pub fn cl100k_tokens(text: &str) -> usize {
    crate::tokens::cl100k_count(text)
}

/// Splits pages into chunks. `count` is the cl100k counter ([`cl100k_tokens`] natively).
pub struct Chunker<'a> {
    /// Size settings.
    pub opts: ChunkOptions,
    /// Counts cl100k tokens (stored in [`Chunk::tokens`] and used for `max_tokens`).
    pub count: &'a dyn Fn(&str) -> usize,
    /// The embedding model's check: true when this embedding input fits its limit.
    pub fits: Option<&'a dyn Fn(&str) -> bool>,
}

#[derive(Debug, Clone)]
struct Unit {
    text: String,
    tokens: usize,
    code: bool,
    /// For a row of a table, the table's first row (its header): a chunk that starts inside
    /// the table starts with it, so its rows keep their column names ([`table_heads`]).
    head: Option<Rc<Unit>>,
}

/// Units are joined with this separator into a chunk's text.
const JOIN: &str = "\n\n";

/// Smallest limit tried before giving up with [`ChunkError::DoesNotFit`].
const MIN_LIMIT: usize = 4;

/// Bytes per allowed token above which a section is not counted whole first (see `chunk_page`).
const LIKELY_TOO_LONG: usize = 12;

impl Chunker<'_> {
    /// Chunk one page. `url` is the page URL without anchor, `namespace` may be empty.
    pub fn chunk_page(
        &self,
        page: &Page,
        url: &str,
        namespace: &str,
    ) -> Result<Vec<Chunk>, ChunkError> {
        let h1_anchor = page
            .sections
            .iter()
            .find(|s| s.level == 1 && !s.anchor.is_empty())
            .map(|s| s.anchor.clone());
        let mut out = Vec::new();
        for section in &page.sections {
            if section.blocks.is_empty() {
                continue;
            }
            let anchor = if section.level == 0 && section.anchor.is_empty() {
                h1_anchor.clone().unwrap_or_default()
            } else {
                section.anchor.clone()
            };
            let template = Chunk {
                url: url.to_string(),
                anchor,
                title: page.title.clone(),
                breadcrumb: section.breadcrumb.clone(),
                namespace: namespace.to_string(),
                ..Default::default()
            };
            let max = self.opts.max_tokens.max(MIN_LIMIT);
            let rendered: Vec<String> = section.blocks.iter().map(Block::render).collect();
            let bytes: usize = rendered.iter().map(|r| r.len() + 2).sum();
            // Fast path: the whole section is one chunk (one tokenizer pass). A section of more
            // than LIKELY_TOO_LONG bytes per allowed token cannot fit in practice (docs average
            // 3–5 bytes a token), so it is not counted whole only to be counted again in parts;
            // the packing below still makes it one chunk if it does fit.
            let mut limit = max;
            if bytes <= max * LIKELY_TOO_LONG {
                let full = rendered.join(JOIN);
                let tokens = (self.count)(&full);
                if tokens <= max {
                    let c = self.make(&template, full, Some(tokens));
                    if self.fit(&c) {
                        out.push(c);
                        continue;
                    }
                }
                limit = max.min(tokens.max(MIN_LIMIT));
            }
            let units = self.units(&section.blocks, rendered, max);
            self.pack_fitting(&template, units, limit, &mut out)?;
        }
        Ok(out)
    }

    fn fit(&self, c: &Chunk) -> bool {
        self.fits.map(|f| f(&c.embedding_input())).unwrap_or(true)
    }

    fn make(&self, template: &Chunk, text: String, tokens: Option<usize>) -> Chunk {
        let mut c = template.clone();
        c.tokens = tokens.unwrap_or_else(|| (self.count)(&text)) as u32;
        c.text = text;
        c.hash = c.compute_hash();
        c
    }

    /// Pack units into chunks of at most `limit` tokens; re-split any chunk the model rejects.
    fn pack_fitting(
        &self,
        template: &Chunk,
        units: Vec<Unit>,
        limit: usize,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ChunkError> {
        for group in self.pack(units, limit) {
            let text = join_units(&group);
            let tokens = self.joined_tokens(&group);
            let c = self.make(template, text, tokens);
            if self.fit(&c) {
                out.push(c);
                continue;
            }
            let group_tokens: usize = group.iter().map(|u| u.tokens).sum();
            let smaller = (limit.min(group_tokens.max(1)) * 3 / 4).max(1);
            if limit <= MIN_LIMIT || smaller < MIN_LIMIT {
                return Err(ChunkError::DoesNotFit { link: template.link() });
            }
            let units: Vec<Unit> = group
                .into_iter()
                .flat_map(|u| {
                    let head = u.head.clone();
                    self.split_unit(u, smaller).into_iter().map(move |mut p| {
                        p.head = head.clone();
                        p
                    })
                })
                .collect();
            self.pack_fitting(template, units, smaller, out)?;
        }
        Ok(())
    }

    /// Greedy packing with overlap.
    fn pack(&self, units: Vec<Unit>, limit: usize) -> Vec<Vec<Unit>> {
        let mut groups: Vec<Vec<Unit>> = Vec::new();
        let mut cur: Vec<Unit> = Vec::new();
        let mut cur_tokens = 0usize;
        let mut cur_has_new = false;
        for u in units {
            if cur_has_new && cur_tokens + u.tokens + 1 > limit {
                let overlap = self.overlap_tail(&cur);
                groups.push(std::mem::take(&mut cur));
                cur_tokens = 0;
                // A chunk that starts inside a table starts with the table's header row.
                if let Some(h) = u.head.as_ref().filter(|h| h.tokens + u.tokens + 1 < limit) {
                    cur_tokens = h.tokens + 1;
                    cur.push(Unit { head: None, ..(**h).clone() });
                }
                if let Some(o) = overlap {
                    if cur_tokens + o.tokens + u.tokens < limit {
                        cur_tokens += o.tokens + 1;
                        cur.push(o);
                    }
                }
            }
            cur_tokens += u.tokens + 1;
            cur.push(u);
            cur_has_new = true;
        }
        if cur_has_new {
            groups.push(cur);
        }
        groups
    }

    /// The exact token count of the units joined with [`JOIN`], from their own counts, without
    /// counting the joined text again.
    ///
    /// The cl100k pattern has no look-behind, so a piece boundary depends only on the text after
    /// it, and no piece spans a newline followed by a non-space. When every unit starts and ends
    /// with a non-space (units are trimmed), the pieces of `a JOIN b` are those of `a` up to its
    /// last piece, then the pieces of that last piece followed by JOIN, then exactly those of `b`.
    /// The last piece starts at or after `a`'s last whitespace character (a piece that contains
    /// whitespace followed by a non-space starts with that whitespace), so what the join adds is
    /// `count(tail + JOIN) - count(tail)` for the tail of `a` from its last whitespace. The
    /// chunking tests check the result against counting every chunk's text on The Rust Book, The
    /// Reference and docent's docs. `None` (count the text) when a unit is not trimmed.
    fn joined_tokens(&self, units: &[Unit]) -> Option<usize> {
        let mut total = 0isize;
        for (i, u) in units.iter().enumerate() {
            let t = u.text.as_str();
            if t.is_empty()
                || t.starts_with(char::is_whitespace)
                || t.ends_with(char::is_whitespace)
            {
                return None;
            }
            total += u.tokens as isize;
            if i + 1 < units.len() {
                let tail = t.rfind(char::is_whitespace).map_or(t, |ws| &t[ws..]);
                let mut joined = String::with_capacity(tail.len() + JOIN.len());
                joined.push_str(tail);
                joined.push_str(JOIN);
                total += (self.count)(&joined) as isize - (self.count)(tail) as isize;
            }
        }
        usize::try_from(total).ok()
    }

    /// The last sentences (≤ overlap tokens) of the group's last text unit.
    fn overlap_tail(&self, group: &[Unit]) -> Option<Unit> {
        let budget = self.opts.overlap_tokens;
        if budget == 0 {
            return None;
        }
        let last = group.last()?;
        if last.code {
            return None;
        }
        let sentences = split_sentences(&last.text);
        let mut taken: Vec<&str> = Vec::new();
        let mut tokens = 0;
        for s in sentences.iter().rev() {
            let t = (self.count)(s);
            if tokens + t > budget {
                break;
            }
            tokens += t;
            taken.push(s);
        }
        if taken.is_empty() || taken.len() == sentences.len() && group.len() == 1 {
            return None;
        }
        taken.reverse();
        let text = taken.concat().trim().to_string();
        Some(Unit { tokens: (self.count)(&text), text, code: false, head: None })
    }

    /// Blocks (and their rendered text) as units, each at most `limit` tokens.
    fn units(&self, blocks: &[Block], rendered: Vec<String>, limit: usize) -> Vec<Unit> {
        let heads = table_heads(blocks);
        let mut out = Vec::new();
        // The header row of the table being read (tables do not nest), when it is short enough
        // to repeat (at most half the limit).
        let mut table: Option<(usize, Rc<Unit>)> = None;
        for (i, (b, text)) in blocks.iter().zip(rendered).enumerate() {
            let tokens = (self.count)(&text);
            let code = matches!(b, Block::Code { .. });
            let head =
                heads[i].and_then(|h| table.as_ref().filter(|t| t.0 == h)).map(|t| t.1.clone());
            if heads.get(i + 1) == Some(&Some(i)) && tokens * 2 <= limit {
                table = Some((i, Rc::new(Unit { text: text.clone(), tokens, code, head: None })));
            }
            for mut u in self.split_unit(Unit { text, tokens, code, head: None }, limit) {
                u.head = head.clone();
                out.push(u);
            }
        }
        out
    }

    /// Split one unit into pieces of at most `limit` tokens (code between lines, text between
    /// sentences, then words, then characters).
    fn split_unit(&self, u: Unit, limit: usize) -> Vec<Unit> {
        if u.tokens <= limit {
            return vec![u];
        }
        if u.code {
            return self.split_code(&u.text, limit);
        }
        let mut pieces = Vec::new();
        for s in split_sentences(&u.text) {
            let s = s.trim();
            let t = (self.count)(s);
            if t <= limit {
                pieces.push(Unit { text: s.to_string(), tokens: t, code: false, head: None });
            } else {
                pieces.extend(self.hard_split(s, limit));
            }
        }
        // Re-pack sentences into pieces close to the limit (sum + 1 per space is an estimate:
        // merged pieces are counted again, so every unit's count stays exact).
        let mut out: Vec<(Unit, bool)> = Vec::new();
        for p in pieces.into_iter().filter(|p| !p.text.is_empty()) {
            match out.last_mut() {
                Some((last, merged)) if !last.code && last.tokens + p.tokens < limit => {
                    last.text.push(' ');
                    last.text.push_str(&p.text);
                    last.tokens += p.tokens + 1;
                    *merged = true;
                }
                _ => out.push((p, false)),
            }
        }
        out.into_iter()
            .map(|(mut u, merged)| {
                if merged {
                    u.tokens = (self.count)(&u.text);
                }
                u
            })
            .collect()
    }

    /// A code block longer than the limit: split between lines, each piece fenced again.
    fn split_code(&self, fenced: &str, limit: usize) -> Vec<Unit> {
        let (open, body, close) = unfence(fenced);
        let overhead = (self.count)(&format!("{open}\n{close}")) + 1;
        let budget = limit.saturating_sub(overhead).max(1);
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut cur_tokens = 0;
        let mut lines: Vec<(String, usize)> = Vec::new();
        for line in body.split('\n') {
            let t = (self.count)(line) + 1;
            if t > budget {
                for piece in self.hard_split(line, budget) {
                    lines.push((piece.text, piece.tokens + 1));
                }
            } else {
                lines.push((line.to_string(), t));
            }
        }
        for (line, t) in lines {
            if !cur.is_empty() && cur_tokens + t > budget {
                out.push(std::mem::take(&mut cur));
                cur_tokens = 0;
            }
            if !cur.is_empty() {
                cur.push('\n');
            }
            cur.push_str(&line);
            cur_tokens += t;
        }
        if !cur.trim().is_empty() {
            out.push(cur);
        }
        out.into_iter()
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                let text = format!("{open}\n{p}\n{close}");
                Unit { tokens: (self.count)(&text), text, code: true, head: None }
            })
            .collect()
    }

    /// Split text at whitespace (or anywhere, for unspaced scripts) into pieces ≤ limit tokens.
    fn hard_split(&self, text: &str, limit: usize) -> Vec<Unit> {
        let mut out = Vec::new();
        let mut rest = text.trim();
        // A char boundary at or below `n` (at least the first char).
        let floor = |s: &str, n: usize| match crate::text::floor_char_boundary(s, n) {
            0 => s.chars().next().map_or(s.len(), char::len_utf8),
            i => i,
        };
        while !rest.is_empty() {
            // Only a head of the rest can fit: 16 bytes a token, doubled while all of it fits.
            // Counting and searching the whole rest for every piece made a 1.2 MB line without
            // a break take 14 s (quadratic).
            let mut window = floor(rest, limit.saturating_mul(16).max(64));
            while window < rest.len() && (self.count)(&rest[..window]) <= limit {
                window = floor(rest, window.saturating_mul(2));
            }
            let head = &rest[..window];
            let whole = (self.count)(head);
            if window == rest.len() && whole <= limit {
                out.push(Unit { text: rest.to_string(), tokens: whole, code: false, head: None });
                break;
            }
            // Binary search the longest char prefix of the head that fits.
            let bounds: Vec<usize> = head
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .chain(std::iter::once(head.len()))
                .collect();
            let (mut lo, mut hi) = (0usize, bounds.len() - 1);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if (self.count)(&rest[..bounds[mid]]) <= limit {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            let mut end = bounds[lo];
            // Prefer ending at whitespace when one is reasonably close.
            if let Some(ws) = rest[..end].rfind(char::is_whitespace) {
                if ws > end / 2 {
                    end = ws;
                }
            }
            let piece = rest[..end].trim();
            if !piece.is_empty() {
                out.push(Unit {
                    text: piece.to_string(),
                    tokens: (self.count)(piece),
                    code: false,
                    head: None,
                });
            }
            rest = rest[end..].trim_start();
        }
        out
    }
}

fn join_units(units: &[Unit]) -> String {
    let parts: Vec<&str> = units.iter().map(|u| u.text.as_str()).collect();
    parts.join(JOIN)
}

/// (opening fence line, body, closing fence) of a fenced block made by [`crate::source::fence`].
fn unfence(fenced: &str) -> (&str, &str, &str) {
    let first_nl = fenced.find('\n').unwrap_or(fenced.len());
    let open = &fenced[..first_nl];
    let ticks_len = open.chars().take_while(|&c| c == '`').count();
    let close = &open[..ticks_len];
    let body_end = fenced.rfind('\n').filter(|&i| i >= first_nl).unwrap_or(fenced.len());
    let body = if first_nl < body_end { &fenced[first_nl + 1..body_end] } else { "" };
    (open, body, close)
}

/// For each block, the index of the header row of the table it is a later row of: a run of
/// one-line text blocks that are rows with the same number of cells is a table, as the readers
/// write one (a row per block, cells joined by ` | `; read by the excerpts' own
/// [`crate::extractive::row_cells`], so a `|` in a code span or a list item is no cell), and its
/// first row is its header (a Markdown table's always is; an HTML table's usually is).
fn table_heads(blocks: &[Block]) -> Vec<Option<usize>> {
    let cells = |b: &Block| match b {
        Block::Text(t) if !t.contains('\n') => {
            crate::extractive::row_cells(t).map_or(0, |c| c.len())
        }
        _ => 0,
    };
    let mut out = vec![None; blocks.len()];
    let mut start: Option<(usize, usize)> = None;
    for (i, b) in blocks.iter().enumerate() {
        let n = cells(b);
        start = match start {
            Some((h, m)) if n > 0 && n == m => {
                out[i] = Some(h);
                Some((h, m))
            }
            _ => (n > 0).then_some((i, n)),
        };
    }
    out
}

/// Sentences (with their trailing whitespace), split after `.`/`!`/`?` + space, CJK full stops
/// and newlines.
pub fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let boundary = match c {
            '.' | '!' | '?' | ':' | ';' => next.map(|n| n.is_whitespace()).unwrap_or(false),
            '。' | '！' | '？' | '\n' => true,
            _ => false,
        };
        if boundary {
            let mut end = i + c.len_utf8();
            while let Some(&(j, n)) = chars.peek() {
                if n.is_whitespace() && n != '\n' {
                    end = j + n.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Flavor, Section};

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    fn chunker<'a>(
        max: usize,
        count: &'a dyn Fn(&str) -> usize,
        fits: Option<&'a dyn Fn(&str) -> bool>,
    ) -> Chunker<'a> {
        Chunker { opts: ChunkOptions { max_tokens: max, overlap_tokens: 6 }, count, fits }
    }

    #[test]
    fn sentences_split_on_punctuation_and_cjk_stops() {
        assert_eq!(split_sentences("One. Two? Three"), vec!["One. ", "Two? ", "Three"]);
        assert_eq!(split_sentences("一。二。"), vec!["一。", "二。"]);
        assert_eq!(split_sentences("v1.2 is out."), vec!["v1.2 is out."]);
    }

    #[test]
    fn every_chunk_of_a_split_table_starts_with_its_header_row() {
        let mut md = String::from(
            "# Targets\n\nSupported targets.\n\n| target | std | notes |\n|---|---|---|\n",
        );
        for i in 0..40 {
            md.push_str(&format!("| `arch{i}-unknown-none` | * | bare metal board number {i} |\n"));
        }
        md.push_str("\nAfter the table, a paragraph | with a bar.\n");
        let page = crate::source::markdown::parse(&md, Flavor::VitePress, "t");
        let count = |s: &str| words(s);
        let c = chunker(60, &count, None).chunk_page(&page, "t.html", "").unwrap();
        assert!(c.len() > 3, "{c:?}");
        let head = "target | std | notes |";
        for (i, chunk) in c.iter().enumerate() {
            let rows = chunk.text.contains("-unknown-none");
            assert!(!rows || i == 0 || chunk.text.starts_with(head), "chunk {i}: {}", chunk.text);
            assert!(chunk.tokens as usize <= 60, "chunk {i}: {} tokens", chunk.tokens);
            assert!(chunk.text.matches(head).count() <= 1, "chunk {i}: {}", chunk.text);
        }
        // Every row is still in some chunk, in order.
        let all: String = c.iter().map(|x| x.text.as_str()).collect::<Vec<_>>().join("\n\n");
        for i in 0..40 {
            assert!(all
                .contains(&format!("`arch{i}-unknown-none` | * | bare metal board number {i} |")));
        }
        // Rows of another shape (a different number of cells) start no table of their own here.
        assert_eq!(
            table_heads(&[
                Block::Text("a | b".into()),
                Block::Text("1 | 2".into()),
                Block::Text("x | y | z".into()),
                Block::Text("plain".into()),
                Block::Text("3 | 4".into()),
            ]),
            [None, Some(0), None, None, None]
        );
    }

    #[test]
    fn short_sections_become_one_chunk_each_with_breadcrumb() {
        let page = crate::source::markdown::parse(
            "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n",
            Flavor::VitePress,
            "g",
        );
        let count = |s: &str| words(s);
        let c = chunker(100, &count, None).chunk_page(&page, "guide.html", "v1").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].anchor, "guide");
        assert_eq!(c[1].link(), "guide.html#install");
        assert_eq!(c[1].breadcrumb, vec!["Guide", "Install"]);
        assert_eq!(c[1].namespace, "v1");
        assert_eq!(c[1].hash, c[1].compute_hash());
    }

    #[test]
    fn long_sections_split_between_blocks_and_never_inside_code() {
        let mut md = String::from("# Big\n\n");
        for i in 0..10 {
            md.push_str(&format!(
                "Paragraph {i} has some words in it to fill space. Another sentence here.\n\n"
            ));
            if i == 4 {
                md.push_str("```rust\nfn a() {}\nfn b() {}\nfn c() {}\n```\n\n");
            }
        }
        let page = crate::source::markdown::parse(&md, Flavor::VitePress, "g");
        let count = |s: &str| words(s);
        let c = chunker(40, &count, None).chunk_page(&page, "big.html", "").unwrap();
        assert!(c.len() > 3, "{}", c.len());
        for ch in &c {
            assert!(ch.tokens <= 41, "{} tokens: {}", ch.tokens, ch.text);
            assert_eq!(ch.text.matches("```").count() % 2, 0, "fence split: {}", ch.text);
            assert_eq!(ch.anchor, "big");
        }
        assert!(c.iter().any(|ch| ch.text.contains("fn a() {}\nfn b() {}\nfn c() {}")));
        // Overlap: a later chunk repeats the previous chunk's last sentence.
        assert!(c.windows(2).any(|w| w[1].text.starts_with("Another sentence here.")));
    }

    #[test]
    fn a_code_block_longer_than_the_limit_is_split_between_lines_and_refenced() {
        let code: String = (0..60).map(|i| format!("let x{i} = {i};\n")).collect();
        let page = Page {
            title: "T".into(),
            sections: vec![Section {
                level: 1,
                heading: "T".into(),
                anchor: "t".into(),
                breadcrumb: vec!["T".into()],
                blocks: vec![Block::Code { lang: "rust".into(), code }],
            }],
        };
        let count = |s: &str| words(s);
        let c = chunker(50, &count, None).chunk_page(&page, "t.html", "").unwrap();
        assert!(c.len() >= 4);
        for ch in &c {
            assert!(ch.text.starts_with("```rust\n") && ch.text.ends_with("\n```"), "{}", ch.text);
        }
        let all: String = c.iter().map(|ch| ch.text.clone()).collect();
        for i in 0..60 {
            assert!(all.contains(&format!("let x{i} = {i};")));
        }
    }

    #[test]
    fn the_model_limit_callback_splits_further_until_every_chunk_fits() {
        let text: String = (0..200).map(|i| format!("word{i} ")).collect();
        let page =
            crate::source::markdown::parse(&format!("# H\n\n{text}\n"), Flavor::VitePress, "h");
        let count = |s: &str| words(s);
        // The "model" counts characters and accepts at most 300.
        let fits = |s: &str| s.chars().count() <= 300;
        let c = chunker(1000, &count, Some(&fits)).chunk_page(&page, "h.html", "").unwrap();
        assert!(c.len() > 3);
        for ch in &c {
            assert!(fits(&ch.embedding_input()), "{}", ch.embedding_input().len());
        }
        let all: String = c.iter().map(|ch| ch.text.clone()).collect::<Vec<_>>().join(" ");
        assert!(all.contains("word0 ") && all.contains("word199"));
    }

    #[test]
    fn a_breadcrumb_too_long_for_the_model_is_an_error_not_a_truncation() {
        let page = crate::source::markdown::parse(
            "# A very long heading indeed\n\nsome text here\n",
            Flavor::VitePress,
            "h",
        );
        let count = |s: &str| words(s);
        let fits = |s: &str| s.len() < 10;
        let err = chunker(100, &count, Some(&fits)).chunk_page(&page, "h.html", "").unwrap_err();
        assert!(err.to_string().contains("h.html#a-very-long-heading-indeed"), "{err}");
    }

    #[test]
    fn unspaced_text_is_split_by_characters() {
        let text = "漢".repeat(100);
        let count = |s: &str| s.chars().count();
        let ch = chunker(30, &count, None);
        let pieces = ch.hard_split(&text, 30);
        assert_eq!(pieces.len(), 4);
        assert!(pieces.iter().all(|p| p.tokens <= 30));
    }

    #[test]
    fn a_megabyte_line_is_split_looking_only_at_what_can_fit() {
        // Counting every piece against the whole rest was quadratic: a 1.2 MB line took 14 s in
        // a release build. Count how much text each count call reads to show it is bounded.
        let line: String = (0..150_000).map(|i| format!("w{} ", i % 97)).collect();
        let read = std::cell::Cell::new(0usize);
        let count = |s: &str| {
            read.set(read.get() + s.len());
            words(s)
        };
        let ch = chunker(300, &count, None);
        let pieces = ch.hard_split(&line, 300);
        assert!(pieces.iter().all(|p| p.tokens <= 300 && p.tokens > 250));
        let rejoined: Vec<&str> = pieces.iter().flat_map(|p| p.text.split(' ')).collect();
        assert_eq!(rejoined, line.split_whitespace().collect::<Vec<_>>());
        // Each piece reads a few windows of a few KB, not the megabyte left.
        assert!(read.get() < 100 * line.len(), "{} bytes read for {}", read.get(), line.len());
    }
}
