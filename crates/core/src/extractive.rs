//! Answers without a chat model (offline mode), read like a featured snippet: for each cited
//! source, its section title with the citation `[n]`, then the passages of it that answer the
//! question — its best sentences, the rows of a table, a short code example — kept as prose,
//! tables and code. The widget labels the answer as excerpts ([`EXCERPTS_LABEL`]) once, above it;
//! the Markdown carries no label of its own.
//!
//! Units (sentences, table rows, code blocks of at most [`MAX_CODE_LINES`] lines) are scored
//! with BM25 over all candidate units (the lexical module's tokenizer, so code identifiers and
//! CJK match as in search), weighted by the rank of the section they come from. Sources appear
//! in the order of their best unit, units within a source in document order. The output is
//! deterministic: ties go to the better-ranked section, then the earlier unit.
//!
//! Chunk text is what the chunker wrote ([`crate::source::Block::render`] joined by blank
//! lines): prose paragraphs whose inline code is a backtick span and whose other characters are
//! the docs' text, unescaped; a table as one paragraph per row, cells joined by ` | ` (Markdown
//! sources end each row with ` |`, HTML ones do not); code as fenced blocks. Prose is escaped for
//! Markdown outside its code spans only: Markdown reads a backslash inside a code span literally,
//! so code spans are copied as they are.

use crate::budget::group_sources;
use crate::cite::{source_label, ChunkSource, Source};
use crate::format::Index;
use crate::lexical::{bm25_term, idf, tokenize};
use crate::search::{score_desc_key, Hit, SearchResult, SortKey};
use std::collections::HashMap;

/// Sections (hits) considered for excerpts.
pub const MAX_SECTIONS: usize = 5;
/// How the widget labels an extractive answer (once, above it).
pub const EXCERPTS_LABEL: &str = "From the docs (excerpts, no AI answer)";
/// What an extractive answer says when the docs don't cover the question.
pub const NOT_COVERED: &str = "The docs don't seem to cover this.";
/// Longest code block (in lines) an answer quotes; longer ones are left to the linked page.
pub const MAX_CODE_LINES: usize = 15;
/// Most rows quoted from one table.
pub const MAX_TABLE_ROWS: usize = 8;
/// A code block's score counts this much against a sentence's, so prose leads.
const CODE_WEIGHT: f32 = 0.6;

/// An offline answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extractive {
    /// Markdown: per source, its title with `[n]`, then its passages (prose, tables, code).
    pub markdown: String,
    /// The numbered sources the citations refer to.
    pub sources: Vec<Source>,
}

/// Build an extractive answer from a search result over `index`. At most `max_sentences`
/// units (sentences, tables, code blocks; at least 1) are quoted.
pub fn answer(
    index: &Index,
    result: &SearchResult,
    question: &str,
    max_sentences: usize,
) -> Extractive {
    answer_from(index, result, question, max_sentences)
}

/// A block of a chunk's text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// A paragraph (or list item), list marker stripped, whitespace collapsed.
    Prose(String),
    /// Consecutive rows with cells: the first is the header.
    Table { header: Vec<String>, rows: Vec<Vec<String>> },
    /// A fenced code block: its fence (e.g. "```"), the info string, the body.
    Code { fence: String, info: String, body: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The `position`-th sentence of a prose part.
    Sentence,
    /// The `position`-th body row of a table part.
    Row,
    /// A whole code part.
    Code,
}

struct Candidate {
    /// Index into the sources.
    source: usize,
    /// The hit rank of its chunk.
    rank: usize,
    /// Index into `chunks` (the parsed chunks, in source and document order).
    chunk: usize,
    part: usize,
    position: usize,
    kind: Kind,
    /// The sentence, row or code text (for de-duplication and sentences' output).
    text: String,
    terms: Vec<String>,
}

