//! Safe Markdown → HTML for model output, with `[n]` citations. Safe by construction:
//!
//! - Our own HTML writer over pulldown-cmark events emits only a fixed set of tags and
//!   attributes; every piece of model text is escaped. Raw HTML (blocks and inline) is shown as
//!   text. Heading attributes and wikilinks stay off, so no attribute from the model survives.
//! - Link and image URLs are judged after entity, percent and backslash decoding and removal of
//!   whitespace and control characters: only `http(s)`, relative and `#fragment` URLs survive.
//!   A rejected link renders as its plain text.
//! - A link off the docs site shows its host after it (`<span class="docent-link-host">`) unless
//!   its text is that host or a URL on it: a model (or a page it quotes) cannot make
//!   "docs.example.com/login" lead to another host without the reader seeing it.
//! - Images load only when relative or same-origin with [`RenderOptions::docs_origin`]: a
//!   Markdown image to an attacker's host would leak the conversation in its URL, so those
//!   become ordinary links.
//! - Output is capped at [`RenderOptions::max_output_bytes`] and stays well-formed when cut;
//!   input past twice the cap is not read, and nothing is parsed once the output is cut.
//! - Quotes and lists nest only so deep ([`limit_nesting`]): deeper nesting made the parse
//!   quadratic.
//! - Every render of a streamed prefix is well-formed and as safe as the final one (the writer
//!   closes what it opens), and an unfinished code fence renders as code.
//! - `[n]` becomes `<a class="docent-cite" href="{url}" title="{title}">[n]</a>` for known
//!   sources whose URL is a link on the site ([`is_site_link`]); other numbers are dropped.
//! - [`RenderOptions::marks`] (sentences the citation check did not find in their sources,
//!   [`crate::cite`]) become `<span class="docent-unsupported">not found in [n]</span>` right
//!   after the sentence.
//! - Bidi controls survive only in balanced pairs within one run of text (between citations),
//!   so an override cannot reorder a citation or anything after its run, and not at all in
//!   code, which readers copy: what is copied is what was shown. Control characters other
//!   than tab and newline are left out everywhere.

use crate::cite::{find_citation, source_label, Mark, Source};
use crate::source::safety::{
    is_bidi_control, is_unseen_control, strip_unpaired_bidi, without_bidi_controls,
};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// How to render.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// The answer's sources; `[n]` links to the source numbered `n`.
    pub sources: Vec<Source>,
    /// The docs site's origin, e.g. `https://docs.example.com`: images from it (and relative
    /// ones) are shown; others become links.
    pub docs_origin: Option<String>,
    /// Cap on the HTML's size in bytes; beyond it the output is cut (still well-formed) and
    /// [`Rendered::truncated`] is set.
    pub max_output_bytes: usize,
    /// Sentences not found in their sources, in answer order: a marker goes at each mark's
    /// offset (offsets past the end go at the end).
    pub marks: Vec<Mark>,
    /// The ASCII form of a host with characters outside ASCII (`xn--dcs-sed.example.com` for
    /// `dоcs.example.com`, a Cyrillic `о`), shown after a link to it in place of the look-alike.
    /// The widget passes the browser's own reading (`new URL(…).host`); without one, or when
    /// it gives none, the host is shown as written (and still never counts as named by the
    /// link's text).
    pub ascii_host: Option<fn(&str) -> Option<String>>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            sources: Vec::new(),
            docs_origin: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            marks: Vec::new(),
            ascii_host: None,
        }
    }
}

/// Default output cap: 256 KiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// The rendered HTML.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rendered {
    /// Well-formed, safe HTML.
    pub html: String,
    /// Source numbers cited (and linked), in order of first citation.
    pub cited: Vec<usize>,
    /// True when the output was cut at `max_output_bytes`.
    pub truncated: bool,
}

/// What a URL turned out to be, once decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlKind {
    /// `#fragment`.
    Fragment,
    /// A path relative to the page (same origin).
    Relative,
    /// `http(s)://host...`, or protocol-relative `//host` (then `origin` starts with `//`).
    Absolute {
        /// `scheme://authority`, lowercased.
        origin: String,
    },
}

