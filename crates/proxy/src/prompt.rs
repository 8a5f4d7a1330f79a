//! Server-side system prompts: minimal `{name}` templates.
//!
//! This is the proxy's own small renderer (same rules as the contract's core `prompt::Template`:
//! `{name}` placeholders, `{{`/`}}` for literal braces, an unknown placeholder is an error).
//! Templates are checked at start by rendering them with every known parameter.

use crate::config::Config;

/// Default system prompt for answers.
pub const DEFAULT_SYSTEM: &str = "You are the documentation assistant for {site}. \
Answer ONLY from the numbered sources in the user's message. \
Cite every claim with the number of its source in square brackets, like [1] or [2][3]. \
If the sources do not answer the question, say plainly that the documentation does not cover it; never invent APIs, options or URLs. \
Answer in {language}. Use Markdown; put code in fenced code blocks with a language tag. Be concise.";

/// Default system prompt for the rewrite task (turns a follow-up into one search query).
pub const DEFAULT_REWRITE: &str = "Rewrite the user's last message, using the conversation so far, into ONE standalone search query \
for the documentation of {site}, written in {docs_language}. Output only the query, nothing else.";

/// Parameters every template may use.
pub const KNOWN_PARAMS: [&str; 5] = ["site", "language", "page", "date", "docs_language"];

/// Render `template`, replacing `{name}` with the value from `params`.
pub fn render(template: &str, params: &[(&str, &str)]) -> Result<String, String> {
    let mut out = String::with_capacity(template.len() + 64);
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|(_, c)| *c) == Some('{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek().map(|(_, c)| *c) == Some('}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let rest = &template[i + 1..];
                let Some(end) = rest.find('}') else {
                    return Err(format!("unclosed '{{' at byte {i}; write {{{{ for a literal brace"));
                };
                let name = &rest[..end];
                let Some((_, v)) = params.iter().find(|(k, _)| *k == name) else {
                    return Err(format!(
                        "unknown placeholder {{{name}}}; known: {}; write {{{{ for a literal brace",
                        params.iter().map(|(k, _)| format!("{{{k}}}")).collect::<Vec<_>>().join(", ")
                    ));
                };
                out.push_str(v);
                for _ in 0..=end {
                    chars.next();
                }
            }
            '}' => return Err(format!("stray '}}' at byte {i}; write }}}} for a literal brace")),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Check the configured templates render with all known parameters.
pub fn check_templates(cfg: &Config) -> Result<(), String> {
    let mut params: Vec<(&str, &str)> = KNOWN_PARAMS.iter().map(|k| (*k, "x")).collect();
    for k in cfg.prompt.params.keys() {
        if KNOWN_PARAMS.contains(&k.as_str()) {
            return Err(format!("[prompt.params] {k} is set by the server; pick another name"));
        }
        params.push((k.as_str(), "x"));
    }
    if let Some(t) = &cfg.prompt.system {
        render(t, &params).map_err(|e| format!("[prompt] system: {e}"))?;
    }
    if let Some(t) = &cfg.prompt.rewrite {
        render(t, &params).map_err(|e| format!("[prompt] rewrite: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_double_braces_are_literal() {
        let s = render("Hi {site}! {{json}} {language}", &[("site", "Docs"), ("language", "German")]).unwrap();
        assert_eq!(s, "Hi Docs! {json} German");
    }

    #[test]
    fn an_unknown_placeholder_is_an_error_that_lists_the_known_ones() {
        let e = render("{sitee}", &[("site", "x")]).unwrap_err();
        assert!(e.contains("{sitee}") && e.contains("{site}"), "{e}");
        assert!(render("{site", &[("site", "x")]).is_err());
        assert!(render("a } b", &[]).is_err());
    }

    #[test]
    fn default_templates_render_with_the_known_parameters() {
        let p: Vec<(&str, &str)> = KNOWN_PARAMS.iter().map(|k| (*k, "v")).collect();
        render(DEFAULT_SYSTEM, &p).unwrap();
        assert!(render(DEFAULT_REWRITE, &p).unwrap().contains("standalone search query"));
    }
}