/// [`answer`] over any [`ChunkSource`]. The Markdown holds no control character but tab and
/// newline: the widget's "Copy" puts it on the reader's clipboard as it is, and an index not
/// built by this docent (which removes them from pages) may hold a code block's `ESC[201~`,
/// which ends a terminal's bracketed paste and runs the rest of what is pasted.
pub fn answer_from(
    index: &dyn ChunkSource,
    result: &SearchResult,
    question: &str,
    max_sentences: usize,
) -> Extractive {
    let mut ex = excerpts(index, result, question, max_sentences);
    ex.markdown.retain(|c| !crate::source::safety::is_unseen_control(c));
    ex
}

fn excerpts(
    index: &dyn ChunkSource,
    result: &SearchResult,
    question: &str,
    max_sentences: usize,
) -> Extractive {
    let max_sentences = max_sentences.max(1);
    if result.hits.is_empty() {
        return not_covered(index, &result.closest);
    }
    let hits: Vec<Hit> = result.hits.iter().take(MAX_SECTIONS).cloned().collect();
    let sources = group_sources(index, &hits, MAX_SECTIONS);
    if sources.is_empty() {
        return not_covered(index, &result.closest);
    }
    let rank_of = |chunk: u32| {
        hits.iter().position(|h| h.section_chunks().contains(&chunk)).unwrap_or(hits.len())
    };

    let mut chunks: Vec<Vec<Part>> = Vec::new();
    let mut candidates = Vec::new();
    for (si, source) in sources.iter().enumerate() {
        for &c in &source.chunks {
            let Some(chunk) = index.chunk_at(c) else { continue };
            let ci = chunks.len();
            let parts = parts(&chunk.text);
            let mut push = |part: usize, position: usize, kind: Kind, text: String| {
                let terms = tokenize(&text);
                candidates.push(Candidate {
                    source: si,
                    rank: rank_of(c),
                    chunk: ci,
                    part,
                    position,
                    kind,
                    text,
                    terms,
                });
            };
            for (pi, part) in parts.iter().enumerate() {
                match part {
                    Part::Prose(p) => {
                        for (k, s) in sentences(p).into_iter().enumerate() {
                            push(pi, k, Kind::Sentence, s);
                        }
                    }
                    Part::Table { rows, .. } => {
                        for (k, row) in rows.iter().enumerate() {
                            push(pi, k, Kind::Row, row.join(" | "));
                        }
                    }
                    Part::Code { body, .. } => {
                        if body.lines().count() <= MAX_CODE_LINES {
                            push(pi, 0, Kind::Code, body.clone());
                        }
                    }
                }
            }
            chunks.push(parts);
        }
    }

    // The question's distinct terms, in order (a handful: scans beat sorting, and leave the wasm
    // without another sort instantiation).
    let mut query: Vec<String> = Vec::new();
    for t in tokenize(question) {
        if !query.contains(&t) {
            query.push(t);
        }
    }

    let n = candidates.len() as u32;
    let avg_len = if candidates.is_empty() {
        1.0
    } else {
        candidates.iter().map(|c| c.terms.len()).sum::<usize>() as f32 / candidates.len() as f32
    };
    let mut df: HashMap<&str, u32> = HashMap::new();
    for c in &candidates {
        for q in &query {
            if c.terms.contains(q) {
                *df.entry(q.as_str()).or_default() += 1;
            }
        }
    }
    let score = |c: &Candidate| -> f32 {
        let mut s = 0.0;
        for q in &query {
            let tf = c.terms.iter().filter(|t| *t == q).count() as f32;
            if tf > 0.0 {
                s += bm25_term(
                    idf(n, df.get(q.as_str()).copied().unwrap_or(0)),
                    tf,
                    c.terms.len() as f32,
                    avg_len,
                );
            }
        }
        let weight = if c.kind == Kind::Code { CODE_WEIGHT } else { 1.0 };
        weight * s / (1.0 + 0.15 * c.rank as f32)
    };

    // Best score first, then the better-ranked section, the earlier unit, the candidate: a
    // total order as plain integer keys ([`SortKey`]: one sort instantiation for all rankings).
    let mut scored: Vec<SortKey> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (score(c), i))
        .filter(|(s, _)| *s > 0.0)
        .map(|(s, i)| (score_desc_key(s), candidates[i].rank, candidates[i].position, i))
        .collect();
    scored.sort_unstable();
    // The best-ranked section leads: its best unit is quoted first, so the answer opens where
    // search (which also weighs the vectors, the title and the whole section) put the answer,
    // not on a lower section's sentence that happens to repeat more of the question's words.
    if let Some(p) = scored.iter().position(|k| candidates[k.3].rank == 0) {
        let first = scored.remove(p);
        scored.insert(0, first);
    }
    let mut chosen: Vec<usize> = Vec::new();
    let mut counted = 0;
    let mut seen_text: Vec<String> = Vec::new();
    for (_, _, _, i) in &scored {
        let c = &candidates[*i];
        // Further rows of a table already quoted come free (up to MAX_TABLE_ROWS); a table or a
        // code block otherwise counts as one unit. One table per source and one code block per
        // answer are enough.
        let same_table = chosen
            .iter()
            .filter(|&&j| {
                let o = &candidates[j];
                o.kind == Kind::Row && (o.chunk, o.part) == (c.chunk, c.part)
            })
            .count();
        let free = c.kind == Kind::Row && same_table > 0;
        if (!free && counted >= max_sentences)
            || (free && same_table >= MAX_TABLE_ROWS)
            || (c.kind == Kind::Code && chosen.iter().any(|&j| candidates[j].kind == Kind::Code))
            || (c.kind == Kind::Row
                && !free
                && chosen
                    .iter()
                    .any(|&j| candidates[j].kind == Kind::Row && candidates[j].source == c.source))
        {
            continue;
        }
        let norm: String = crate::case::lower_str(&c.text);
        if seen_text.contains(&norm) {
            continue;
        }
        seen_text.push(norm);
        chosen.push(*i);
        if !free {
            counted += 1;
        }
    }
    if chosen.is_empty() {
        // No unit shares a term with the question (e.g. another language): quote the opening
        // of the best section instead.
        let best = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == Kind::Sentence && (c.rank == 0 || c.source == 0))
            .map(|(i, _)| i);
        chosen.extend(best.take(max_sentences.min(2)));
    }
    if chosen.is_empty() {
        return not_covered(index, &result.hits);
    }

    // Sources in the order of their best unit, numbered from 1 in that order.
    let mut used: Vec<usize> = Vec::new();
    for &i in &chosen {
        if !used.contains(&candidates[i].source) {
            used.push(candidates[i].source);
        }
    }
    let mut md = String::new();
    let mut out_sources = Vec::new();
    for (k, &si) in used.iter().enumerate() {
        let mut s = sources[si].clone();
        s.n = k + 1;
        // Sentences lead, then tables and code; each in document order. The kind is the chunk
        // slot's top bit (no index has 2^31 chunks), so this is a plain SortKey sort too.
        let mut order: Vec<SortKey> = chosen
            .iter()
            .filter(|&&i| candidates[i].source == si)
            .map(|&i| {
                let c = &candidates[i];
                let not_sentence = usize::from(c.kind != Kind::Sentence) << (usize::BITS - 1);
                (not_sentence | c.chunk, c.part, c.position, i)
            })
            .collect();
        order.sort_unstable();
        let units: Vec<&Candidate> = order.iter().map(|&(_, _, _, i)| &candidates[i]).collect();
        if !md.is_empty() {
            md.push_str("\n\n");
        }
        md.push_str(&format!("**{}** [{}]", escape_markdown(&source_label(&s), false), s.n));
        write_units(&mut md, &units, &chunks);
        out_sources.push(s);
    }
    Extractive { markdown: md, sources: out_sources }
}