/// Classify a link/image destination, or None when it must not be used (any scheme but http(s),
/// including `javascript:`, `data:`, `vbscript:` however encoded, or nothing at all).
pub fn classify_url(raw: &str) -> Option<UrlKind> {
    let mut s = raw.to_string();
    for _ in 0..4 {
        let next = strip_invisible(&percent_decode(&decode_entities(&s)));
        if next == s {
            break;
        }
        s = next;
    }
    // Per character (`str::to_lowercase` differs only in word-final sigma, which no scheme has;
    // its own code would be one more Unicode routine in the wasm).
    let s = crate::case::lower_str(&s);
    // A backslash may be an escape (`j\avascript:`) or, to a browser, a slash (`\\evil.example`):
    // the URL must be safe read either way, and is external if either reading makes it so.
    let as_escape = classify_normalized(&s.replace('\\', ""))?;
    let as_slash = classify_normalized(&s.replace('\\', "/"))?;
    let kind = match (as_escape, as_slash) {
        (_, abs @ UrlKind::Absolute { .. }) | (abs @ UrlKind::Absolute { .. }, _) => abs,
        (UrlKind::Fragment, UrlKind::Fragment) => UrlKind::Fragment,
        _ => UrlKind::Relative,
    };
    // The decoding above is for refusing schemes. A browser decodes neither percent-escapes nor
    // entities in an authority (`https://docs.example.com%2F@evil.example/` is evil.example
    // with a user name), so an absolute URL takes its origin from the string as a browser reads
    // it when that differs (it then never matches the docs origin).
    if let UrlKind::Absolute { origin } = &kind {
        let seen: String = raw
            .trim_matches(|c: char| c <= ' ')
            .chars()
            .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
            .map(|c| if c == '\\' { '/' } else { c })
            .collect();
        if let Some(UrlKind::Absolute { origin: o }) =
            classify_normalized(&crate::case::lower_str(&seen))
        {
            if &o != origin {
                return Some(UrlKind::Absolute { origin: o });
            }
        }
    }
    Some(kind)
}

/// Whether a URL from the index (a source's page) may be a link in the widget: a relative URL
/// or `#fragment` (same site), or an absolute http(s) URL on `docs_origin` (the configured docs
/// origin, else the page's). Everything else, `https:/other.example/` and `//other.example`
/// included, is shown without a link: index URLs come from docs pages, which are semi-trusted.
pub fn is_site_link(url: &str, docs_origin: Option<&str>) -> bool {
    match classify_url(url) {
        Some(UrlKind::Relative | UrlKind::Fragment) => true,
        Some(UrlKind::Absolute { origin }) => {
            docs_origin.map(normalize_origin).is_some_and(|o| !o.is_empty() && o == origin)
        }
        None => false,
    }
}

/// Classify a decoded, lowercased URL without backslashes.
fn classify_normalized(s: &str) -> Option<UrlKind> {
    if s.is_empty() {
        return None;
    }
    let first_delim = s.find(['/', '?', '#']).unwrap_or(s.len());
    if let Some(colon) = s[..first_delim].find(':') {
        let scheme = &s[..colon];
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let rest = s[colon + 1..].trim_start_matches('/');
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        if authority.is_empty() {
            return None;
        }
        return Some(UrlKind::Absolute { origin: format!("{scheme}://{authority}") });
    }
    if let Some(rest) = s.strip_prefix("//") {
        let rest = rest.trim_start_matches('/');
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        return Some(UrlKind::Absolute { origin: format!("//{authority}") });
    }
    if s.starts_with('#') {
        Some(UrlKind::Fragment)
    } else {
        Some(UrlKind::Relative)
    }
}

/// The authority of an origin from [`classify_url`] (`scheme://authority` or `//authority`).
fn authority_of(origin: &str) -> &str {
    &origin[origin.find('/').map_or(0, |i| i + 2).min(origin.len())..]
}

/// The host (and port) of an origin, without a user name: the part a browser connects to.
fn host_of(origin: &str) -> &str {
    let a = authority_of(origin);
    &a[a.rfind('@').map_or(0, |i| i + 1)..]
}

