// docent.js: the tiny loader for the docent chat widget.
//
// It renders the launcher button inside a Shadow DOM right away and fetches nothing heavy until
// the reader shows interest: the wasm widget, its CSS and the site config are fetched on the first
// hover, focus or click of the launcher, on the keyboard shortcut, or (inline mode) when a
// <docent-chat> element scrolls into view. The index and the tokenizer ranks are fetched later
// still, by the widget itself, on the first question.
//
// Usage: <script type="module" src="/docent/docent.js" data-index="/docent/index.bin"
//          data-proxy="https://proxy.example.com" data-title="Ask the docs"></script>
// See docs/widget.md for every attribute.

const ASSET_BASE = new URL(".", import.meta.url);

/** Attributes read from the script tag and from <docent-chat>; kebab-case → snake_case keys. */
const ATTRS = [
  "index", "proxy", "title", "namespace", "starters", "placeholder", "shortcut", "theme",
  "position", "language", "config", "rewrite", "model", "launcher", "docs-origin", "support",
  "support-label",
];

function findScript() {
  const scripts = document.querySelectorAll("script[src]");
  for (const s of scripts) {
    if (s.src === import.meta.url) return s;
  }
  for (const s of scripts) {
    if (/(^|\/)docent\.js(\?|#|$)/.test(s.getAttribute("src") || "")) return s;
  }
  return null;
}

/** Reads `data-*` (script tag) or plain / `data-*` attributes (<docent-chat>) into an object. */
function readAttrs(el, plainToo) {
  const out = {};
  if (!el) return out;
  for (const name of ATTRS) {
    let v = el.getAttribute("data-" + name);
    if (v == null && plainToo) v = el.getAttribute(name);
    if (v != null) out[name.replace(/-/g, "_")] = v;
  }
  return out;
}

/** Attribute strings → config JSON shape (starters "a|b" → ["a","b"]). */
function normalise(attrs) {
  const cfg = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "config" || k === "launcher") continue;
    if (k === "starters") {
      cfg.starters = v.split("|").map((s) => s.trim()).filter(Boolean);
    } else if (v !== "") {
      cfg[k] = v;
    }
  }
  return cfg;
}

function resolveUrls(cfg) {
  // Relative URLs in attributes are relative to the page, made absolute for the widget.
  for (const k of ["index", "proxy"]) {
    if (cfg[k]) {
      try {
        const href = new URL(cfg[k], document.baseURI).href;
        cfg[k] = k === "proxy" ? href.replace(/\/+$/, "") : href;
      } catch (_) { /* the widget reports the bad URL */ }
    }
  }
  return cfg;
}

const scriptEl = findScript();
const scriptAttrs = readAttrs(scriptEl, false);

// ---------- shortcut ----------
const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent || "");

function parseShortcut(spec) {
  if (!spec || spec === "none" || spec === "off") return null;
  const parts = spec.toLowerCase().split("+").map((p) => p.trim());
  const sc = { key: parts.pop(), mod: false, ctrl: false, meta: false, alt: false, shift: false };
  for (const p of parts) {
    if (p === "mod") sc.mod = true;
    else if (p === "ctrl" || p === "control") sc.ctrl = true;
    else if (p === "cmd" || p === "meta") sc.meta = true;
    else if (p === "alt" || p === "option") sc.alt = true;
    else if (p === "shift") sc.shift = true;
  }
  return sc;
}

function matches(sc, e) {
  if (!sc || !e.key || e.key.toLowerCase() !== sc.key) return false;
  const wantCtrl = sc.ctrl || (sc.mod && !isMac);
  const wantMeta = sc.meta || (sc.mod && isMac);
  return e.ctrlKey === wantCtrl && e.metaKey === wantMeta && e.altKey === sc.alt && e.shiftKey === sc.shift;
}

function shortcutLabel(spec) {
  const sc = parseShortcut(spec);
  if (!sc) return "";
  const mods = [];
  if (sc.ctrl || (sc.mod && !isMac)) mods.push("Ctrl");
  if (sc.meta || (sc.mod && isMac)) mods.push("⌘");
  if (sc.alt) mods.push(isMac ? "⌥" : "Alt");
  if (sc.shift) mods.push("Shift");
  return mods.concat(sc.key.toUpperCase()).join(isMac ? "" : "+");
}

