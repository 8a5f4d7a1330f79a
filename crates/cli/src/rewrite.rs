//! Query rewriting for `docent eval` (and any other command that wants it), through any
//! OpenAI-compatible chat endpoint or `docent serve` itself, with the widget's messages and
//! reply handling from `docent_core::retrieve`, so the eval scores the rewrite path readers get.

use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use docent_core::prompt::{Message, Template, DEFAULT_REWRITE};
use docent_core::retrieve::{clean_rewrite, rewrite_messages};

use crate::index::block_on;

/// How to reach a chat model for query rewriting.
#[derive(Debug, Clone, Args, Default)]
pub struct RewriteArgs {
    /// Rewrite every question into a standalone query first, with the chat model at this
    /// OpenAI-compatible API base URL (e.g. https://api.openai.com/v1, a LiteLLM proxy, or
    /// `docent serve`'s URL with --rewrite-docent).
    #[arg(long, value_name = "URL")]
    pub rewrite_url: Option<String>,
    /// Chat model for rewriting (e.g. gpt-4o-mini); docent serve picks its own when omitted.
    #[arg(long, value_name = "M", requires = "rewrite_url")]
    pub rewrite_model: Option<String>,
    /// NAME of the environment variable holding the rewrite endpoint's API key.
    #[arg(long, value_name = "VAR", requires = "rewrite_url")]
    pub rewrite_key_env: Option<String>,
    /// The URL is a `docent serve`: send the widget's request (task "rewrite"; the proxy adds
    /// its own rewrite prompt) instead of docent's default rewrite prompt.
    #[arg(long, requires = "rewrite_url")]
    pub rewrite_docent: bool,
    /// Origin header for --rewrite-docent (a site origin the proxy allows).
    #[arg(long, value_name = "ORIGIN", requires = "rewrite_docent")]
    pub rewrite_origin: Option<String>,
    /// Language the docs are written in, for the default rewrite prompt.
    #[arg(long, value_name = "LANG", default_value = "English")]
    pub docs_language: String,
}

/// A configured rewriter.
pub struct Rewriter {
    url: String,
    model: Option<String>,
    key: Option<String>,
    docent: bool,
    origin: Option<String>,
    system: String,
    client: reqwest::Client,
}

impl Rewriter {
    /// None when no rewrite URL was given.
    pub fn from_args(a: &RewriteArgs) -> anyhow::Result<Option<Rewriter>> {
        let Some(base) = &a.rewrite_url else { return Ok(None) };
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("--rewrite-url {base:?} is not an http(s) URL; pass the API base, e.g. https://api.openai.com/v1");
        }
        let url = if a.rewrite_docent {
            format!("{base}/v1/chat/completions")
        } else {
            format!("{base}/chat/completions")
        };
        let key = match &a.rewrite_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                anyhow::anyhow!("--rewrite-key-env {var}: the environment variable {var} is not set; export it with the API key")
            })?),
            None => None,
        };
        let system = Template::new(DEFAULT_REWRITE)
            .render(&[("docs_language", a.docs_language.as_str())])
            .context("rendering the rewrite prompt")?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Some(Rewriter {
            url,
            model: a.rewrite_model.clone(),
            key,
            docent: a.rewrite_docent,
            origin: a.rewrite_origin.clone(),
            system,
            client,
        }))
    }

    /// The chat request body for one question.
    pub fn body(&self, question: &str, history: &[String]) -> serde_json::Value {
        let mut messages: Vec<Message> = Vec::new();
        if !self.docent {
            messages.push(Message::system(self.system.clone()));
        }
        messages.extend(rewrite_messages(&[], history, question));
        let mut body = serde_json::json!({
            "messages": messages,
            "stream": false,
            "temperature": 0.0,
            "max_tokens": 64,
        });
        if let Some(m) = &self.model {
            body["model"] = m.clone().into();
        }
        if self.docent {
            body["docent"] = serde_json::json!({"task": "rewrite"});
        }
        body
    }

    /// The standalone query for `question`, or None when the model's reply is no use.
    pub fn rewrite(&self, question: &str, history: &[String]) -> anyhow::Result<Option<String>> {
        let body = self.body(question, history);
        let mut req = self.client.post(&self.url).json(&body);
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(o) = &self.origin {
            req = req.header("origin", o);
        }
        let url = self.url.clone();
        let reply: serde_json::Value = block_on(async move {
            let resp = req.send().await.with_context(|| format!("cannot reach {url}"))?;
            let status = resp.status();
            let text = resp.text().await.with_context(|| format!("reading the reply of {url}"))?;
            if !status.is_success() {
                let excerpt: String = text.chars().take(300).collect();
                bail!("the rewrite endpoint {url} answered HTTP {status}: {excerpt}");
            }
            serde_json::from_str(&text)
                .with_context(|| format!("the rewrite endpoint {url} did not answer with JSON"))
        })?;
        let content = reply["choices"][0]["message"]["content"].as_str().ok_or_else(|| {
            anyhow::anyhow!("the rewrite endpoint {} answered without choices[0].message.content; is it an OpenAI-compatible chat completions API?", self.url)
        })?;
        Ok(clean_rewrite(content, question))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str, docent: bool) -> RewriteArgs {
        RewriteArgs {
            rewrite_url: Some(url.into()),
            rewrite_model: Some("m".into()),
            rewrite_docent: docent,
            docs_language: "English".into(),
            ..Default::default()
        }
    }

    #[test]
    fn an_openai_request_carries_the_rewrite_prompt_and_the_recent_turns() {
        let r = Rewriter::from_args(&args("http://x/v1/", false)).unwrap().unwrap();
        assert_eq!(r.url, "http://x/v1/chat/completions");
        let history = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let b = r.body("and then?", &history);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m[0]["role"], "system");
        assert!(m[0]["content"].as_str().unwrap().contains("standalone search query in English"));
        let users: Vec<&str> = m[1..].iter().map(|x| x["content"].as_str().unwrap()).collect();
        assert_eq!(users, ["b", "c", "and then?"]);
        assert_eq!(b["model"], "m");
        assert!(b.get("docent").is_none());
    }

    #[test]
    fn a_docent_serve_request_is_the_widgets() {
        let r = Rewriter::from_args(&args("http://x", true)).unwrap().unwrap();
        assert_eq!(r.url, "http://x/v1/chat/completions");
        let b = r.body("q", &[]);
        assert_eq!(b["docent"]["task"], "rewrite");
        assert_eq!(
            b["messages"].as_array().unwrap().len(),
            1,
            "no system message: the proxy adds it"
        );
    }

    #[test]
    fn a_url_that_is_not_http_is_refused_with_an_example() {
        let e = Rewriter::from_args(&args("localhost:4000", false)).err().unwrap().to_string();
        assert!(e.contains("https://api.openai.com/v1"), "{e}");
    }
}