/// Whether a link's text is a URL on `host` (user name and all), so the reader already sees where
/// it leads. Text naming another host, or no URL, does not; nor does text that carries bidi
/// controls or direction marks: an override shows `…/moc.elpmaxe.scod//:sptth` as
/// "https://docs.example.com/…" while the URL it spells is on another host. Nor does a host
/// with letters outside ASCII, which may copy the docs host's look (`dоcs.example.com`, with
/// a Cyrillic `о`): its ASCII form is shown ([`RenderOptions::ascii_host`]).
fn names_host(label: &str, host: &str) -> bool {
    let reorders = |c: char| is_bidi_control(c) || matches!(c, '\u{200e}' | '\u{200f}' | '\u{61c}');
    host.is_ascii()
        && !label.chars().any(reorders)
        && matches!(classify_url(label), Some(UrlKind::Absolute { origin }) if authority_of(&origin) == host)
}

/// `s` as a citation number: one to four digits.
fn citation_number(s: &str) -> Option<usize> {
    (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// The citation number a reference link's label is (`[1]`, `[see][2]`, `[3][]`), if it is one.
fn citation_reference(link_type: pulldown_cmark::LinkType, id: &str) -> Option<usize> {
    use pulldown_cmark::LinkType::{Collapsed, Reference, Shortcut};
    matches!(link_type, Shortcut | Collapsed | Reference)
        .then(|| citation_number(id.trim()))
        .flatten()
}

/// The number of a citation marker written alone (`[1]`, ` [ 12 ] `, invisible characters
/// ignored), if `text` is one.
fn as_citation_marker(text: &str) -> Option<usize> {
    let t = strip_invisible(text);
    citation_number(t.trim().strip_prefix('[')?.strip_suffix(']')?.trim())
}

fn strip_invisible(s: &str) -> String {
    s.chars()
        .filter(|&c| {
            !(c.is_whitespace()
                || c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{ad}'))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex_val(b[i + 1]), hex_val(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Named entities that matter for URL schemes (the rest cannot form a scheme).
const ENTITIES: &[(&str, char)] = &[
    ("colon", ':'),
    ("tab", '\t'),
    ("newline", '\n'),
    ("nbsp", '\u{a0}'),
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("quot", '"'),
    ("apos", '\''),
    ("sol", '/'),
    ("bsol", '\\'),
    ("lpar", '('),
    ("rpar", ')'),
    ("period", '.'),
    ("comma", ','),
    ("num", '#'),
    ("percnt", '%'),
    ("quest", '?'),
    ("equals", '='),
    ("semi", ';'),
    ("excl", '!'),
    ("plus", '+'),
    ("commat", '@'),
    ("lowbar", '_'),
    ("hyphen", '-'),
    ("dash", '-'),
    ("shy", '\u{ad}'),
    ("zwj", '\u{200d}'),
    ("zwnj", '\u{200c}'),
];

/// Decode HTML character references the way a browser would in an attribute, leniently
/// (missing `;`, leading zeros, any case).
pub(crate) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('&') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(num) = after.strip_prefix('#') {
            let (hex, digits_start) = match num.as_bytes().first() {
                Some(b'x') | Some(b'X') => (true, 1),
                _ => (false, 0),
            };
            let digits: String = num[digits_start..]
                .chars()
                .take_while(|c| if hex { c.is_ascii_hexdigit() } else { c.is_ascii_digit() })
                .collect();
            if !digits.is_empty() {
                let significant = digits.trim_start_matches('0');
                let value = if significant.len() > 8 {
                    None
                } else {
                    u32::from_str_radix(significant, if hex { 16 } else { 10 }).ok()
                };
                let c = value.and_then(char::from_u32).filter(|&c| c != '\0').unwrap_or('\u{fffd}');
                out.push(c);
                let mut consumed = 1 + digits_start + digits.len();
                if after[consumed..].starts_with(';') {
                    consumed += 1;
                }
                rest = &after[consumed..];
                continue;
            }
        } else {
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            let lower = name.to_ascii_lowercase();
            if let Some(&(_, c)) = ENTITIES.iter().find(|(n, _)| *n == lower) {
                out.push(c);
                let mut consumed = name.len();
                if after[consumed..].starts_with(';') {
                    consumed += 1;
                }
                rest = &after[consumed..];
                continue;
            }
        }
        out.push('&');
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Escape text for HTML content and attribute values.
pub fn escape_html(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

fn escaped(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    escape_html(s, &mut o);
    o
}

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Quote and list marker characters a line may open with before the next is read as text
/// ([`limit_nesting`]).
const MAX_MARKERS: usize = 128;

/// `md` with the quote and list marker characters (`>`, `-`, `*`, `+`, and a number's `.` or
/// `)`) that open a line, past the first [`MAX_MARKERS`] of them, read as text (the first one
/// past becomes a backslash, which no parser reads as a marker), so no container is nested
/// deeper than that. pulldown-cmark matches every open container again on each following
/// line, so one line opening 100 000 quotes or lists followed by as many plain lines took
/// minutes. The length stays the same, so byte offsets into the answer (marks, sentence
/// ranges) still hold.
pub(crate) fn limit_nesting(md: &str) -> std::borrow::Cow<'_, str> {
    let mut out: Option<Vec<u8>> = None;
    // Markers seen at the start of the current line; None once past its opening run.
    let mut markers = Some(0);
    for (i, &c) in md.as_bytes().iter().enumerate() {
        markers = match (c, markers) {
            (b'\n', _) => Some(0),
            (b' ' | b'\t' | b'0'..=b'9', m) => m,
            (b'>' | b'-' | b'*' | b'+' | b'.' | b')', Some(m)) if m < MAX_MARKERS => Some(m + 1),
            (b'>' | b'-' | b'*' | b'+' | b'.' | b')', Some(_)) => {
                out.get_or_insert_with(|| md.as_bytes().to_vec())[i] = b'\\';
                None
            }
            _ => None,
        };
    }
    // Only ASCII bytes were replaced, by another: still UTF-8.
    out.and_then(|v| String::from_utf8(v).ok()).map_or(std::borrow::Cow::Borrowed(md), Into::into)
}

/// Render model Markdown to safe HTML. See the module docs.
pub fn render_markdown(md: &str, opts: &RenderOptions) -> Rendered {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut w = Writer::new(opts);
    // Past twice the output cap the input is not read: the output would be cut anyway, and a
    // hostile answer (megabytes of link definitions or citations) would otherwise cost a full
    // parse on every streamed chunk.
    let cut = crate::text::floor_char_boundary(md, opts.max_output_bytes.saturating_mul(2));
    let md_cut = cut < md.len();
    let md = limit_nesting(&md[..cut]);
    let md = &*md;
    let bytes = md.as_bytes();
    // In answer order, as `cite::marks` gives them (one out of order goes at the next event).
    let mut marks = opts.marks.iter().peekable();
    for (event, range) in Parser::new_ext(md, options).into_offset_iter() {
        // Once cut, the output only closes what is open (`finish`): the rest need not be parsed.
        if w.truncated {
            break;
        }
        // A text event that starts with a backslash-escaped character or a character reference
        // (`\[1\]`, `&#91;1&#93;`) is literal text: it never forms a citation.
        let literal = matches!(event, Event::Text(_))
            && ((range.start > 0 && bytes.get(range.start - 1) == Some(&b'\\'))
                || bytes.get(range.start) == Some(&b'&'));
        // Marks go before the first event at or past them; an element's end counts at its end,
        // so a mark at a paragraph's last sentence stays inside it.
        let at = if matches!(event, Event::End(_)) { range.end } else { range.start };
        while let Some(m) = marks.next_if(|m| m.at <= at) {
            w.mark(m);
        }
        // A mark inside a plain text event splits it.
        if let Event::Text(t) = &event {
            if md.get(range.clone()) == Some(&**t) {
                let mut done = range.start;
                while let Some(m) = marks.next_if(|m| m.at > done && m.at < range.end) {
                    let Some(piece) = md.get(done..m.at) else { break };
                    w.event(Event::Text(piece.into()), literal && done == range.start);
                    w.mark(m);
                    done = m.at;
                }
                if done > range.start {
                    let rest = md.get(done..range.end).unwrap_or("");
                    w.event(Event::Text(rest.to_string().into()), false);
                    continue;
                }
            }
        }
        w.event(event, literal);
    }
    if md_cut {
        w.flush_text();
        w.truncated = true;
    }
    for m in marks {
        w.mark(m);
    }
    w.finish()
}

struct ImageState {
    url: String,
    alt: String,
    depth: usize,
}

struct Writer<'o> {
    opts: &'o RenderOptions,
    docs_origin: Option<String>,
    out: String,
    /// One entry per open Start event: the closing HTML if its opening was written.
    stack: Vec<Option<&'static str>>,
    closing_len: usize,
    truncated: bool,
    text: String,
    /// Byte offsets in `text` of characters that were escaped in the source.
    literal: Vec<usize>,
    cited: Vec<usize>,
    link_depth: usize,
    /// Inside a reference link whose label is a citation number (`[1]` with a definition
    /// `[1]: url` somewhere in the answer): the citation it stands for, and whether its text
    /// is only that number (shortcut and collapsed links), which is then not written.
    cite_link: Option<(usize, bool)>,
    /// The host of the external link being written, and where its text starts in `out`.
    link_host: Option<(String, usize)>,
    /// The link being written: where its `<a` starts in `out` and where its text starts.
    link_at: Option<(usize, usize)>,
    raw_depth: usize,
    image: Option<ImageState>,
    table_aligns: Vec<Alignment>,
    in_table_head: bool,
    cell: usize,
    tbody_open: bool,
}

impl<'o> Writer<'o> {
    fn new(opts: &'o RenderOptions) -> Writer<'o> {
        Writer {
            opts,
            docs_origin: opts
                .docs_origin
                .as_deref()
                .map(normalize_origin)
                .filter(|o| !o.is_empty()),
            out: String::new(),
            stack: Vec::new(),
            closing_len: 0,
            truncated: false,
            text: String::new(),
            literal: Vec::new(),
            cited: Vec::new(),
            link_depth: 0,
            cite_link: None,
            link_host: None,
            link_at: None,
            raw_depth: 0,
            image: None,
            table_aligns: Vec::new(),
            in_table_head: false,
            cell: 0,
            tbody_open: false,
        }
    }

    fn fits(&self, extra: usize) -> bool {
        self.out.len() + extra + self.closing_len <= self.opts.max_output_bytes
    }

    /// Write an opening tag (and remember its closing) if it fits; always pushes one entry.
    fn open(&mut self, open: &str, close: &'static str) {
        if !self.truncated && self.fits(open.len() + close.len()) {
            self.out.push_str(open);
            self.closing_len += close.len();
            self.stack.push(Some(close));
        } else {
            self.truncated = true;
            self.stack.push(None);
        }
    }

    fn close(&mut self) {
        if let Some(Some(close)) = self.stack.pop() {
            self.out.push_str(close);
            self.closing_len -= close.len();
        }
    }

    /// Write already-safe HTML (a void element or a complete fragment) if it fits.
    fn raw(&mut self, html: &str) {
        if self.truncated {
            return;
        }
        if self.fits(html.len()) {
            self.out.push_str(html);
        } else {
            self.truncated = true;
        }
    }

    /// Write text, escaped, cutting it at the cap. Control characters other than tab and
    /// newline are left out: a page shows them as nothing, yet they are in what the reader
    /// copies (`ESC[201~` ends a terminal's bracketed paste, so a pasted command runs before
    /// the reader has looked at it).
    fn escaped_text(&mut self, s: &str) {
        if self.truncated {
            return;
        }
        // Every piece of text (each run between citations) is balanced, so a bidi override in
        // the docs or the model's text cannot reorder what follows it.
        let s = strip_unpaired_bidi(s);
        let s = s.as_ref();
        let mut buf = [0u8; 4];
        let mut piece = String::new();
        for c in s.chars() {
            if is_unseen_control(c) {
                continue;
            }
            piece.clear();
            escape_html(c.encode_utf8(&mut buf), &mut piece);
            if !self.fits(piece.len()) {
                self.truncated = true;
                return;
            }
            self.out.push_str(&piece);
        }
    }

    /// Write code (a block's line, a span), escaped, without any bidi control: code is what
    /// readers copy into a terminal or an editor, and balanced overrides or isolates would show
    /// it in another order than the one copied ("Trojan Source", CVE-2021-42574; rustc refuses
    /// them in code too).
    fn code_text(&mut self, s: &str) {
        self.escaped_text(&without_bidi_controls(s));
    }

    fn flush_text(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        let literal = std::mem::take(&mut self.literal);
        if self.link_depth > 0 {
            self.escaped_text(&text);
            return;
        }
        let mut done = 0;
        let mut from = 0;
        while let Some((start, end, numbers)) = find_citation(&text[from..]) {
            if self.truncated {
                return;
            }
            let (start, end) = (from + start, from + end);
            // `literal` is in text order: one binary search per candidate, not a scan (a
            // paragraph of `\[1\]`s made this quadratic).
            let i = literal.partition_point(|&p| p < start);
            if literal.get(i).is_some_and(|&p| p < end) {
                from = start + 1;
                continue;
            }
            self.escaped_text(&text[done..start]);
            for n in numbers {
                self.citation(n);
            }
            done = end;
            from = end;
        }
        self.escaped_text(&text[done..]);
    }

    /// The "not found in [n]" marker after a sentence.
    fn mark(&mut self, m: &Mark) {
        if self.raw_depth > 0 || self.image.is_some() {
            return;
        }
        self.flush_text();
        self.open(
            "<span class=\"docent-unsupported\" data-testid=\"docent-unsupported\">",
            "</span>",
        );
        self.escaped_text(&m.label());
        self.close();
    }

    fn citation(&mut self, n: usize) {
        let Some(source) = self.opts.sources.iter().find(|s| s.n == n) else { return };
        if !is_site_link(&source.url, self.docs_origin.as_deref()) {
            return;
        }
        let html = format!(
            "<a class=\"docent-cite\" href=\"{}\" title=\"{}\">[{}]</a>",
            escaped(&source.url),
            escaped(&without_bidi_controls(&source_label(source))),
            n
        );
        let before = self.truncated;
        self.raw(&html);
        if !before && !self.truncated && !self.cited.contains(&n) {
            self.cited.push(n);
        }
    }

    /// The host an absolute URL off the docs site leads to, or None.
    fn external_host<'k>(&self, kind: &'k UrlKind) -> Option<&'k str> {
        match kind {
            UrlKind::Absolute { origin }
                if self.docs_origin.as_deref() != Some(origin.as_str()) =>
            {
                Some(host_of(origin))
            }
            _ => None,
        }
    }

    /// After an external link whose text does not name its host: the host.
    fn show_host(&mut self, host: &str) {
        self.open("<span class=\"docent-link-host\">", "</span>");
        let ascii =
            (!host.is_ascii()).then(|| self.opts.ascii_host.and_then(|f| f(host))).flatten();
        self.escaped_text(" (");
        self.escaped_text(ascii.as_deref().unwrap_or(host));
        self.escaped_text(")");
        self.close();
    }

    fn link_attrs(&self, url: &str, kind: &UrlKind) -> String {
        if self.external_host(kind).is_some() {
            format!(
                "<a href=\"{}\" rel=\"nofollow noopener noreferrer\" target=\"_blank\">",
                escaped(url.trim())
            )
        } else {
            format!("<a href=\"{}\">", escaped(url.trim()))
        }
    }

    fn same_origin_image(&self, kind: &UrlKind) -> bool {
        match kind {
            UrlKind::Relative => true,
            UrlKind::Fragment => false,
            UrlKind::Absolute { origin } => self.docs_origin.as_deref() == Some(origin.as_str()),
        }
    }

    fn finish_image(&mut self, img: ImageState) {
        let alt = img.alt.trim().to_string();
        match classify_url(&img.url) {
            Some(kind) if self.same_origin_image(&kind) => {
                let html = format!(
                    "<img src=\"{}\" alt=\"{}\" loading=\"lazy\">",
                    escaped(img.url.trim()),
                    escaped(&alt)
                );
                self.raw(&html);
            }
            Some(kind @ UrlKind::Absolute { .. }) => {
                let open = self.link_attrs(&img.url, &kind);
                self.open(&open, "</a>");
                let label =
                    if alt.is_empty() { "image".to_string() } else { format!("image: {alt}") };
                self.escaped_text(&label);
                self.close();
                if let Some(host) = self.external_host(&kind) {
                    self.show_host(host);
                }
            }
            _ => self.escaped_text(&alt),
        }
    }

    fn event(&mut self, event: Event<'_>, literal: bool) {
        if let Some(img) = self.image.as_mut() {
            match event {
                Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                    img.alt.push_str(&t)
                }
                Event::Html(t) | Event::InlineHtml(t) => img.alt.push_str(&t),
                Event::SoftBreak | Event::HardBreak => img.alt.push(' '),
                Event::Start(Tag::Image { .. }) => img.depth += 1,
                Event::End(TagEnd::Image) => {
                    img.depth -= 1;
                    if img.depth == 0 {
                        let img = self.image.take().expect("image state present");
                        self.finish_image(img);
                    }
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Text(_) | Event::Code(_) if matches!(self.cite_link, Some((_, true))) => {}
            Event::Text(t) => {
                if self.raw_depth > 0 {
                    self.code_text(&t);
                } else {
                    if literal {
                        self.literal.push(self.text.len());
                    }
                    self.text.push_str(&t);
                }
            }
            Event::SoftBreak => {
                if self.raw_depth > 0 {
                    self.escaped_text("\n");
                } else {
                    self.text.push('\n');
                }
            }
            other => {
                self.flush_text();
                self.structural(other);
            }
        }
    }

    fn structural(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Code(t) | Event::InlineMath(t) => {
                self.open("<code>", "</code>");
                self.code_text(&t);
                self.close();
            }
            Event::DisplayMath(t) => {
                self.open("<div class=\"docent-code\"><pre><code>", "</code></pre></div>");
                self.code_text(&t);
                self.close();
            }
            Event::Html(t) | Event::InlineHtml(t) => self.escaped_text(&t),
            Event::FootnoteReference(t) => {
                let s = format!("[^{t}]");
                self.escaped_text(&s);
            }
            Event::HardBreak => self.raw("<br>"),
            Event::Rule => self.raw("<hr>"),
            Event::TaskListMarker(done) => self.escaped_text(if done { "☑ " } else { "☐ " }),
            Event::Text(_) | Event::SoftBreak => unreachable!("handled in event()"),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.open("<p>", "</p>"),
            Tag::Heading { level, .. } => {
                // Answers live inside a chat bubble: h1 → h3 ... capped at h6.
                let n = (level as usize + 2).min(6);
                let (open, close) = match n {
                    3 => ("<h3>", "</h3>"),
                    4 => ("<h4>", "</h4>"),
                    5 => ("<h5>", "</h5>"),
                    _ => ("<h6>", "</h6>"),
                };
                self.open(open, close);
            }
            Tag::BlockQuote(_) => self.open("<blockquote>", "</blockquote>"),
            Tag::CodeBlock(kind) => {
                let lang: String = match &kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
                        .next()
                        .unwrap_or("")
                        .chars()
                        .filter(|c| {
                            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '#' | '.')
                        })
                        .take(32)
                        .collect(),
                    CodeBlockKind::Indented => String::new(),
                };
                let open = if lang.is_empty() {
                    "<div class=\"docent-code\"><pre><code>".to_string()
                } else {
                    format!(
                        "<div class=\"docent-code\"><pre><code class=\"language-{}\">",
                        escaped(&lang)
                    )
                };
                self.raw_depth += 1;
                self.open(&open, "</code></pre></div>");
            }
            Tag::HtmlBlock => {
                self.raw_depth += 1;
                self.open("<p class=\"docent-raw-html\">", "</p>");
            }
            Tag::List(Some(start)) => {
                if start == 1 {
                    self.open("<ol>", "</ol>");
                } else {
                    let open = format!("<ol start=\"{start}\">");
                    self.open(&open, "</ol>");
                }
            }
            Tag::List(None) => self.open("<ul>", "</ul>"),
            Tag::Item => self.open("<li>", "</li>"),
            Tag::Table(aligns) => {
                self.table_aligns = aligns;
                self.tbody_open = false;
                self.open("<div class=\"docent-table\"><table>", "</table></div>");
            }
            Tag::TableHead => {
                self.in_table_head = true;
                self.cell = 0;
                self.open("<thead><tr>", "</tr></thead>");
            }
            Tag::TableRow => {
                if !self.tbody_open {
                    self.tbody_open = true;
                    self.open("<tbody>", "</tbody>");
                }
                self.cell = 0;
                self.open("<tr>", "</tr>");
            }
            Tag::TableCell => {
                let align = match self.table_aligns.get(self.cell) {
                    Some(Alignment::Left) => " align=\"left\"",
                    Some(Alignment::Center) => " align=\"center\"",
                    Some(Alignment::Right) => " align=\"right\"",
                    _ => "",
                };
                let (tag, close) =
                    if self.in_table_head { ("th", "</th>") } else { ("td", "</td>") };
                let open = format!("<{tag}{align}>");
                self.open(&open, close);
            }
            Tag::Emphasis => self.open("<em>", "</em>"),
            Tag::Strong => self.open("<strong>", "</strong>"),
            Tag::Strikethrough => self.open("<del>", "</del>"),
            Tag::Superscript => self.open("<sup>", "</sup>"),
            Tag::Subscript => self.open("<sub>", "</sub>"),
            Tag::Link { link_type, dest_url, id, .. } => {
                // A definition `[1]: https://elsewhere` would turn every later `[1]` into a
                // link there, and the citation would be gone: a reference to a number stays
                // the citation, whatever its definition says.
                if let Some(n) = citation_reference(link_type, &id) {
                    self.cite_link = Some((n, link_type != pulldown_cmark::LinkType::Reference));
                    self.stack.push(None);
                    return;
                }
                self.link_depth += 1;
                // An email autolink (`<a@b.example>`) names no page: its bare address would be
                // read as a relative path on the site. It stays text.
                let url =
                    (link_type != pulldown_cmark::LinkType::Email).then(|| classify_url(&dest_url));
                match url.flatten() {
                    Some(kind) => {
                        let open = self.link_attrs(&dest_url, &kind);
                        let at = self.out.len();
                        self.open(&open, "</a>");
                        self.link_at = (!self.truncated).then_some((at, self.out.len()));
                        self.link_host =
                            self.external_host(&kind).map(|h| (h.to_string(), self.out.len()));
                    }
                    None => self.stack.push(None),
                }
            }
            Tag::Image { dest_url, .. } => {
                self.image =
                    Some(ImageState { url: dest_url.to_string(), alt: String::new(), depth: 1 });
            }
            Tag::FootnoteDefinition(_) | Tag::MetadataBlock(_) => self.open("<div>", "</div>"),
            Tag::DefinitionList => self.open("<dl>", "</dl>"),
            Tag::DefinitionListTitle => self.open("<dt>", "</dt>"),
            Tag::DefinitionListDefinition => self.open("<dd>", "</dd>"),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::CodeBlock | TagEnd::HtmlBlock => {
                self.raw_depth = self.raw_depth.saturating_sub(1);
                self.close();
            }
            TagEnd::Link if self.cite_link.is_some() => {
                let (n, _) = self.cite_link.take().expect("checked");
                self.close();
                self.citation(n);
            }
            TagEnd::Link => {
                self.link_depth = self.link_depth.saturating_sub(1);
                if self.link_as_citation() {
                    return;
                }
                // The link's text as written (escaped; a URL's entities are decoded again).
                let shown = match self.link_host.take() {
                    Some((h, at)) if !names_host(self.out.get(at..).unwrap_or_default(), &h) => {
                        Some(h)
                    }
                    _ => None,
                };
                self.close();
                if let Some(h) = shown {
                    self.show_host(&h);
                }
            }
            TagEnd::TableHead => {
                self.in_table_head = false;
                self.close();
            }
            TagEnd::TableCell => {
                self.cell += 1;
                self.close();
            }
            TagEnd::Table => {
                if self.tbody_open {
                    self.tbody_open = false;
                    self.close();
                }
                self.close();
            }
            TagEnd::Image => {}
            _ => self.close(),
        }
    }

    /// A link whose whole text is a citation marker (`[[1]](/logout)`) would read as the
    /// citation while it leads elsewhere: it is written as the citation it names (or as plain
    /// text when there is no such source), its URL dropped. True when it was.
    fn link_as_citation(&mut self) -> bool {
        let Some((at, text_at)) = self.link_at.take() else { return false };
        if self.truncated || !matches!(self.stack.last(), Some(Some("</a>"))) {
            return false;
        }
        let Some(text) = self.out.get(text_at..) else { return false };
        let Some(n) = as_citation_marker(text) else { return false };
        self.stack.pop();
        self.closing_len -= "</a>".len();
        self.out.truncate(at);
        self.link_host = None;
        if self.opts.sources.iter().any(|s| s.n == n) {
            self.citation(n);
        } else {
            self.escaped_text(&format!("[{n}]"));
        }
        true
    }

    fn finish(mut self) -> Rendered {
        self.flush_text();
        if let Some(img) = self.image.take() {
            self.escaped_text(&img.alt);
        }
        while !self.stack.is_empty() {
            self.close();
        }
        Rendered { html: self.out, cited: self.cited, truncated: self.truncated }
    }
}
