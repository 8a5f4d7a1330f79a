//! Files a Markdown page pulls in from other files, inlined the way the generator renders them,
//! before the page is parsed ([`expand`]):
//!
//! - Docusaurus: ```` ```mdx-code-block ```` fences are unwrapped (their content is MDX, not
//!   code); a relative import of a `.md`/`.mdx` partial (`import Tags from './_tags.mdx'`, or
//!   from the site's root: `'@site/docs/_tags.mdx'`, when the file is in the source folder) is
//!   inlined where its component stands alone on a line (`<Tags />`), the partial's headings
//!   keeping the ids Docusaurus gives them (each partial has its own slugger). A file imported as
//!   text (`'!!raw-loader!./x.js'`, `'./x.js?raw'`) and shown in `<CodeBlock>{Src}</CodeBlock>`
//!   becomes that fenced code block.
//! - VitePress: `<!--@include: ./part.md-->` (with `{3,10}` line ranges and `#region`s) and
//!   `<<< ./file.ts#region{1,3 ts} [title]` code snippets, relative to the page or to the source
//!   folder (`@/`).
//!
//! Files are read through [`Includes`], given paths relative to the source folder (`/`-separated,
//! `..` resolved; a path that leaves the source folder is not read), so this module has no file
//! system of its own and compiles for wasm32. A missing file or region is a warning through
//! [`Includes::warn`], never a failure: the page is read without it.

use std::collections::HashMap;

use super::fence::{Dialect, Fences, Line};
use super::markdown::{
    bracket_balance, frontmatter, split_custom_id, starts_statement, statement_unfinished,
};
use super::{normalize_ws, Flavor, Slugger};

/// Reads the files a page includes.
pub trait Includes {
    /// The text of `path` (relative to the source folder, `/`-separated, normalised); `None` when
    /// there is no such file.
    fn read(&self, path: &str) -> Option<String>;
    /// A problem with an include (missing file or region); the page is still read without it.
    fn warn(&self, message: String) {
        let _ = message;
    }
    /// Where the source folder is under a Docusaurus site's root (what `@site/` names in an
    /// import), `/`-separated: `""` when the site's config is in the source folder itself,
    /// `"docs"` when the source folder is the site's `docs/`. `None`: not known.
    fn site_folder(&self) -> Option<&str> {
        None
    }

    /// Whether paths above the source folder (`../x`, relative to it) may be asked for:
    /// the reader allows a folder above it (`--include-root`) and refuses what leaves that.
    fn may_leave(&self) -> bool {
        false
    }
}

/// No files to include: every include is left out (silently).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoIncludes;

impl Includes for NoIncludes {
    fn read(&self, _path: &str) -> Option<String> {
        None
    }
}

/// How deep includes may nest (a cycle is refused before that, [`refused_include`]).
const MAX_DEPTH: usize = 8;

/// `rel` (as written in `from`, a source-relative file path) as a source-relative path: `./` and
/// `..` resolved, `@/x` (VitePress' source root) from the root. `None` when it leaves the source
/// folder or is absolute.
pub fn resolve_path(from: &str, rel: &str) -> Option<String> {
    resolve(from, rel, false)
}

/// [`resolve_path`], or for a reader that allows it ([`Includes::may_leave`]) a path above the
/// source folder, written relative to it (`../../packages/x/src/a.ts`).
fn resolve_for(inc: &dyn Includes, from: &str, rel: &str) -> Option<String> {
    resolve(from, rel, inc.may_leave())
}

