//! Server-side system prompts.
//!
//! The wording and the template rules live in ONE place, `docent_core::prompt`: the defaults are
//! [`DEFAULT_SYSTEM`] (answers) and [`DEFAULT_REWRITE`] (the rewrite task), and templates are
//! [`Template`]s (`{name}` placeholders, `{{`/`}}` literal braces, an unknown placeholder is an
//! error). This module only decides which template a task uses and checks configured templates
//! at start-up, so that a typo is a config error instead of a failed request.

use std::sync::LazyLock;

pub use docent_core::prompt::{Template, DEFAULT_REWRITE, DEFAULT_SYSTEM};

use crate::config::Config;

/// Parameters the server fills for every template (besides `[prompt.params]` entries):
/// `{site}` (`[serve] site`), `{language}` (from the request's `docent.language`, or "the
/// language of the question"), `{page}` (the asker's page URL, or empty), `{date}` (UTC,
/// YYYY-MM-DD) and `{docs_language}` (`[prompt] docs_language`).
pub const KNOWN_PARAMS: [&str; 5] = ["site", "language", "page", "date", "docs_language"];

static SYSTEM: LazyLock<Template> = LazyLock::new(|| Template::new(DEFAULT_SYSTEM));
static REWRITE: LazyLock<Template> = LazyLock::new(|| Template::new(DEFAULT_REWRITE));

/// The template for `task` ("rewrite", else the answer prompt): the configured one, or core's
/// default.
pub fn template_for<'a>(cfg: &'a Config, task: &str) -> &'a Template {
    match docent_core::wire::Task::parse(task) {
        Some(docent_core::wire::Task::Rewrite) => cfg.prompt.rewrite.as_ref().unwrap_or(&REWRITE),
        _ => cfg.prompt.system.as_ref().unwrap_or(&SYSTEM),
    }
}

/// Check the configured templates (and `[prompt.params]` names) before the first request.
/// The error names the setting and the placeholders that may be used.
pub fn check_templates(cfg: &Config) -> Result<(), String> {
    let mut allowed: Vec<&str> = KNOWN_PARAMS.to_vec();
    for k in cfg.prompt.params.keys() {
        if KNOWN_PARAMS.contains(&k.as_str()) {
            return Err(format!("[prompt.params] {k} is set by the server; rename it (the server fills {{{k}}} itself)"));
        }
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("[prompt.params] \"{k}\" is not a usable placeholder name; use letters, digits and _ only"));
        }
        allowed.push(k.as_str());
    }
    for (key, t) in [("system", &cfg.prompt.system), ("rewrite", &cfg.prompt.rewrite)] {
        if let Some(t) = t {
            t.validate(&allowed).map_err(|e| {
                format!(
                    "[prompt] {key}: {e}; fix the template or add the name under [prompt.params]"
                )
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(toml: &str) -> Config {
        Config::from_toml_str(toml).unwrap()
    }

    #[test]
    fn the_defaults_are_core_templates_and_render_with_the_known_parameters() {
        let c = cfg("");
        let p: Vec<(&str, &str)> = KNOWN_PARAMS.iter().map(|k| (*k, "v")).collect();
        assert_eq!(template_for(&c, "answer").0, docent_core::prompt::DEFAULT_SYSTEM);
        assert_eq!(template_for(&c, "rewrite").0, docent_core::prompt::DEFAULT_REWRITE);
        template_for(&c, "answer").render(&p).unwrap();
        assert!(template_for(&c, "rewrite")
            .render(&p)
            .unwrap()
            .contains("standalone search query"));
    }

    #[test]
    fn a_configured_template_replaces_the_default_for_its_task_only() {
        let c = cfg("[prompt]\nsystem = \"Docs of {site}, {{literal}}, {team}\"\n[prompt.params]\nteam = \"Infra\"\n");
        check_templates(&c).unwrap();
        let s = template_for(&c, "answer").render(&[("site", "S"), ("team", "Infra")]).unwrap();
        assert_eq!(s, "Docs of S, {literal}, Infra");
        assert_eq!(template_for(&c, "rewrite").0, DEFAULT_REWRITE);
    }

    #[test]
    fn an_unknown_placeholder_is_a_config_error_that_says_what_to_fix() {
        let e = check_templates(&cfg("[prompt]\nrewrite = \"query for {sitee}\"\n")).unwrap_err();
        assert!(
            e.contains("[prompt] rewrite") && e.contains("{sitee}") && e.contains("site, language"),
            "{e}"
        );
        assert!(e.contains("[prompt.params]"), "{e}");
        assert!(check_templates(&cfg("[prompt]\nsystem = \"{site\"\n")).is_err());
        assert!(check_templates(&cfg("[prompt.params]\nsite = \"x\"\n"))
            .unwrap_err()
            .contains("rename"));
    }
}
