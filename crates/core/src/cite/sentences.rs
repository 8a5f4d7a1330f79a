//! An answer's Markdown cut into sentences, each with its byte range and its `[n]` citations.
//!
//! The Markdown is parsed (pulldown-cmark, as the renderer does), so code blocks are left out,
//! code spans stay whole, and headings, list items and table cells end a sentence. Within a
//! block a sentence ends at `.`, `!` or `?` followed by a space (or the end), or at `。！？`;
//! not at a version number (`1.2.3`), a dotted name (`config.toml`) or an abbreviation (`e.g.`,
//! `i.e.`, `etc.` before a lowercase word, `vs.`). Citations right after the end (`... fast. [1]`)
//! belong to the sentence before them.

use super::find_citation;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::ops::Range;

/// One sentence of an answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sentence {
    /// Its bytes in the answer Markdown, citations and closing punctuation included.
    pub range: Range<usize>,
    /// Its text without Markdown and citations; code spans are replaced by a space.
    pub prose: String,
    /// The contents of its code spans, in order.
    pub code: Vec<String>,
    /// The source numbers it cites, in order of first citation.
    pub cites: Vec<usize>,
}

impl Sentence {
    /// The words and code of the sentence as one text (prose with the code spans put back at
    /// the end), for checks that read it whole.
    pub fn text(&self) -> String {
        let mut t = self.prose.clone();
        for c in &self.code {
            t.push(' ');
            t.push_str(c);
        }
        t
    }
}

/// A piece of a block's inline text and where it came from.
struct Seg {
    /// Start in the block's text buffer.
    at: usize,
    /// Its bytes in the Markdown.
    src: Range<usize>,
    /// The text is the Markdown bytes verbatim, so positions map one to one.
    exact: bool,
    /// A code span.
    code: bool,
}

/// The inline text of one block, with the map back to the Markdown.
#[derive(Default)]
struct Block {
    text: String,
    segs: Vec<Seg>,
}

impl Block {
    fn push(&mut self, s: &str, src: Range<usize>, exact: bool, code: bool) {
        self.segs.push(Seg { at: self.text.len(), src, exact, code });
        self.text.push_str(s);
    }

    fn seg_of(&self, pos: usize) -> Option<&Seg> {
        let i = self.segs.partition_point(|s| s.at <= pos);
        self.segs.get(i.checked_sub(1)?)
    }

    /// The Markdown offset of the text's position `pos` as a start.
    fn start_at(&self, pos: usize) -> usize {
        match self.seg_of(pos) {
            Some(s) if s.exact => (s.src.start + pos - s.at).min(s.src.end),
            Some(s) => s.src.start,
            None => 0,
        }
    }

    /// The Markdown offset of the text's position `pos` as an end (exclusive).
    fn end_at(&self, pos: usize) -> usize {
        match pos.checked_sub(1).and_then(|p| self.seg_of(p)) {
            Some(s) if s.exact => (s.src.start + pos - s.at).min(s.src.end),
            Some(s) => s.src.end,
            None => 0,
        }
    }

    /// Byte ranges of the code spans in `text`.
    fn code_ranges(&self) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        for (i, s) in self.segs.iter().enumerate() {
            if s.code {
                let end = self.segs.get(i + 1).map_or(self.text.len(), |n| n.at);
                out.push(s.at..end);
            }
        }
        out
    }
}

/// Split answer Markdown into sentences (see the module docs). Never panics.
pub fn split(md: &str) -> Vec<Sentence> {
    // Nesting limited as the renderer limits it (same length, so ranges still hold).
    let md = crate::render::limit_nesting(md);
    let md = &*md;
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut out = Vec::new();
    let mut block = Block::default();
    // Inside a code block, an HTML block or an image: text that is not prose.
    let mut skip = 0usize;
    for (event, range) in Parser::new_ext(md, options).into_offset_iter() {
        match event {
            Event::Text(t) | Event::InlineHtml(t) | Event::Html(t) if skip == 0 => {
                let exact = md.get(range.clone()) == Some(&*t);
                block.push(&t, range, exact, false);
            }
            Event::Code(t) if skip == 0 => block.push(&t, range, false, true),
            Event::SoftBreak | Event::HardBreak if skip == 0 => {
                block.push(" ", range, false, false)
            }
            Event::Start(Tag::CodeBlock(_) | Tag::HtmlBlock | Tag::Image { .. }) => {
                finish(&mut block, &mut out);
                skip += 1;
            }
            Event::End(TagEnd::CodeBlock | TagEnd::HtmlBlock | TagEnd::Image) => {
                skip = skip.saturating_sub(1);
            }
            Event::Start(
                Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Link { .. }
                | Tag::Superscript
                | Tag::Subscript,
            )
            | Event::End(
                TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Link
                | TagEnd::Superscript
                | TagEnd::Subscript,
            ) => {}
            Event::Start(_) | Event::End(_) | Event::Rule => finish(&mut block, &mut out),
            _ => {}
        }
    }
    finish(&mut block, &mut out);
    out
}