fn resolve(from: &str, rel: &str, may_leave: bool) -> Option<String> {
    let from = from.replace('\\', "/");
    let rel = rel.trim().replace('\\', "/");
    let (mut parts, rest): (Vec<&str>, &str) = if let Some(r) = rel.strip_prefix('@') {
        (Vec::new(), r.trim_start_matches('/'))
    } else if rel.starts_with('/') || rel.contains(':') {
        return None;
    } else {
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        (dir.split('/').filter(|p| !p.is_empty() && *p != ".").collect(), rel.as_str())
    };
    // Folders above the source folder (only when `may_leave`).
    let mut up = 0usize;
    for p in rest.split('/') {
        match p {
            "" | "." => {}
            ".." if parts.is_empty() && may_leave => up += 1,
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| format!("{}{}", "../".repeat(up), parts.join("/")))
}

/// The body of page `path` (frontmatter already split off, written in `dialect`: where its
/// fences are, whose code holds no include) with its includes inlined (see the module docs).
/// Pages without includes come back unchanged.
pub fn expand(
    body: &str,
    flavor: Flavor,
    dialect: Dialect,
    path: &str,
    inc: &dyn Includes,
) -> String {
    expand_at(body, flavor, dialect, &[path], inc)
}

/// [`expand`] for the last file of `chain`: the page, then each file it includes down to this
/// one (a file already in the chain is a cycle, not included again).
fn expand_at(
    body: &str,
    flavor: Flavor,
    dialect: Dialect,
    chain: &[&str],
    inc: &dyn Includes,
) -> String {
    match flavor {
        Flavor::VitePress => {
            let body = vitepress_includes(body, chain, inc);
            vitepress_snippets(&body, dialect, chain[0], inc)
        }
        Flavor::Docusaurus | Flavor::GitHub => {
            docusaurus_partials(&unwrap_mdx_code_blocks(body, dialect), dialect, chain, inc)
        }
        Flavor::Docsify => body.to_string(),
    }
}

/// Why `target`, included by the last file of `chain`, is not read: it is already in the chain
/// (a cycle: the warning names it, `a.md → b.md → a.md`), or the chain is [`MAX_DEPTH`] deep.
fn refused_include(chain: &[&str], target: &str, what: &str) -> Option<String> {
    let from = chain.last().copied().unwrap_or_default();
    if chain.contains(&target) {
        let cycle: Vec<&str> = chain.iter().copied().chain([target]).collect();
        return Some(format!(
            "{from}: {what} cycle {}; {target} is not included again (remove the include that closes the loop)",
            cycle.join(" → ")
        ));
    }
    (chain.len() > MAX_DEPTH)
        .then(|| format!("{from}: {what}s nest deeper than {MAX_DEPTH} at {target}; not included"))
}

/// Docusaurus renders ```` ```mdx-code-block ```` fences as MDX: drop the fence lines and keep
/// the content (outside other fences).
pub fn unwrap_mdx_code_blocks(body: &str, dialect: Dialect) -> String {
    if !body.contains("mdx-code-block") {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut fences = Fences::new(dialect);
    for line in body.lines() {
        let in_code = fences.in_code();
        match fences.line(line) {
            Line::Open(o) if o.info.split_whitespace().next() == Some("mdx-code-block") => {
                fences.not_code();
            }
            // The end of an unwrapped block.
            Line::Close if !in_code => {}
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// `import Name from 'spec'` → (Name, spec): a default import's name and module.
fn default_import(statement: &str) -> Option<(&str, &str)> {
    let rest = statement.strip_prefix("import")?;
    let rest = rest.strip_prefix(char::is_whitespace)?.trim_start();
    let name_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))?;
    let name = &rest[..name_end];
    let rest = rest[name_end..].trim_start().strip_prefix("from")?.trim_start();
    let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &rest[1..];
    let spec = &rest[..rest.find(q)?];
    (!name.is_empty()).then_some((name, spec))
}

/// A module in the site: relative to the page, from the site's root (`@site/`), or from the
/// source folder (`/snippets/x.mdx`, as Mintlify writes them; not `//host/x`).
fn is_local(spec: &str) -> bool {
    spec.starts_with("./")
        || spec.starts_with("../")
        || spec.starts_with("@site/")
        || (spec.starts_with('/') && !spec.starts_with("//"))
}

/// `import Name from './x.mdx'` → (Name, "./x.mdx") for relative Markdown imports.
fn partial_import(statement: &str) -> Option<(&str, &str)> {
    let (name, spec) = default_import(statement)?;
    let lower = spec.to_ascii_lowercase();
    let markdown = lower.ends_with(".md") || lower.ends_with(".mdx");
    (markdown && is_local(spec)).then_some((name, spec))
}

/// A file imported as its text, to be shown in a `<CodeBlock>`: through webpack's raw-loader
/// (`import Src from '!!raw-loader!./x.js'`, Docusaurus' documented way) or a `?raw` query
/// (`'./x.js?raw'`, `'!!../src/x.ts?raw'`) → (Src, "./x.js"). Webpack's inline `!`/`!!`/`-!`
/// prefix and loader chain are read past.
fn raw_import(statement: &str) -> Option<(&str, &str)> {
    let (name, spec) = default_import(statement)?;
    let rest = spec.trim_start_matches(['!', '-']);
    let (loaders, file) = rest.rsplit_once('!').unwrap_or(("", rest));
    let file = match file.strip_suffix("?raw") {
        Some(file) => file,
        None if loaders.split('!').any(|l| l == "raw-loader") => file,
        None => return None,
    };
    is_local(file).then_some((name, file))
}

/// `<CodeBlock language="jsx" title="x.js">{Src}</CodeBlock>` or `<Code code={Src} lang="js" />`
/// on one line → (its attributes, Src); `{Src}` alone on a line → (None, Src), the element's
/// opening tag being on a line above.
fn raw_code_use(line: &str) -> Option<(Option<&str>, &str)> {
    let t = line.trim();
    if let Some(name) = jsx_name_expression(t) {
        return Some((None, name));
    }
    let open = t.strip_prefix('<')?;
    let tag_end = open.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))?;
    // Starlight's `<Code code={Src} lang="ts" />`.
    if let Some(attrs) = open[tag_end..].strip_suffix("/>") {
        let at = attrs.find(" code={")?;
        let expr = &attrs[at + " code=".len()..];
        return Some((Some(attrs), jsx_name_expression(&expr[..=expr.find('}')?])?));
    }
    let tag = &open[..tag_end];
    let body = open.strip_suffix('>')?.strip_suffix(tag)?.strip_suffix("</")?;
    let (attrs, expr) = body[tag_end..].rsplit_once('>')?;
    Some((Some(attrs), jsx_name_expression(expr.trim())?))
}

/// `{Name}` → Name.
fn jsx_name_expression(e: &str) -> Option<&str> {
    let n = e.strip_prefix('{')?.strip_suffix('}')?.trim();
    let ok = !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    ok.then_some(n)
}

/// An attribute's string value in JSX attributes: `language="jsx"` → "jsx".
fn attr_value<'a>(attrs: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = attrs;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + name.len()..].trim_start().strip_prefix('=');
        rest = &rest[at + name.len()..];
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        let Some(v) = after.map(str::trim_start) else { continue };
        let v = v.strip_prefix('{').unwrap_or(v);
        let q = v.chars().next().filter(|c| matches!(c, '"' | '\'' | '`'))?;
        return v[1..].find(q).map(|end| &v[1..1 + end]);
    }
    None
}

/// `<Name />`, `<Name prop="x" />` or `<Name></Name>` alone on a line → Name.
fn component_use(line: &str) -> Option<&str> {
    let t = line.trim();
    let inner = t.strip_prefix('<')?;
    let end = inner.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))?;
    let name = &inner[..end];
    let rest = &inner[end..];
    let self_closing = rest.trim_end().ends_with("/>");
    let paired = rest.starts_with('>') && rest[1..].trim() == format!("</{name}>");
    (!name.is_empty() && (self_closing || paired)).then_some(name)
}

/// The `import` statements of an MDX body (outside fences), each on one line: a statement may
/// span lines and a line may hold several ([`statement_unfinished`]).
fn import_statements(body: &str, dialect: Dialect) -> Vec<String> {
    let mut out = Vec::new();
    let mut fences = Fences::new(dialect);
    let mut open: Option<(String, i32)> = None;
    for line in body.lines() {
        if let Some((text, depth)) = open.as_mut() {
            text.push(' ');
            text.push_str(line.trim());
            *depth += bracket_balance(line);
            if !statement_unfinished(line, *depth) {
                out.push(open.take().map(|o| o.0).unwrap_or_default());
            }
            continue;
        }
        if fences.line(line) != Line::Text {
            continue;
        }
        if starts_statement(line) {
            let depth = bracket_balance(line);
            if statement_unfinished(line, depth) {
                open = Some((line.trim().to_string(), depth));
            } else {
                out.push(line.trim().to_string());
            }
        }
    }
    out.extend(open.map(|o| o.0));
    // One statement per item: `import A from './a'; import B from './b';`.
    out.iter()
        .flat_map(|s| s.split(';'))
        .map(str::trim)
        .filter(|s| s.starts_with("import"))
        .map(str::to_string)
        .collect()
}