/** The shortcut in `aria-keyshortcuts` form ("Control+K", "Meta+Shift+K"). */
function shortcutAria(spec) {
  const sc = parseShortcut(spec);
  if (!sc) return "";
  const mods = [];
  if (sc.ctrl || (sc.mod && !isMac)) mods.push("Control");
  if (sc.meta || (sc.mod && isMac)) mods.push("Meta");
  if (sc.alt) mods.push("Alt");
  if (sc.shift) mods.push("Shift");
  return mods.concat(sc.key.length === 1 ? sc.key.toUpperCase() : sc.key).join("+");
}

// ---------- theme ----------
/** "dark" | "light" from the site's conventions: html.dark (VitePress), [data-theme] (Docusaurus),
 * then prefers-color-scheme. A forced data-theme="light|dark" on the tag wins. */
function siteTheme(forced) {
  if (forced === "light" || forced === "dark") return forced;
  const root = document.documentElement;
  const body = document.body;
  const dt = root.getAttribute("data-theme") || (body && body.getAttribute("data-theme"));
  if (dt === "dark" || dt === "light") return dt;
  if (root.classList.contains("dark") || (body && body.classList.contains("dark"))) return "dark";
  if (root.classList.contains("light")) return "light";
  return window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

const themed = new Set();
function applyTheme() {
  for (const [host, forced] of themed) {
    host.setAttribute("data-docent-theme", siteTheme(forced));
  }
}
function watchTheme(host, forced) {
  themed.add([host, forced]);
  applyTheme();
  if (themed.size > 1) return;
  new MutationObserver(applyTheme).observe(document.documentElement, {
    attributes: true, attributeFilter: ["class", "data-theme"],
  });
  if (document.body) {
    new MutationObserver(applyTheme).observe(document.body, {
      attributes: true, attributeFilter: ["class", "data-theme"],
    });
  }
  if (window.matchMedia) {
    const mq = matchMedia("(prefers-color-scheme: dark)");
    if (mq.addEventListener) mq.addEventListener("change", applyTheme);
  }
}

// ---------- lazy loading ----------
let modulePromise = null;
/** Imports and initialises the wasm module once (shared by every widget on the page). */
function loadModule() {
  if (!modulePromise) {
    modulePromise = import(new URL("docent-widget.js", ASSET_BASE).href).then(async (mod) => {
      await mod.default({ module_or_path: new URL("docent-widget_bg.wasm", ASSET_BASE).href });
      return mod;
    });
    modulePromise.catch(() => { modulePromise = null; });
  }
  return modulePromise;
}

/** Import one of the widget's lazily loaded wasm modules (`name`.js + `name`_bg.wasm). */
function lazyModule(name) {
  return import(new URL(`${name}.js`, ASSET_BASE).href).then(async (m) => {
    await m.default({ module_or_path: new URL(`${name}_bg.wasm`, ASSET_BASE).href });
    return m;
  });
}

let tokenizerPromise = null;
/** The exact cl100k tokenizer: a separate wasm module plus the ranks file, fetched only when the
 * widget's cheap token upper bound comes near the model's budget (long conversations). */
function loadTokenizer() {
  if (!tokenizerPromise) {
    const mod = lazyModule("docent-tokenizer");
    const ranks = fetch(new URL("cl100k_base.tiktoken", ASSET_BASE).href).then((r) => {
      if (!r.ok) throw new Error(`cl100k_base.tiktoken: HTTP ${r.status}`);
      return r.arrayBuffer();
    });
    tokenizerPromise = Promise.all([mod, ranks]).then(([m, buf]) => new m.Tokenizer(new Uint8Array(buf)));
    tokenizerPromise.catch(() => { tokenizerPromise = null; });
  }
  return tokenizerPromise;
}

let citePromise = null;
/** The citation check: a separate wasm module, fetched when the first generated answer is
 * complete. Resolves to the module (its `check(answer, numbers, texts)`). */
function loadCite() {
  if (!citePromise) {
    citePromise = lazyModule("docent-cite");
    citePromise.catch(() => { citePromise = null; });
  }
  return citePromise;
}

const configCache = new Map();
function loadSiteConfig(url) {
  if (!url) return Promise.resolve({});
  if (!configCache.has(url)) {
    const p = fetch(new URL(url, document.baseURI).href, { credentials: "same-origin" }).then((r) => {
      if (!r.ok) throw new Error(`config ${url}: HTTP ${r.status}`);
      return r.json();
    });
    p.catch(() => configCache.delete(url));
    configCache.set(url, p);
  }
  return configCache.get(url);
}

function loadCss(shadow) {
  return new Promise((resolve, reject) => {
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = new URL("docent.css", ASSET_BASE).href;
    link.onload = () => resolve();
    link.onerror = () => reject(new Error("could not load docent.css"));
    shadow.appendChild(link);
  });
}

const LAUNCHER_CSS = `
:host{all:initial;--docent-accent:#3451b2;--docent-accent-fg:#fff;--docent-bg:#fff;--docent-fg:#1f2328;
--docent-muted:#59636e;--docent-border:#d1d9e0;--docent-font:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
--docent-radius:12px;--docent-z:2147483000;--docent-shadow:0 8px 30px rgba(0,0,0,.18);font-family:var(--docent-font)}
:host([data-docent-theme=dark]){--docent-accent:#a8b1ff;--docent-accent-fg:#111827;--docent-bg:#1b1b1f;--docent-fg:#e6e6e8;
--docent-muted:#9ea3ad;--docent-border:#3c3f44;--docent-shadow:0 8px 30px rgba(0,0,0,.5)}
.docent-launcher{position:fixed;bottom:20px;right:20px;z-index:var(--docent-z);display:flex;align-items:center;gap:8px;
padding:10px 16px;border:0;border-radius:999px;background:var(--docent-accent);color:var(--docent-accent-fg);
font:600 15px/1.2 var(--docent-font);box-shadow:var(--docent-shadow);cursor:pointer}
.docent-launcher.left{right:auto;left:20px}
.docent-launcher:focus-visible{outline:3px solid var(--docent-fg);outline-offset:2px}
.docent-launcher[aria-busy=true]{opacity:.8;cursor:progress}
.docent-launcher kbd{font:12px/1 var(--docent-font);opacity:.8;border:1px solid currentColor;border-radius:4px;padding:2px 4px}
.docent-launcher svg{width:18px;height:18px}
.docent-load-error{position:fixed;bottom:72px;right:20px;z-index:var(--docent-z);max-width:320px;padding:10px 12px;
border-radius:8px;background:var(--docent-bg);color:var(--docent-fg);border:1px solid var(--docent-border);font:14px/1.4 var(--docent-font)}
.docent-inline-shell{display:block;min-height:120px;border:1px solid var(--docent-border);border-radius:var(--docent-radius);
background:var(--docent-bg);color:var(--docent-muted);padding:16px;font:14px/1.4 var(--docent-font)}
`;

const ICON = '<svg viewBox="0 0 24 24" aria-hidden="true" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z"/></svg>';

/** Builds the final config: site config JSON, then script attributes, then element attributes. */
async function buildConfig(attrs, mode) {
  const site = await loadSiteConfig(attrs.config);
  const cfg = Object.assign({}, site, normalise(attrs));
  cfg.mode = mode;
  cfg.assets_base = ASSET_BASE.href;
  return resolveUrls(cfg);
}

function showLoadError(shadow, err) {
  let box = shadow.querySelector(".docent-load-error");
  if (!box) {
    box = document.createElement("div");
    box.className = "docent-load-error";
    box.setAttribute("role", "alert");
    box.setAttribute("data-testid", "docent-load-error");
    shadow.appendChild(box);
  }
  box.textContent = "The docs assistant could not load (" + (err && err.message ? err.message : err) +
    "). Check your connection and try again.";
}

// ---------- floating launcher ----------
let floating = null;

function createFloating(attrs) {
  const host = document.createElement("div");
  host.setAttribute("data-docent-host", "");
  const shadow = host.attachShadow({ mode: "open" });
  const style = document.createElement("style");
  style.textContent = LAUNCHER_CSS;
  shadow.appendChild(style);
  const btn = document.createElement("button");
  btn.type = "button";
  btn.className = "docent-launcher" + (attrs.position === "bottom-left" ? " left" : "");
  btn.setAttribute("data-testid", "docent-launcher");
  btn.setAttribute("aria-haspopup", "dialog");
  btn.setAttribute("aria-expanded", "false");
  const title = attrs.title || "Ask the docs";
  const label = shortcutLabel(attrs.shortcut || "mod+k");
  btn.innerHTML = ICON;
  const span = document.createElement("span");
  span.textContent = title;
  btn.appendChild(span);
  if (label) {
    const kbd = document.createElement("kbd");
    kbd.textContent = label;
    kbd.setAttribute("aria-hidden", "true");
    btn.appendChild(kbd);
    // The name is the visible title (speech input users say what they see); the shortcut is
    // told to assistive technology as a shortcut, not as part of the name.
    btn.setAttribute("aria-keyshortcuts", shortcutAria(attrs.shortcut || "mod+k"));
  }
  shadow.appendChild(btn);
  const root = document.createElement("div");
  root.className = "docent-root";
  shadow.appendChild(root);
  document.body.appendChild(host);
  watchTheme(host, attrs.theme);

  const state = { host, shadow, btn, root, widget: null, loading: null };
  const ensure = () => {
    if (!state.loading) {
      btn.setAttribute("aria-busy", "true");
      state.loading = Promise.all([loadModule(), loadCss(shadow), buildConfig(attrs, "floating")])
        .then(([mod, , cfg]) => {
          state.widget = mod.mount(root, JSON.stringify(cfg));
          return state.widget;
        })
        .finally(() => btn.removeAttribute("aria-busy"));
      state.loading.catch((err) => {
        state.loading = null;
        showLoadError(shadow, err);
      });
    }
    return state.loading;
  };
  // Where focus was when the dialog was asked for: it goes back there when the dialog closes.
  const remember = () => {
    if (!(state.widget && state.widget.is_open())) state.returnTo = document.activeElement;
  };
  const open = (question) => (remember(), ensure()).then((w) => {
    const err = shadow.querySelector(".docent-load-error");
    if (err) err.remove();
    w.open();
    if (question) w.ask(question);
  });
  state.ensure = ensure;
  state.open = open;
  for (const ev of ["pointerenter", "focus", "touchstart"]) {
    btn.addEventListener(ev, () => { ensure().catch(() => {}); }, { once: true, passive: true });
  }
  btn.addEventListener("click", () => {
    if (state.widget && state.widget.is_open()) state.widget.close();
    else open().catch(() => {});
  });
  root.addEventListener("docent:open", () => btn.setAttribute("aria-expanded", "true"));
  root.addEventListener("docent:close", () => {
    btn.setAttribute("aria-expanded", "false");
    const to = state.returnTo;
    state.returnTo = null;
    if (to && to !== host && to !== document.body && to.isConnected && to.focus) to.focus();
    if (document.activeElement !== to || to === host) btn.focus();
  });
  const sc = parseShortcut(attrs.shortcut || "mod+k");
  if (sc) {
    window.addEventListener("keydown", (e) => {
      if (!matches(sc, e)) return;
      e.preventDefault();
      if (state.widget && state.widget.is_open()) state.widget.close();
      else open().catch(() => {});
    }, true);
  }
  return state;
}

// ---------- inline element ----------
class DocentChat extends HTMLElement {
  connectedCallback() {
    if (this._started) return;
    this._started = true;
    const attrs = Object.assign({}, scriptAttrs, readAttrs(this, true));
    const shadow = this.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = LAUNCHER_CSS.replace(":host{all:initial;", ":host{display:block;");
    shadow.appendChild(style);
    const shell = document.createElement("div");
    shell.className = "docent-inline-shell";
    shell.textContent = "Loading the docs assistant…";
    shadow.appendChild(shell);
    const root = document.createElement("div");
    root.className = "docent-root";
    shadow.appendChild(root);
    watchTheme(this, attrs.theme);
    const start = () => {
      if (this._loading) return;
      this._loading = Promise.all([loadModule(), loadCss(shadow), buildConfig(attrs, "inline")])
        .then(([mod, , cfg]) => {
          shell.remove();
          this.widget = mod.mount(root, JSON.stringify(cfg));
        })
        .catch((err) => {
          this._loading = null;
          shell.textContent = "";
          showLoadError(shadow, err);
        });
    };
    // Inline mode is the page's purpose: load once it is (nearly) visible.
    if ("IntersectionObserver" in window) {
      const io = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) {
          io.disconnect();
          start();
        }
      }, { rootMargin: "200px" });
      io.observe(this);
    } else {
      start();
    }
    this.addEventListener("focusin", start, { once: true });
  }

  disconnectedCallback() {
    if (this.widget && this.widget.unmount) {
      this.widget.unmount();
      this.widget = null;
      this._started = false;
    }
  }
}

if (!customElements.get("docent-chat")) customElements.define("docent-chat", DocentChat);

function start() {
  const wantsLauncher = scriptAttrs.launcher !== "none" && scriptAttrs.launcher !== "off" &&
    (scriptAttrs.index || scriptAttrs.config);
  if (wantsLauncher && !floating) floating = createFloating(scriptAttrs);
}

if (document.body) start();
else document.addEventListener("DOMContentLoaded", start, { once: true });

/** A small page API: `window.docent.open("How do I …?")`. */
window.docent = Object.assign(window.docent || {}, {
  open: (question) => (floating ? floating.open(question) : Promise.reject(new Error("no docent launcher on this page"))),
  close: () => { if (floating && floating.widget) floating.widget.close(); },
  preload: () => (floating ? floating.ensure() : loadModule()),
  loadTokenizer,
  loadCite,
});