/// Write one source's units (in document order) as Markdown blocks: runs of sentences as a
/// paragraph (` … ` where sentences were skipped), the chosen rows of a table under its header,
/// code blocks fenced.
fn write_units(md: &mut String, units: &[&Candidate], chunks: &[Vec<Part>]) {
    let mut prev: Option<&Candidate> = None;
    for (k, c) in units.iter().enumerate() {
        let Some(part) = chunks.get(c.chunk).and_then(|p| p.get(c.part)) else { continue };
        match (c.kind, part) {
            (Kind::Sentence, Part::Prose(_)) => {
                match prev.filter(|p| p.kind == Kind::Sentence) {
                    Some(p)
                        if (p.chunk, p.part, p.position + 1) == (c.chunk, c.part, c.position) =>
                    {
                        md.push(' ')
                    }
                    Some(_) => md.push_str(" … "),
                    None => {
                        md.push_str("\n\n");
                        if prev.is_some() {
                            md.push_str("… ");
                        }
                    }
                }
                md.push_str(&escape_sentence(&c.text));
            }
            (Kind::Row, Part::Table { header, rows }) => {
                // The whole table's chosen rows are written at its first one.
                if prev
                    .is_some_and(|p| p.kind == Kind::Row && (p.chunk, p.part) == (c.chunk, c.part))
                {
                    prev = Some(c);
                    continue;
                }
                let chosen: Vec<&Vec<String>> = units[k..]
                    .iter()
                    .filter(|u| u.kind == Kind::Row && (u.chunk, u.part) == (c.chunk, c.part))
                    .filter_map(|u| rows.get(u.position))
                    .collect();
                md.push_str("\n\n");
                write_row(md, header);
                md.push_str("\n|");
                for _ in header {
                    md.push_str(" --- |");
                }
                for row in chosen {
                    md.push('\n');
                    write_row(md, row);
                }
            }
            (Kind::Code, Part::Code { info, body, .. }) => {
                // A fresh fence: longer than any backtick run in the code, and an info string
                // that cannot unmake it (an index's text is a docs page's, not trusted).
                md.push_str("\n\n");
                md.push_str(&crate::source::fence(info, body));
            }
            _ => continue,
        }
        prev = Some(c);
    }
}