/// A JavaScript string literal's text: `\_` is `_` (Prettier escapes `_` in MDX imports).
fn js_unescape(spec: &str) -> String {
    let mut out = String::with_capacity(spec.len());
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

fn docusaurus_partials(body: &str, dialect: Dialect, chain: &[&str], inc: &dyn Includes) -> String {
    let path = chain.last().copied().unwrap_or_default();
    let statements = import_statements(body, dialect);
    let imports: HashMap<&str, String> = statements
        .iter()
        .filter_map(|s| partial_import(s))
        .map(|(name, spec)| (name, js_unescape(spec)))
        .collect();
    let raws: HashMap<&str, String> = statements
        .iter()
        .filter_map(|s| raw_import(s))
        .map(|(name, spec)| (name, js_unescape(spec)))
        .collect();
    if imports.is_empty() && raws.is_empty() {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut fences = Fences::new(dialect);
    // The attributes of a code element whose opening tag stands on a line of its own.
    let mut open_attrs = "";
    for line in body.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        if fences.line(line) != Line::Text {
            // Code, kept as it is.
        } else if let Some(spec) = component_use(line).and_then(|n| imports.get(n)) {
            if let Some(text) = read_partial(spec, dialect, chain, inc) {
                out.push('\n');
                for l in text.lines() {
                    if !l.trim().is_empty() {
                        out.push_str(indent);
                    }
                    out.push_str(l);
                    out.push('\n');
                }
                out.push('\n');
            } else {
                out.push('\n');
            }
            continue;
        } else if let Some((attrs, spec)) =
            raw_code_use(line).and_then(|(a, n)| Some((a, raws.get(n)?)))
        {
            let attrs = attrs.unwrap_or(open_attrs);
            out.push('\n');
            out.push_str(&raw_code(spec, attrs, path, inc).unwrap_or_default());
            out.push('\n');
            continue;
        } else if !raws.is_empty() {
            let t = line.trim();
            // An opening tag (its attributes may go on over lines: those are not read).
            if t.starts_with('<') && !t.starts_with("</") && !t.ends_with("/>") {
                open_attrs = line;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A file imported as text, as the fenced code block its `<CodeBlock>` shows: the language from
/// `language=` or `lang=` (else the file's extension), the title from `title=`.
fn raw_code(spec: &str, attrs: &str, from: &str, inc: &dyn Includes) -> Option<String> {
    let Some(target) = module_path(spec, from, inc, inc.may_leave()) else {
        inc.warn(format!("{from}: code import {spec:?} is not in the source folder; not shown (--include-root allows a folder above it)"));
        return None;
    };
    let Some(text) = inc.read(&target) else {
        inc.warn(format!("{from}: imported code {target} not found; the page is read without it"));
        return None;
    };
    let lang = attr_value(attrs, "language").or_else(|| attr_value(attrs, "lang"));
    let lang = lang.or(extension(&target)).unwrap_or("");
    let lang: String = lang.chars().filter(|c| !c.is_whitespace() && *c != '`').collect();
    let title = match attr_value(attrs, "title") {
        // A backtick in a backtick fence's info string unmakes the fence.
        Some(t) if !t.contains(['"', '`']) => format!(" title=\"{}\"", normalize_ws(t)),
        _ => String::new(),
    };
    Some(fenced(&text.replace("\r\n", "\n"), &format!("{lang}{title}")))
}

/// An imported module's file as a source-relative path: from the site's root (`@site/`,
/// [`site_path`]), from the source folder (`/x.mdx`: Mintlify's project root, where its
/// `docs.json` is), or relative to page `from`, above the source folder only when `may_leave`.
fn module_path(spec: &str, from: &str, inc: &dyn Includes, may_leave: bool) -> Option<String> {
    if let Some(in_site) = spec.strip_prefix("@site/") {
        return site_path(in_site, inc.site_folder());
    }
    match spec.strip_prefix('/') {
        Some(in_source) => resolve("", in_source, false),
        None => resolve(from, spec, may_leave),
    }
}

/// `@site/<in_site>` as a source-relative path, given where the source folder is in the site
/// ([`Includes::site_folder`]); `None` when that is unknown or the file is outside it.
fn site_path(in_site: &str, site_folder: Option<&str>) -> Option<String> {
    let folder = site_folder?.trim_matches('/');
    let rel = resolve_path("", in_site)?;
    let inside = if folder.is_empty() {
        Some(rel.as_str())
    } else {
        rel.strip_prefix(folder).and_then(|r| r.strip_prefix('/'))
    };
    inside.filter(|r| !r.is_empty()).map(str::to_string)
}

/// A Docusaurus partial, expanded, its headings given the ids its own slugger makes.
fn read_partial(
    spec: &str,
    dialect: Dialect,
    chain: &[&str],
    inc: &dyn Includes,
) -> Option<String> {
    let from = chain.last().copied().unwrap_or_default();
    let Some(target) = module_path(spec, from, inc, false) else {
        let why = if spec.starts_with("@site/") && inc.site_folder().is_none() {
            "names the Docusaurus site's root, which was not found above the source folder"
        } else {
            "leaves the source folder"
        };
        inc.warn(format!("{from}: import {spec:?} {why}; not inlined"));
        return None;
    };
    if let Some(why) = refused_include(chain, &target, "import") {
        inc.warn(why);
        return None;
    }
    let Some(text) = inc.read(&target) else {
        inc.warn(format!(
            "{from}: imported partial {target} not found; the page is read without it"
        ));
        return None;
    };
    let (_, body) = frontmatter(&text);
    let chain: Vec<&str> = chain.iter().copied().chain([target.as_str()]).collect();
    let body = expand_at(body, Flavor::Docusaurus, dialect, &chain, inc);
    let body = pin_heading_ids(&body, Flavor::Docusaurus, dialect);
    Some(rebase_links(&body, dialect, &target, from))
}

/// The Markdown links and images of `body`, written relative to file `partial`, made relative
/// to file `page` that inlines it (Docusaurus resolves a partial's links from the partial's
/// own file: `[API](../../api/ref.md)` in `guide/parts/_a.mdx` inlined in `guide/page.mdx` is
/// `../api/ref.md` there). Links with a scheme, from the root (`/`), to an anchor (`#x`), in
/// code, or that leave the source folder are kept as written.
fn rebase_links(body: &str, dialect: Dialect, partial: &str, page: &str) -> String {
    let dir = |f: &str| f.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    if dir(partial) == dir(page) {
        return body.to_string();
    }
    map_outside_fences(body, dialect, |line| Some(rebase_line(line, partial, page)))
}

/// `body` with each line outside fenced code blocks replaced by what `f` makes of it (`None`:
/// kept as it is); fence lines and the code between them are kept. Every line ends in `\n`.
fn map_outside_fences(
    body: &str,
    dialect: Dialect,
    mut f: impl FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(body.len() + 64);
    let mut fences = Fences::new(dialect);
    for line in body.lines() {
        let mapped = if fences.line(line) == Line::Text { f(line) } else { None };
        out.push_str(mapped.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// One line's `](url)` links and `[label]: url` definitions rebased (see [`rebase_links`]).
fn rebase_line(line: &str, partial: &str, page: &str) -> String {
    let t = line.trim_start();
    // A reference definition: `[label]: url`.
    if let Some(close) = t.strip_prefix('[').and_then(|r| r.find("]:")) {
        let url_at = line.len() - t.len() + 1 + close + 2;
        let rest = &line[url_at..];
        let url = rest.split_whitespace().next().unwrap_or("");
        let start = url_at + rest.len() - rest.trim_start().len();
        if let Some(new) = rebased(url, partial, page) {
            return format!("{}{new}{}", &line[..start], &line[start + url.len()..]);
        }
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    // Backticks seen so far on the line, counted as they pass (a count of `out` per link would
    // rescan the line for every link).
    let mut ticks = 0;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        ticks += before.matches('`').count();
        let in_code = ticks % 2 == 1;
        let end = after.find([')', ' ', '\t']).unwrap_or(after.len());
        let url = &after[..end];
        let new = rebased(url, partial, page).filter(|_| !in_code);
        let pushed = new.as_deref().unwrap_or(url);
        out.push_str(pushed);
        ticks += pushed.matches('`').count();
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// `url` (relative to file `partial`) relative to file `page`, when it is a relative path in
/// the source folder; `None` to keep it as written.
fn rebased(url: &str, partial: &str, page: &str) -> Option<String> {
    let url = url.strip_prefix('<').and_then(|u| u.strip_suffix('>')).unwrap_or(url);
    let split = url.find(['#', '?']).unwrap_or(url.len());
    let (path, tail) = url.split_at(split);
    if path.is_empty() || path.starts_with(['/', '@']) || path.contains(':') {
        return None;
    }
    let target = resolve_path(partial, path)?;
    let page_dir: Vec<&str> =
        page.rsplit_once('/').map_or(Vec::new(), |(d, _)| d.split('/').collect());
    let parts: Vec<&str> = target.split('/').collect();
    let common = page_dir.iter().zip(&parts).take_while(|(a, b)| a == b).count();
    let up = "../".repeat(page_dir.len() - common);
    let down = parts[common..].join("/");
    let rel = if up.is_empty() { format!("./{down}") } else { format!("{up}{down}") };
    Some(format!("{rel}{tail}"))
}

/// ATX headings (outside fences) get an explicit `{#id}`: the one a fresh slugger gives them.
fn pin_heading_ids(body: &str, flavor: Flavor, dialect: Dialect) -> String {
    let mut slugger = Slugger::new(flavor);
    map_outside_fences(body, dialect, |line| {
        let raw = atx_heading(line)?;
        let (text, custom) = split_custom_id(&heading_plain_text(raw));
        if let Some(id) = custom {
            slugger.reserve(&id);
            return None;
        }
        let id = slugger.slug(&normalize_ws(&text));
        Some(format!("{} {{#{id}}}", line.trim_end().trim_end_matches('#').trim_end()))
    })
}

/// The text of an ATX heading line (`## Title ##` → "Title").
fn atx_heading(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let hashes = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &t[hashes..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let rest = rest.trim();
    let closed = rest.trim_end_matches('#');
    Some(if closed.len() < rest.len() && (closed.is_empty() || closed.ends_with(' ')) {
        closed.trim_end()
    } else {
        rest
    })
}

/// A heading's visible text as the Markdown parser sees it (text and code spans).
fn heading_plain_text(raw: &str) -> String {
    use pulldown_cmark::{Event, Parser};
    let mut s = String::new();
    for e in Parser::new(raw) {
        match e {
            Event::Text(t) | Event::Code(t) => s.push_str(&t),
            Event::SoftBreak | Event::HardBreak => s.push(' '),
            _ => {}
        }
    }
    s
}

/// VitePress' `<!--@include: path#region{start,end}-->`, anywhere in the text, recursively.
fn vitepress_includes(body: &str, chain: &[&str], inc: &dyn Includes) -> String {
    if !body.contains("@include:") {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("<!--") {
        let after = &rest[start + 4..];
        let Some(end) = after.find("-->") else { break };
        let inner = after[..end].trim();
        let Some(spec) = inner.strip_prefix("@include:").map(str::trim) else {
            out.push_str(&rest[..start + 4]);
            rest = after;
            continue;
        };
        let directive = &rest[start..start + 4 + end + 3];
        out.push_str(&rest[..start]);
        rest = &after[end + 3..];
        if spec.is_empty() {
            continue;
        }
        // Inside a code span the directive is most likely the syntax being documented.
        let line_start = out.rfind('\n').map_or(0, |i| i + 1);
        let in_code = out[line_start..].matches('`').count() % 2 == 1;
        match read_include(spec, chain, inc, in_code) {
            Included::Text(text) => out.push_str(&text),
            Included::Nothing => {}
            // VitePress 1 leaves the directive as written (an escape hatch for documenting
            // the syntax); VitePress 2 fails the build.
            Included::Missing => out.push_str(directive),
        }
    }
    out.push_str(rest);
    out
}

/// An include's line range: 1-based first and last line, either open.
type LineRange = (Option<usize>, Option<usize>);

/// `{3,10}` at the end of an include spec: 1-based first and last line (either may be empty).
fn split_range(spec: &str) -> (&str, Option<LineRange>) {
    if let Some(open) = spec.rfind('{').filter(|_| spec.ends_with('}')) {
        let inner = &spec[open + 1..spec.len() - 1];
        if let Some((a, b)) = inner.split_once(',') {
            let num = |s: &str| s.trim().parse::<usize>().ok();
            let digits = |s: &str| s.trim().chars().all(|c| c.is_ascii_digit());
            if digits(a) && digits(b) {
                return (&spec[..open], Some((num(a), num(b))));
            }
        }
    }
    (spec, None)
}

/// What an include directive becomes.
enum Included {
    Text(String),
    /// Nothing (a warning said why).
    Nothing,
    /// Its file does not exist: the directive stays as written.
    Missing,
}

/// `quiet`: a missing file is not warned about (the directive is in a code span).
fn read_include(spec: &str, chain: &[&str], inc: &dyn Includes, quiet: bool) -> Included {
    let from = chain.last().copied().unwrap_or_default();
    let (spec, range) = split_range(spec);
    let (file, region) = match spec.find('#') {
        Some(i) => (&spec[..i], Some(&spec[i + 1..])),
        None => (spec, None),
    };
    let Some(target) = resolve_for(inc, from, file) else {
        inc.warn(format!("{from}: @include {file:?} leaves the source folder; not included (--include-root allows a folder above it)"));
        return Included::Nothing;
    };
    if let Some(why) = refused_include(chain, &target, "include") {
        inc.warn(why);
        return Included::Nothing;
    }
    let Some(text) = inc.read(&target) else {
        if !quiet {
            inc.warn(format!("{from}: included file {target} not found; the directive is kept as text, as VitePress 1 does (VitePress 2 fails the build)"));
        }
        return Included::Missing;
    };
    // VitePress' order: the region, then the line range of what is left.
    let mut text = text.replace("\r\n", "\n");
    if let Some(name) = region.filter(|r| !r.is_empty()) {
        match find_region(&text, name) {
            Some(r) => text = r,
            None => inc.warn(format!(
                "{from}: region #{name} not found in {target}; the whole file is included"
            )),
        }
    }
    if let Some((a, b)) = range {
        let lines: Vec<&str> = text.split('\n').collect();
        let first = a.unwrap_or(1).saturating_sub(1).min(lines.len());
        let last = b.unwrap_or(lines.len()).min(lines.len()).max(first);
        text = lines[first..last].join("\n");
    }
    // Frontmatter is dropped from a whole included Markdown file only.
    let whole_md = region.is_none() && range.is_none() && target.ends_with(".md");
    let body = if whole_md { frontmatter(&text).1 } else { text.as_str() };
    let chain: Vec<&str> = chain.iter().copied().chain([target.as_str()]).collect();
    Included::Text(vitepress_includes(body, &chain, inc))
}

/// A region marker line (`// #region name`, `<!-- #region name -->`, `# region name`, ...):
/// (is_end, name).
fn region_marker(line: &str) -> Option<(bool, &str)> {
    let t = line.trim();
    let body = if let Some(r) = t.strip_prefix("<!--") {
        r.strip_suffix("-->")?.trim()
    } else if let Some(r) = t.strip_prefix("/*") {
        r.strip_suffix("*/")?.trim()
    } else if let Some(r) = t.strip_prefix("//") {
        r.trim()
    } else if let Some(r) = t.strip_prefix("#pragma ") {
        r.trim()
    } else if let Some(r) = t.strip_prefix("::") {
        r.trim()
    } else if let Some(r) = t.strip_prefix('#') {
        r.trim()
    } else {
        return None;
    };
    let body = body.trim_start_matches('#').trim_start();
    let lower = body.to_ascii_lowercase();
    let (end, rest) = if lower.starts_with("endregion") {
        (true, &body["endregion".len()..])
    } else if lower.starts_with("end region") {
        (true, &body["end region".len()..])
    } else if lower.starts_with("region") {
        (false, &body["region".len()..])
    } else {
        return None;
    };
    let name = rest.trim();
    let valid = name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '*');
    (valid && (rest.starts_with(' ') || name.is_empty())).then_some((end, name))
}

/// The lines of region `name` (VitePress' `findRegion`), without any region marker lines.
pub fn find_region(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| region_marker(l) == Some((false, name)))?;
    let len = lines[start + 1..].iter().position(|l| region_marker(l) == Some((true, name)))?;
    let kept: Vec<&str> = lines[start + 1..start + 1 + len]
        .iter()
        .copied()
        .filter(|l| region_marker(l).is_none())
        .collect();
    Some(kept.join("\n"))
}

/// The lines with their common leading whitespace removed.
fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| if l.len() >= indent { &l[indent..] } else { l.trim_start() })
        .collect::<Vec<_>>()
        .join("\n")
}

/// VitePress' `<<< path#region{lines lang} [title]` code snippets (outside fences) → fences.
fn vitepress_snippets(body: &str, dialect: Dialect, path: &str, inc: &dyn Includes) -> String {
    if !body.contains("<<<") {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut fences = Fences::new(dialect);
    for line in body.lines() {
        if fences.line(line) != Line::Text {
            // Code, kept as it is.
        } else if let Some(spec) = snippet_line(line) {
            if let Some(block) = snippet(spec.trim(), path, inc) {
                out.push_str(&block);
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn snippet_line(line: &str) -> Option<&str> {
    let t = line.trim_start();
    (line.len() - t.len() <= 3).then_some(())?;
    t.strip_prefix("<<<")
}

/// Parsed `path#region{1,3 lang} [title]`.
struct SnippetSpec<'a> {
    file: &'a str,
    region: Option<&'a str>,
    lang: Option<&'a str>,
    title: Option<&'a str>,
}

fn parse_snippet(spec: &str) -> SnippetSpec<'_> {
    let mut s = spec.trim();
    let mut title = None;
    if s.ends_with(']') {
        if let Some(open) = s.rfind('[') {
            title = Some(s[open + 1..s.len() - 1].trim()).filter(|t| !t.is_empty());
            s = s[..open].trim_end();
        }
    }
    let mut lang = None;
    if s.ends_with('}') {
        if let Some(open) = s.rfind('{') {
            let inner = &s[open + 1..s.len() - 1];
            lang = inner
                .split_whitespace()
                .find(|w| !w.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '-'))
                .map(|w| w.split(':').next().unwrap_or(w))
                .filter(|w| !w.is_empty());
            s = s[..open].trim_end();
        }
    }
    let (file, region) = match s.rfind('#') {
        Some(i)
            if s[i + 1..].chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')
                && i + 1 < s.len() =>
        {
            (&s[..i], Some(&s[i + 1..]))
        }
        _ => (s, None),
    };
    SnippetSpec { file: file.trim(), region, lang, title }
}

fn snippet(spec: &str, from: &str, inc: &dyn Includes) -> Option<String> {
    let sp = parse_snippet(spec);
    let Some(target) = resolve_for(inc, from, sp.file) else {
        inc.warn(format!("{from}: snippet {:?} leaves the source folder; not included (--include-root allows a folder above it)", sp.file));
        return None;
    };
    let Some(text) = inc.read(&target) else {
        inc.warn(format!("{from}: code snippet {target} not found; the page is read without it"));
        return None;
    };
    let mut code = text.replace("\r\n", "\n");
    if let Some(name) = sp.region {
        match find_region(&code, name) {
            Some(r) => code = dedent(&r),
            None => inc.warn(format!(
                "{from}: region #{name} not found in {target}; the whole file is shown"
            )),
        }
    }
    let lang = sp.lang.or(extension(&target)).unwrap_or("");
    // The title (a code-group tab's label) defaults to the file name, as in VitePress.
    let name = sp.file.rsplit('/').next().unwrap_or(sp.file);
    let title = sp.title.unwrap_or(name);
    let title = if title.is_empty() { String::new() } else { format!(" [{title}]") };
    Some(fenced(&code, &format!("{lang}{title}")))
}

/// A file's extension: `src/a.ts` → `ts`.
fn extension(path: &str) -> Option<&str> {
    path.rsplit('/').next().and_then(|f| f.rsplit_once('.')).map(|(_, e)| e)
}

/// `code` in a backtick fence longer than any run of backticks in it, with this info string.
fn fenced(code: &str, info: &str) -> String {
    let mut ticks = String::from("```");
    while code.contains(ticks.as_str()) {
        ticks.push('`');
    }
    format!("{ticks}{info}\n{}\n{ticks}\n", code.trim_end_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Files in memory, warnings collected.
    #[derive(Default)]
    struct Files {
        files: HashMap<String, String>,
        warnings: RefCell<Vec<String>>,
        site_folder: Option<&'static str>,
    }

    impl Files {
        fn with(files: &[(&str, &str)]) -> Files {
            Files {
                files: files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect(),
                ..Default::default()
            }
        }
    }

    impl Includes for Files {
        fn read(&self, path: &str) -> Option<String> {
            self.files.get(path).cloned()
        }
        fn warn(&self, message: String) {
            self.warnings.borrow_mut().push(message);
        }
        fn site_folder(&self) -> Option<&str> {
            self.site_folder
        }
    }

    #[test]
    fn a_partial_imported_from_the_site_root_is_inlined_when_it_is_in_the_source_folder() {
        let page = "import Shared from '@site/docs/_shared/setup.mdx';\nimport Out from '@site/src/_x.md';\n\n# Page\n\n<Shared />\n\n<Out />\n";
        let files = || Files::with(&[("_shared/setup.mdx", "Run the setup once.\n")]);
        // The source folder is the site's docs/.
        let docs = Files { site_folder: Some("docs"), ..files() };
        let out = expand(page, Flavor::Docusaurus, Dialect::Mdx, "guide/page.mdx", &docs);
        assert!(out.contains("Run the setup once."), "{out}");
        assert!(!out.contains("<Shared />") && !out.contains("<Out />"), "{out}");
        let warned = docs.warnings.borrow().join("\n");
        assert!(
            warned.contains("@site/src/_x.md") && warned.contains("leaves the source folder"),
            "{warned}"
        );
        // The source folder is the site itself.
        let site = Files {
            site_folder: Some(""),
            ..Files::with(&[("docs/_shared/setup.mdx", "Run the setup once.\n")])
        };
        assert!(expand(page, Flavor::Docusaurus, Dialect::Mdx, "docs/page.mdx", &site)
            .contains("Run the setup once."));
        // Where the site's root is not known, the warning says so.
        let unknown = files();
        assert!(!expand(page, Flavor::Docusaurus, Dialect::Mdx, "page.mdx", &unknown)
            .contains("Run the setup"));
        assert!(unknown.warnings.borrow()[0].contains("site's root, which was not found"));
        assert_eq!(site_path("docs/../../etc/passwd", Some("docs")), None);
        assert_eq!(site_path("docs", Some("docs")), None);
    }

    #[test]
    fn a_snippet_imported_from_the_source_folders_root_is_inlined() {
        // Mintlify: `/snippets/…` is from the project root, the folder docent reads.
        let page = "import Intro from '/snippets/intro.mdx';\nimport Gone from '/snippets/gone.mdx';\nimport Up from '/../secret.md';\n\n# Page\n\n<Intro />\n\n<Gone />\n\n<Up />\n";
        let files = Files::with(&[("snippets/intro.mdx", "Get an API key first.\n")]);
        let out = expand(page, Flavor::GitHub, Dialect::Mdx, "guide/start.mdx", &files);
        assert!(out.contains("Get an API key first."), "{out}");
        let warned = files.warnings.borrow().join("\n");
        assert!(warned.contains("snippets/gone.mdx not found"), "{warned}");
        assert!(warned.contains("\"/../secret.md\" leaves the source folder"), "{warned}");
        assert!(!is_local("//cdn.example/x.mdx"));
    }

    #[test]
    fn include_paths_resolve_relative_to_the_page_and_never_leave_the_source_folder() {
        assert_eq!(resolve_path("guide/a.md", "./_p.mdx").as_deref(), Some("guide/_p.mdx"));
        assert_eq!(resolve_path("guide/a.md", "../x/y.ts").as_deref(), Some("x/y.ts"));
        assert_eq!(resolve_path("guide/a.md", "@/snippets/s.ts").as_deref(), Some("snippets/s.ts"));
        assert_eq!(resolve_path("a.md", "part.md").as_deref(), Some("part.md"));
        assert_eq!(resolve_path("a.md", "../secret"), None);
        assert_eq!(resolve_path("g/a.md", "../../secret"), None);
        assert_eq!(resolve_path("a.md", "/etc/passwd"), None);
        assert_eq!(resolve_path("a.md", "C:\\x"), None);
        // A reader that allows a folder above the sources (`--include-root`) is asked for
        // paths above, relative to the source folder; the others never are.
        struct Above;
        impl Includes for Above {
            fn read(&self, _: &str) -> Option<String> {
                None
            }
            fn may_leave(&self) -> bool {
                true
            }
        }
        let up = |from, rel| resolve_for(&Above, from, rel);
        assert_eq!(up("g/a.md", "@/../../pkg/x.ts").as_deref(), Some("../../pkg/x.ts"));
        assert_eq!(up("g/a.md", "../../x.ts").as_deref(), Some("../x.ts"));
        assert_eq!(up("g/a.md", "./x.ts").as_deref(), Some("g/x.ts"));
        assert_eq!(up("a.md", "/etc/passwd"), None);
        assert_eq!(resolve_for(&NoIncludes, "g/a.md", "../../x.ts"), None);
    }

    #[test]
    fn mdx_code_block_fences_are_unwrapped_but_other_fences_kept() {
        let src = "```mdx-code-block\nimport X from './x';\n\n<Tabs>\n```\n\n````md\n```mdx-code-block\nshown as code\n```\n````\n";
        let out = unwrap_mdx_code_blocks(src, Dialect::Mdx);
        assert!(!out.contains("```mdx-code-block\nimport"), "{out}");
        assert!(out.contains("import X from './x';\n\n<Tabs>\n"), "{out}");
        assert!(out.contains("````md\n```mdx-code-block\nshown as code\n```\n````"), "{out}");
    }

    #[test]
    fn a_docusaurus_partial_is_inlined_where_its_component_is_used() {
        let files = Files::with(&[(
            "guide/_tags.mdx",
            "---\ntitle: x\n---\nimport Inner from '../_inner.md';\n\n## Tags file\n\nList tags in `tags.yml`.\n\n<Inner />\n",
        ), ("_inner.md", "## Overview\n\nInner text.\n")]);
        let page = "import TagsFile from './_tags.mdx';\n\n## Overview\n\nIntro.\n\n<TagsFile />\n\nAfter.\n";
        let out = expand(page, Flavor::Docusaurus, Dialect::Mdx, "guide/page.mdx", &files);
        assert!(out.contains("## Tags file {#tags-file}\n\nList tags in `tags.yml`."), "{out}");
        assert!(out.contains("## Overview {#overview}\n\nInner text."), "{out}");
        assert!(!out.contains("<TagsFile />") && !out.contains("title: x"), "{out}");
        assert!(out.find("Intro.").unwrap() < out.find("Tags file").unwrap());
        assert!(out.find("Inner text.").unwrap() < out.find("After.").unwrap());
        assert!(files.warnings.borrow().is_empty());
    }

    #[test]
    fn imports_that_share_a_line_or_wrap_are_each_inlined() {
        // As Prettier writes them in MDX: two imports on a line, the second wrapped after its
        // `import`, and `_` escaped in the path.
        let files = Files::with(&[
            ("_ios.md", "iOS steps.\n"),
            ("_kotlin.md", "Gradle steps.\n"),
            ("_java.md", "Java steps.\n"),
        ]);
        let page = "import Ios from './\\_ios.md'; import\nKotlin from './\\_kotlin.md'; import Java\nfrom './_java.md';\n\n<Ios />\n\n<Kotlin />\n\n<Java />\n";
        let out = expand(page, Flavor::Docusaurus, Dialect::Mdx, "page.md", &files);
        for text in ["iOS steps.", "Gradle steps.", "Java steps."] {
            assert!(out.contains(text), "{text}: {out}");
        }
        assert!(files.warnings.borrow().is_empty(), "{:?}", files.warnings.borrow());
        // And none of the statements is left as text.
        let read = crate::source::markdown::preprocess_mdx(&out);
        assert!(!read.contains("from") && !read.contains("Kotlin"), "{read}");
    }

    #[test]
    fn a_missing_partial_is_a_warning_naming_the_file_and_the_page_is_still_read() {
        let files = Files::default();
        let out = expand(
            "import P from './_gone.mdx';\n\nText.\n\n<P />\n",
            Flavor::Docusaurus,
            Dialect::Mdx,
            "a/page.md",
            &files,
        );
        assert!(out.contains("Text.") && !out.contains("<P />"), "{out}");
        let w = files.warnings.borrow();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("a/_gone.mdx") && w[0].contains("a/page.md"), "{w:?}");
    }

    #[test]
    fn a_file_imported_as_text_is_the_code_block_its_codeblock_shows() {
        let files = Files::with(&[
            ("guide/hello.js", "export default function Hello() {\n  return 'hi';\n}\n"),
            ("guide/demo/App.tsx", "const a = 1;\n// ```inside```\n"),
            ("examples/cfg.yml", "jobs: 4\n"),
            ("types.ts", "type A = 1;\n"),
        ]);
        let page = "import CodeBlock from '@theme/CodeBlock';\nimport Hello from '!!raw-loader!./hello.js';\nimport App from './demo/App.tsx?raw';\nimport Cfg from '!!raw-loader!@site/examples/cfg.yml';\nimport Gone from '!!raw-loader!./gone.js';\nimport Types from '!!../types.ts?raw';\n\n## Hello\n\n<CodeBlock language=\"jsx\" title=\"/src/components/Hello.js\">{Hello}</CodeBlock>\n\n<CodeBlock\n  language=\"tsx\">\n</CodeBlock>\n\n<CodeBlock language=\"tsx\">\n  {App}\n</CodeBlock>\n\n<CodeBlock>{Cfg}</CodeBlock>\n\n<CodeBlock>{Gone}</CodeBlock>\n\n<CodeBlock language=\"ts\">{Types}</CodeBlock>\n\n<Code code={Types} lang=\"typescript\" title=\"types.ts\" />\n\n<CodeBlock title=\"a`b\">{Hello}</CodeBlock>\n\nAfter.\n";
        let files = Files { site_folder: Some(""), ..files };
        let out = expand(page, Flavor::Docusaurus, Dialect::Mdx, "guide/page.mdx", &files);
        assert!(out.contains("```jsx title=\"/src/components/Hello.js\"\nexport default function Hello() {\n  return 'hi';\n}\n```\n"), "{out}");
        // A fence longer than any run of backticks in the file; the language from `language=`.
        assert!(out.contains("````tsx\nconst a = 1;\n// ```inside```\n````\n"), "{out}");
        // No `language=`: the file's extension.
        assert!(out.contains("```yml\njobs: 4\n```\n"), "{out}");
        assert!(out.contains("```ts\ntype A = 1;\n```\n"), "{out}");
        // Starlight's `<Code>` component.
        assert!(out.contains("```typescript title=\"types.ts\"\ntype A = 1;\n```\n"), "{out}");
        // A title that would unmake the fence is left out.
        assert!(out.contains("```js\nexport default"), "{out}");
        assert!(!out.contains("{Hello}") && !out.contains("{App}") && !out.contains("{Gone}"));
        let w = files.warnings.borrow();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("guide/gone.js") && w[0].contains("guide/page.mdx"), "{w:?}");
        drop(w);
        // Read as the page: the code is a code block under its heading, the page goes on.
        let p =
            crate::source::markdown::parse_with(page, Flavor::Docusaurus, "guide/page.mdx", &files);
        let hello = p.sections.iter().find(|s| s.anchor == "hello").unwrap();
        let code: Vec<&str> = hello
            .blocks
            .iter()
            .filter_map(|b| match b {
                crate::source::Block::Code { lang, .. } => Some(lang.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(code, ["jsx", "tsx", "yml", "ts", "typescript", "js"], "{:?}", hello.blocks);
        assert!(hello.blocks.iter().any(|b| b.render().contains("After.")), "{:?}", hello.blocks);
    }

    #[test]
    fn links_in_a_partial_are_rebased_from_its_file_to_the_importing_page() {
        let files = Files::with(&[
            (
                "guide/parts/_a.mdx",
                "## Options\n\nSee [the reference](../../api/ref.md#top), [b](./_b.mdx), ![i](./img.png),\n[site](https://x.dev/a.md), [root](/docs/intro), [here](#options) and `[code](./x.md)`.\n\n[def]: ../../api/other.md \"Other\"\n\n```md\n[fenced](./y.md)\n```\n",
            ),
            ("guide/_same.mdx", "[near](./near.md)\n"),
        ]);
        let page = "import A from './parts/_a.mdx';\nimport S from './_same.mdx';\n\n# Page\n\n<A />\n\n<S />\n";
        let out = expand(page, Flavor::Docusaurus, Dialect::Mdx, "guide/page.mdx", &files);
        for kept in [
            "[the reference](../api/ref.md#top)",
            "[b](./parts/_b.mdx)",
            "![i](./parts/img.png)",
            "[site](https://x.dev/a.md)",
            "[root](/docs/intro)",
            "[here](#options)",
            "`[code](./x.md)`",
            "[def]: ../api/other.md \"Other\"",
            "[fenced](./y.md)",
            "[near](./near.md)",
        ] {
            assert!(out.contains(kept), "{kept}: {out}");
        }
    }

    #[test]
    fn a_self_importing_partial_is_inlined_once_and_the_cycle_is_named() {
        let files = Files::with(&[("_loop.md", "import L from './_loop.md';\n\nx\n\n<L />\n")]);
        let out = expand(
            "import L from './_loop.md';\n\n<L />\n",
            Flavor::Docusaurus,
            Dialect::Mdx,
            "p.md",
            &files,
        );
        assert_eq!(out.matches("x\n").count(), 1, "{out}");
        let w = files.warnings.borrow();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("import cycle p.md → _loop.md → _loop.md"), "{w:?}");
    }

    #[test]
    fn a_page_that_includes_itself_includes_it_zero_times_with_one_warning() {
        let page = "# Self\n\nbefore\n\n<!--@include: ./self.md-->\n\nafter\n";
        let files = Files::with(&[
            ("guide/self.md", page),
            ("guide/a.md", "A\n<!--@include: ./b.md-->\n"),
            ("guide/b.md", "B\n<!--@include: ./a.md-->\n"),
        ]);
        let out = expand(page, Flavor::VitePress, Dialect::CommonMark, "guide/self.md", &files);
        assert_eq!(out.matches("before").count(), 1, "{out}");
        assert_eq!(out.matches("# Self").count(), 1, "{out}");
        let w = files.warnings.take();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("include cycle guide/self.md → guide/self.md"), "{w:?}");
        // Through another file: each file once, the warning names the loop.
        let out = expand(
            "<!--@include: ./a.md-->\n",
            Flavor::VitePress,
            Dialect::CommonMark,
            "guide/p.md",
            &files,
        );
        assert_eq!((out.matches('A').count(), out.matches('B').count()), (1, 1), "{out}");
        let w = files.warnings.take();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("guide/p.md → guide/a.md → guide/b.md → guide/a.md"), "{w:?}");
    }

    #[test]
    fn includes_nested_past_the_limit_stop_with_a_warning() {
        let owned: Vec<(String, String)> = (0..12)
            .map(|i| (format!("f{i}.md"), format!("x{i}\n<!--@include: ./f{}.md-->\n", i + 1)))
            .collect();
        let pairs: Vec<(&str, &str)> =
            owned.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        let files = Files::with(&pairs);
        let out = expand(
            "<!--@include: ./f0.md-->\n",
            Flavor::VitePress,
            Dialect::CommonMark,
            "p.md",
            &files,
        );
        assert_eq!(out.matches('x').count(), MAX_DEPTH, "{out}");
        assert!(files.warnings.borrow()[0].contains("nest deeper"));
    }

    #[test]
    fn vitepress_includes_take_line_ranges_and_regions_relative_to_the_page() {
        let files = Files::with(&[
            ("guide/parts/basics.md", "line1\nline2\nline3\nline4\n"),
            ("guide/parts/regions.md", "top\n<!-- #region usage -->\n## Usage\n\nUse it.\n<!-- #endregion usage -->\nbottom\n"),
        ]);
        let page = "# G\n\n<!--@include: ./parts/basics.md{2,3}-->\n\n<!-- @include: ./parts/regions.md#usage -->\n\n<!--@include: ./parts/none.md-->\n<!-- a comment -->\n";
        let out = expand(page, Flavor::VitePress, Dialect::CommonMark, "guide/index.md", &files);
        assert!(
            out.contains("line2\nline3\n") && !out.contains("line1") && !out.contains("line4"),
            "{out}"
        );
        assert!(
            out.contains("## Usage\n\nUse it.") && !out.contains("top") && !out.contains("#region"),
            "{out}"
        );
        assert!(!out.contains("basics.md") && !out.contains("regions.md"), "{out}");
        assert!(out.contains("<!-- a comment -->"), "{out}");
        // A missing file leaves the directive as written (VitePress 1), with a warning.
        assert!(out.contains("<!--@include: ./parts/none.md-->"), "{out}");
        let w = files.warnings.borrow();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("guide/parts/none.md"), "{w:?}");
    }

    #[test]
    fn an_include_written_in_a_code_span_to_show_the_syntax_is_text_without_a_warning() {
        // docent's own docs/sources.md documents the directive this way: every build warned.
        let files = Files::with(&[]);
        let page = "# G

`<!--@include: ./part.md-->` is replaced by the file.
";
        let out = expand(page, Flavor::VitePress, Dialect::CommonMark, "sources.md", &files);
        assert!(out.contains("`<!--@include: ./part.md-->` is replaced"), "{out}");
        assert!(files.warnings.borrow().is_empty());
        let p = crate::source::markdown::parse_with(page, Flavor::VitePress, "sources.md", &files);
        let text: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(text, vec!["`<!--@include: ./part.md-->` is replaced by the file."]);
    }

    #[test]
    fn vitepress_snippets_become_fences_with_their_region_language_and_title() {
        let files = Files::with(&[
            (
                "deploy/static.yaml",
                "name: Deploy\n# #region content\non: push\njobs: {}\n# #endregion content\n",
            ),
            (
                "snippets/a.ts",
                "// #region main\nexport const a = 1\n// #endregion main\nconst hidden = 2\n",
            ),
        ]);
        let page = "<<< ./static.yaml#content [deploy.yml]\n\n<<< @/snippets/a.ts#main{1 ts:line-numbers}\n\n```md\n<<< ./static.yaml\n```\n\n<<< ./gone.ts\n";
        let out = expand(page, Flavor::VitePress, Dialect::CommonMark, "deploy/index.md", &files);
        assert!(out.contains("```yaml [deploy.yml]\non: push\njobs: {}\n```"), "{out}");
        assert!(out.contains("```ts [a.ts]\nexport const a = 1\n```"), "{out}");
        assert!(!out.contains("hidden"), "{out}");
        assert!(out.contains("```md\n<<< ./static.yaml\n```"), "{out}");
        assert!(files.warnings.borrow()[0].contains("deploy/gone.ts"));
    }

    #[test]
    fn region_markers_of_several_languages_are_recognised() {
        for (open, close) in [
            ("// #region x", "// #endregion x"),
            ("//#region x", "//#endregion x"),
            ("/* #region x */", "/* #endregion x */"),
            ("<!-- #region x -->", "<!-- #endregion x -->"),
            ("# region x", "# endregion x"),
            ("#pragma region x", "#pragma endregion x"),
        ] {
            let text = format!("a\n{open}\nb\n{close}\nc\n");
            assert_eq!(find_region(&text, "x").as_deref(), Some("b"), "{open}");
        }
        assert_eq!(find_region("// #region y\nb\n// #endregion y\n", "x"), None);
    }
}