/// Cut a finished block into sentences.
fn finish(block: &mut Block, out: &mut Vec<Sentence>) {
    let b = std::mem::take(block);
    if b.text.trim().is_empty() {
        return;
    }
    let code = b.code_ranges();
    let cites = citations(&b.text, &code);
    let (code, cites) = (code.as_slice(), cites.as_slice());
    let text = b.text.as_str();
    let mut start = 0usize;
    let mut i = 0usize;
    while let Some(rel) = text.get(i..).and_then(|t| t.find(['.', '!', '?', '。', '！', '？'])) {
        let p = i + rel;
        if let Some(r) = around(code, p, |r| r.clone()) {
            i = r.end.max(p + 1);
            continue;
        }
        if let Some(r) = around(cites, p, |c| c.0.clone()) {
            i = r.end.max(p + 1);
            continue;
        }
        let Some(ch) = text[p..].chars().next() else { break };
        let next = p + ch.len_utf8();
        if let Some(end) = sentence_end(text, p, ch, cites) {
            push(&b, code, cites, start, end, out);
            start = end;
            i = end.max(next);
        } else {
            i = next;
        }
    }
    push(&b, code, cites, start, text.len(), out);
}

/// The range among sorted, disjoint `items` that holds byte `p`.
fn around<T>(items: &[T], p: usize, range: impl Fn(&T) -> Range<usize>) -> Option<Range<usize>> {
    let k = items.partition_point(|x| range(x).start <= p);
    let r = range(items.get(k.checked_sub(1)?)?);
    (p < r.end).then_some(r)
}

/// The citation group starting at `i` (groups are sorted).
fn cite_at(cites: &[Cite], i: usize) -> Option<&Cite> {
    cites.binary_search_by_key(&i, |c| c.0.start).ok().map(|k| &cites[k])
}

/// A citation group: its range in a block's text and its numbers.
type Cite = (Range<usize>, Vec<usize>);

/// Citation groups in a block's text, outside code spans: their ranges and numbers.
fn citations(text: &str, code: &[Range<usize>]) -> Vec<Cite> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((s, e, numbers)) = text.get(from..).and_then(find_citation) {
        let (s, e) = (from + s, from + e);
        // The first code span ending after `s` (they are sorted and disjoint): a scan of all of
        // them per citation was quadratic in a block of thousands of each.
        let k = code.partition_point(|r| r.end <= s);
        if code.get(k).is_some_and(|r| r.start < e) {
            from = s + 1;
            continue;
        }
        out.push((s..e, numbers));
        from = e;
    }
    out
}

/// Words before a `.` that do not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "cf", "dr", "e.g", "eg", "esp", "etc", "fig", "i.e", "ie", "incl", "mr", "mrs",
    "ms", "no", "resp", "st", "vs", "viz",
];

/// If the character `ch` at `i` ends a sentence, where the sentence ends (after closing
/// punctuation and the citations that follow).
fn sentence_end(text: &str, i: usize, ch: char, cites: &[Cite]) -> Option<usize> {
    let cjk = matches!(ch, '。' | '！' | '？');
    if !cjk && !matches!(ch, '.' | '!' | '?') {
        return None;
    }
    let mut end = i + ch.len_utf8();
    // `...`, `?!`, closing quotes and brackets.
    while let Some(c) = text[end..].chars().next() {
        if matches!(c, '.' | '!' | '?' | '"' | '\'' | ')' | '”' | '’' | '*' | '_') {
            end += c.len_utf8();
        } else {
            break;
        }
    }
    let rest = &text[end..];
    let at_cite = cite_at(cites, end).is_some();
    if !(cjk || rest.is_empty() || rest.starts_with(char::is_whitespace) || at_cite) {
        return None;
    }
    if ch == '.' && abbreviation_before(text, i, rest) {
        return None;
    }
    // Citations after the end belong to this sentence: `fast. [1][2]`.
    loop {
        let ws = text[end..].len() - text[end..].trim_start().len();
        match cite_at(cites, end + ws) {
            Some(c) => end = c.0.end,
            None => break,
        }
    }
    // A period after trailing citations: `fast [1].` is handled by the caller's scan, but
    // `fast. [1].` keeps its last period here.
    if text[end..].starts_with('.') && !text[..end].ends_with(['.', '!', '?']) {
        end += 1;
    }
    Some(end)
}