fn write_row(md: &mut String, cells: &[String]) {
    md.push('|');
    for cell in cells {
        md.push(' ');
        md.push_str(&escape_markdown(cell, true));
        md.push_str(" |");
    }
}

fn not_covered(index: &dyn ChunkSource, closest: &[Hit]) -> Extractive {
    let sources = group_sources(index, closest, 3);
    let mut md = String::from(NOT_COVERED);
    if !sources.is_empty() {
        md.push_str(" The closest sections:\n");
        for s in &sources {
            md.push_str(&format!("\n- {} [{}]", escape_markdown(&source_label(s), false), s.n));
        }
    }
    Extractive { markdown: md, sources }
}

/// An extractive answer as the reader reads it, for "Copy": the backslashes
/// [`escape_markdown`] put before characters Markdown would read as structure are taken out
/// again (`2 \* 3` is copied as `2 * 3`). Code spans and fenced code are copied as they are
/// (they were never escaped); the rest of the Markdown (`**Title** [1]`, fences) stays.
pub fn copy_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    // The fence of the code block being copied: the answer's own, written by `source::fence`,
    // each closed by the same line.
    let mut fence: Option<&str> = None;
    for (n, line) in markdown.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        if let Some(f) = fence {
            fence = (line != f).then_some(f);
        } else if line.starts_with("```") || line.starts_with("~~~") {
            let mark = line.as_bytes()[0];
            fence = Some(&line[..line.bytes().take_while(|&b| b == mark).count()]);
        } else {
            // Byte offsets: the backslashes and backticks looked for are ASCII, so every cut is
            // on a character boundary.
            let b = line.as_bytes();
            let (mut i, mut from) = (0, 0);
            while i < b.len() {
                if b[i] == b'`' {
                    i += code_span_len(&line[i..]).unwrap_or(1);
                } else if b[i] == b'\\' && b.get(i + 1).is_some_and(u8::is_ascii_punctuation) {
                    out.push_str(&line[from..i]);
                    from = i + 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            out.push_str(&line[from..]);
            continue;
        }
        out.push_str(line);
    }
    out
}