/// True when the `.` at `i` closes an abbreviation or an initial rather than a sentence.
fn abbreviation_before(text: &str, i: usize, rest: &str) -> bool {
    let before = &text[..i];
    let word_start = before
        .rfind(|c: char| c.is_whitespace() || matches!(c, '(' | '[' | '"' | '“'))
        .map_or(0, |p| p + before[p..].chars().next().map_or(1, char::len_utf8));
    let word = &before[word_start..];
    let lower = word.to_ascii_lowercase();
    let next_lower = rest.trim_start().starts_with(|c: char| c.is_ascii_lowercase());
    if lower == "etc" {
        return next_lower;
    }
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return true;
    }
    // `U.S.`, `e.g.` written another way; a single capital is an initial (`J. Smith`).
    let mut cs = word.chars();
    match (cs.next(), cs.next()) {
        (Some(c), None) => c.is_ascii_uppercase() && !next_lower,
        _ => word.split('.').all(|p| p.chars().count() == 1) && word.contains('.'),
    }
}

/// Add the sentence `text[start..end]` of a block, if it has any words.
fn push(
    b: &Block,
    code: &[Range<usize>],
    cites: &[Cite],
    start: usize,
    end: usize,
    out: &mut Vec<Sentence>,
) {
    let Some(slice) = b.text.get(start..end) else { return };
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    let (start, end) = (start + lead, end - trail);
    if start >= end {
        return;
    }
    let mut s = Sentence {
        range: b.start_at(start)..b.end_at(end).max(b.start_at(start)),
        ..Sentence::default()
    };
    // Code spans and citation groups inside the sentence, in order (both lists are sorted and
    // never overlap); the text between them is prose.
    let mut codes = code[code.partition_point(|r| r.end <= start)..].iter().peekable();
    let mut groups = cites[cites.partition_point(|c| c.0.end <= start)..].iter().peekable();
    let mut spans: Vec<(Range<usize>, Option<&[usize]>)> = Vec::new();
    loop {
        let next_code = codes.peek().map(|r| r.start).filter(|&s| s < end);
        let next_cite = groups.peek().map(|c| c.0.start).filter(|&s| s < end);
        match (next_code, next_cite) {
            (Some(a), b) if b.is_none_or(|b| a < b) => {
                spans.extend(codes.next().map(|r| (r.clone(), None)));
            }
            (_, Some(_)) => {
                spans.extend(groups.next().map(|c| (c.0.clone(), Some(c.1.as_slice()))));
            }
            _ => break,
        }
    }
    let mut i = start;
    for (r, numbers) in spans {
        let (from, to) = (r.start.max(i), r.end.min(end));
        if from > i {
            s.prose.push_str(&b.text[i..from]);
        }
        match numbers {
            None => {
                s.code.push(b.text[from..to].to_string());
                s.prose.push(' ');
            }
            Some(numbers) => {
                for n in numbers {
                    if !s.cites.contains(n) {
                        s.cites.push(*n);
                    }
                }
            }
        }
        i = i.max(to);
    }
    if i < end {
        s.prose.push_str(&b.text[i..end]);
    }
    if !s.prose.trim().is_empty() || !s.code.is_empty() {
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(md: &str) -> Vec<String> {
        split(md).iter().map(|s| md[s.range.clone()].to_string()).collect()
    }

    #[test]
    fn sentences_end_after_their_citations() {
        let md = "Run it first [1]. Then *stop* it. [2] Done [1, 2]!";
        assert_eq!(texts(md), ["Run it first [1].", "Then *stop* it. [2]", "Done [1, 2]!"]);
        let s = split(md);
        assert_eq!(s[0].cites, [1]);
        assert_eq!(s[1].cites, [2]);
        assert_eq!(s[2].cites, [1, 2]);
        assert_eq!(s[1].prose.trim(), "Then stop it.");
    }

    #[test]
    fn abbreviations_versions_and_code_do_not_end_sentences() {
        let md = "Use e.g. `a.b. c` or v1.2.3 in config.toml, etc. and more [1][2]. Next one.";
        let s = split(md);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].code, ["a.b. c"]);
        assert_eq!(s[0].cites, [1, 2]);
    }

    #[test]
    fn blocks_end_sentences_and_code_blocks_are_left_out() {
        let md = "# Title\n\n- one item [1]\n- two [2]\n\n```sh\necho hi. there\n```\n\nLast";
        assert_eq!(texts(md), ["Title", "one item [1]", "two [2]", "Last"]);
    }

    #[test]
    fn cjk_sentences_split_without_spaces() {
        assert_eq!(texts("设置端口。然后运行[1]。"), ["设置端口。", "然后运行[1]。"]);
    }
}