/// A sentence as the start of a Markdown paragraph: [`escape_markdown`], and a leading list,
/// heading-underline or ordered-list marker (`- `, `+`, `=`, `1.`) kept as text.
fn escape_sentence(s: &str) -> String {
    let mut out = String::new();
    if s.starts_with(['-', '+', '=']) {
        out.push('\\');
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && matches!(s.as_bytes().get(digits), Some(b'.' | b')')) {
        out.push_str(&s[..digits]);
        out.push('\\');
        out.push_str(&escape_markdown(&s[digits..], false));
        return out;
    }
    out.push_str(&escape_markdown(s, false));
    out
}

/// Docs text as Markdown that reads as the same text. Outside code spans, characters Markdown
/// would read as structure, HTML, a link or a citation are backslash-escaped (the renderer
/// treats an escaped `\[` as text, never as a citation); an unmatched backtick is escaped too.
/// Code spans (a backtick run closed by a run of the same length, paired left to right as
/// CommonMark pairs them) are copied as they are: Markdown reads backslashes in them literally.
/// In a table cell a `|` is escaped everywhere, code spans included (GFM splits cells first).
fn escape_markdown(s: &str, in_table: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            let run = rest.bytes().take_while(|&b| b == b'`').count();
            if let Some(len) = code_span_len(rest) {
                let span = &rest[..len];
                if in_table {
                    out.push_str(&span.replace('|', "\\|"));
                } else {
                    out.push_str(span);
                }
                rest = &rest[len..];
            } else {
                out.push_str(&"\\`".repeat(run));
                rest = &rest[run..];
            }
            continue;
        }
        if matches!(c, '[' | ']' | '<' | '>' | '*' | '_' | '\\' | '#' | '|' | '~' | '&') {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// If `s` starts with a code span (a run of n backticks, then text, then a run of exactly n
/// backticks), its length in bytes.
fn code_span_len(s: &str) -> Option<usize> {
    let open = s.bytes().take_while(|&b| b == b'`').count();
    if open == 0 {
        return None;
    }
    let b = s.as_bytes();
    let mut i = open;
    while i < b.len() {
        if b[i] == b'`' {
            let run = b[i..].iter().take_while(|&&x| x == b'`').count();
            if run == open {
                return Some(i + run);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// Byte ranges of the code spans in `s`.
fn code_spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(rel) = s[i..].find('`') {
        let start = i + rel;
        match code_span_len(&s[start..]) {
            Some(len) => {
                out.push((start, start + len));
                i = start + len;
            }
            None => i = start + s[start..].bytes().take_while(|&b| b == b'`').count(),
        }
    }
    out
}

/// A chunk's text as blocks: prose paragraphs (heading lines dropped, list markers stripped),
/// tables (two or more consecutive one-line paragraphs with cells) and fenced code.
fn parts(text: &str) -> Vec<Part> {
    // First pass: paragraphs (as their lines) and code blocks.
    enum Raw<'a> {
        Para(Vec<&'a str>),
        Code(Part),
    }
    let mut raw: Vec<Raw> = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut code: Option<(String, String, Vec<&str>)> = None;
    fn flush<'a>(para: &mut Vec<&'a str>, raw: &mut Vec<Raw<'a>>) {
        if !para.is_empty() {
            raw.push(Raw::Para(std::mem::take(para)));
        }
    }
    for line in text.lines() {
        let t = line.trim_start();
        if let Some((fence, _, body)) = &mut code {
            if t.starts_with(fence.as_str()) {
                let (fence, info, body) = code.take().unwrap_or_default();
                raw.push(Raw::Code(Part::Code { fence, info, body: body.join("\n") }));
            } else {
                body.push(line);
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            flush(&mut para, &mut raw);
            let fence: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
            let info = t[fence.len()..].trim().to_string();
            code = Some((fence, info, Vec::new()));
            continue;
        }
        if t.starts_with('#') || t.is_empty() {
            flush(&mut para, &mut raw);
            continue;
        }
        para.push(t);
    }
    if let Some((fence, info, body)) = code {
        // An unfinished fence (a cut chunk): closed here.
        raw.push(Raw::Code(Part::Code { fence, info, body: body.join("\n") }));
    }
    flush(&mut para, &mut raw);

    // Second pass: runs of row paragraphs become tables.
    let row_of = |r: &Raw| match r {
        Raw::Para(lines) if lines.len() == 1 => row_cells(lines[0]),
        _ => None,
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let mut rows = Vec::new();
        while let Some(cells) = raw.get(i + rows.len()).and_then(row_of) {
            rows.push(cells);
        }
        if rows.len() >= 2 {
            i += rows.len();
            let header = rows.remove(0);
            let width = header.len();
            let rows = rows.into_iter().map(|r| fit_row(r, width)).collect();
            out.push(Part::Table { header, rows });
            continue;
        }
        match &raw[i] {
            Raw::Para(lines) => {
                let text: Vec<&str> = lines.iter().map(|l| strip_list_marker(l)).collect();
                let text = text.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
                out.push(Part::Prose(text));
            }
            Raw::Code(c) => out.push(c.clone()),
        }
        i += 1;
    }
    out
}

/// A table row's cells, as the chunker wrote it (`a | b | c |` from Markdown, `a | b | c` from
/// HTML), or None for a line that is not a row (no cell separator outside code spans, fewer
/// than two cells, a list item).
pub(crate) fn row_cells(line: &str) -> Option<Vec<String>> {
    if ["- ", "* ", "+ ", "> "].iter().any(|m| line.starts_with(m)) {
        return None;
    }
    let spans = code_spans(line);
    let b = line.as_bytes();
    let mut cells = Vec::new();
    let mut start = 0;
    let mut leading = false;
    for (i, &c) in b.iter().enumerate() {
        let separator = c == b'|'
            && (i == 0 || b[i - 1] == b' ')
            && (i + 1 == b.len() || b[i + 1] == b' ')
            && !spans.iter().any(|&(s, e)| i > s && i < e);
        if separator {
            if i == 0 {
                leading = true;
            } else {
                cells.push(line[start..i].trim().to_string());
            }
            start = i + 1;
        }
    }
    if start == 0 && !leading {
        return None;
    }
    let last = line[start..].trim();
    if !last.is_empty() {
        cells.push(last.to_string());
    }
    (cells.len() >= 2).then_some(cells)
}

/// A row made as wide as the header: missing cells empty, extra ones (a `|` that was part of
/// a cell's text) joined into the last cell.
fn fit_row(mut row: Vec<String>, width: usize) -> Vec<String> {
    if row.len() > width && width > 0 {
        let extra = row.split_off(width - 1).join(" | ");
        row.push(extra);
    }
    row.resize(width, String::new());
    row
}

/// Split a prose paragraph into sentences (never inside a code span). Very short fragments are
/// dropped.
fn sentences(para: &str) -> Vec<String> {
    let mut out = Vec::new();
    let spans = code_spans(para);
    let mut start = 0;
    let chars: Vec<(usize, char)> = para.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if spans.iter().any(|&(s, e)| i > s && i < e) {
            continue;
        }
        let end_here = match c {
            '.' | '!' | '?' => {
                chars.get(k + 1).is_none_or(|&(_, n)| n == ' ')
                    && !ends_with_abbreviation(&para[start..i])
            }
            '。' | '！' | '？' => true,
            _ => false,
        };
        if end_here {
            push_sentence(&mut out, &para[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    push_sentence(&mut out, &para[start..]);
    out
}
fn ends_with_abbreviation(s: &str) -> bool {
    let last = s.rsplit(' ').next().unwrap_or("").to_ascii_lowercase();
    matches!(last.as_str(), "e.g" | "i.e" | "etc" | "vs" | "cf" | "fig" | "no")
        || last.chars().all(|c| c.is_ascii_digit())
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if s.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
        out.push(s.to_string());
    }
}

fn strip_list_marker(t: &str) -> &str {
    for m in ["- ", "* ", "+ ", "> "] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest;
        }
    }
    let digits = t.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < 4 {
        if let Some(rest) =
            t[digits..].strip_prefix(". ").or_else(|| t[digits..].strip_prefix(") "))
        {
            return rest;
        }
    }
    t
}
