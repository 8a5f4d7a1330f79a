// docent-widget/integration: the code the site-generator plugins share (docent-vitepress,
// docusaurus-plugin-docent): option checking, the script tag's attributes, and the asset copy
// step. ONE copy, here; the plugins depend on this package (`"docent-widget": "file:../widget"`,
// bundled into their tarballs by `bundleDependencies`). No dependencies beyond Node's standard
// library.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Files `scripts/build-widget` always writes to dist/widget/ (stable names, no hashes). Every
 * other file in the widget folder (the lazily loaded tokenizer module, the ranks, the
 * third-party license notices and SBOM, ...) is published too, except pages and a stale index. */
export const REQUIRED_WIDGET_FILES = ['docent.js', 'docent-widget.js', 'docent-widget_bg.wasm'];

/** Whether a file of the widget folder is a widget asset to publish. */
export function isWidgetAsset(name) {
  return (
    typeof name === 'string' &&
    name !== 'index.bin' &&
    !name.startsWith('.') &&
    !name.includes('/') &&
    !name.includes('\\') &&
    !/\.html?$/i.test(name)
  );
}

/** Option name → script tag attribute (see docs/widget.md for what each one does). */
const ATTRIBUTES = {
  proxy: 'data-proxy',
  title: 'data-title',
  namespace: 'data-namespace',
  starters: 'data-starters',
  placeholder: 'data-placeholder',
  shortcut: 'data-shortcut',
  theme: 'data-theme',
  position: 'data-position',
  language: 'data-language',
  config: 'data-config',
  rewrite: 'data-rewrite',
  model: 'data-model',
  docsOrigin: 'data-docs-origin',
  launcher: 'data-launcher',
  support: 'data-support',
  supportLabel: 'data-support-label',
};

/** Options of the index the plugins build from the built site (when `index` is not given). */
const BUILD_OPTIONS = ['embed', 'exclude', 'indexArgs', 'checkAnchors', 'versions', 'llms'];
const KNOWN_OPTIONS = new Set(['index', 'widgetDir', 'path', 'eval', ...BUILD_OPTIONS, ...Object.keys(ATTRIBUTES)]);
/** Keys of the `eval` option (the quality gate on golden questions). */
const EVAL_KEYS = new Set(['questions', 'minRecall', 'maxAnsweredUnanswerable']);
/** R@5 the gate asks for when `eval` names only the questions file. */
const DEFAULT_MIN_RECALL = 0.8;
const EMBEDDERS = new Set(['none', 'local', 'openai']);
const THEMES = new Set(['auto', 'light', 'dark']);
const POSITIONS = new Set(['bottom-right', 'bottom-left']);
const REWRITES = new Set(['auto', 'always', 'off']);

/** Error with a message that says what to do. */
export class DocentOptionsError extends Error {
  constructor(message) {
    super(`docent: ${message}`);
    this.name = 'DocentOptionsError';
  }
}

/**
 * Checks and normalises the plugin options.
 * @param {object} options user options
 * @param {string} [cwd] folder relative paths are resolved against
 * @returns {{index: string, widgetDir: string|null, path: string, attrs: Record<string,string>}}
 */
export function normalizeOptions(options = {}, cwd = process.cwd()) {
  if (options === null || typeof options !== 'object') {
    throw new DocentOptionsError('options must be an object, e.g. { index: "docent/index.bin" }');
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(key)) {
      throw new DocentOptionsError(
        `unknown option "${key}"; known options: ${[...KNOWN_OPTIONS].join(', ')}`,
      );
    }
  }
  if (options.index !== undefined && (typeof options.index !== 'string' || options.index.trim() === '')) {
    throw new DocentOptionsError(
      'the "index" option is the path of a prebuilt index file (`docent index docs --out <file>`); ' +
        'leave it out to have the plugin index the built site',
    );
  }
  const embed = options.embed ?? 'none';
  if (!EMBEDDERS.has(embed)) {
    throw new DocentOptionsError(`embed must be one of none, local, openai (got "${embed}")`);
  }
  if (options.index !== undefined) {
    for (const key of BUILD_OPTIONS) {
      if (options[key] !== undefined) {
        throw new DocentOptionsError(
          `"${key}" only applies when the plugin builds the index; with a prebuilt "index" pass it to \`docent index\` instead`,
        );
      }
    }
  }
  const stringList = (key) => {
    const v = options[key] ?? [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new DocentOptionsError(`${key} must be an array of strings (got ${JSON.stringify(v)})`);
    }
    return v;
  };
  const exclude = stringList('exclude');
  const versions = stringList('versions').map((v) => v.replace(/^\/+|\/+$/g, ''));
  if (versions.some((v) => v === '' || v.split('/').includes('..'))) {
    throw new DocentOptionsError(`versions are folders of the site such as "v1" (got ${JSON.stringify(options.versions)})`);
  }
  const indexArgs = stringList('indexArgs');
  if (options.checkAnchors !== undefined && typeof options.checkAnchors !== 'boolean') {
    throw new DocentOptionsError(`checkAnchors must be true or false (got ${JSON.stringify(options.checkAnchors)})`);
  }
  if (options.llms !== undefined && typeof options.llms !== 'boolean') {
    throw new DocentOptionsError(`llms must be true or false (got ${JSON.stringify(options.llms)})`);
  }
  if (options.theme !== undefined && !THEMES.has(options.theme)) {
    throw new DocentOptionsError(`theme must be one of auto, light, dark (got "${options.theme}")`);
  }
  if (options.position !== undefined && !POSITIONS.has(options.position)) {
    throw new DocentOptionsError(
      `position must be bottom-right or bottom-left (got "${options.position}")`,
    );
  }
  if (options.rewrite !== undefined && !REWRITES.has(options.rewrite)) {
    throw new DocentOptionsError(`rewrite must be one of auto, always, off (got "${options.rewrite}")`);
  }
  if (options.launcher !== undefined && options.launcher !== 'none') {
    throw new DocentOptionsError(`launcher can only be "none" (hides the floating button; got "${options.launcher}")`);
  }
  if (options.proxy !== undefined && !/^(https?:\/\/|\/)/.test(String(options.proxy))) {
    throw new DocentOptionsError(
      `proxy must be an http(s) URL or a same-site path like /api (got "${options.proxy}")`,
    );
  }
  const publicPath = String(options.path ?? 'docent').replace(/^\/+|\/+$/g, '');
  if (publicPath === '' || publicPath.split('/').some((p) => p === '..' || p === '.')) {
    throw new DocentOptionsError(`path must be a folder name such as "docent" (got "${options.path}")`);
  }
  const attrs = {};
  for (const [key, attr] of Object.entries(ATTRIBUTES)) {
    let value = options[key];
    if (value === undefined || value === null) continue;
    if (key === 'starters' && Array.isArray(value)) {
      if (value.some((q) => String(q).includes('|'))) {
        throw new DocentOptionsError('a starter question may not contain "|"');
      }
      value = value.join('|');
    }
    attrs[attr] = String(value);
  }
  return {
    index: options.index === undefined ? null : path.resolve(cwd, options.index),
    widgetDir: options.widgetDir ? path.resolve(cwd, options.widgetDir) : null,
    path: publicPath,
    attrs,
    build: {
      embed, exclude, indexArgs, versions,
      checkAnchors: options.checkAnchors ?? true,
      llms: options.llms ?? true,
    },
    eval: evalOption(options.eval, cwd),
  };
}

/**
 * The `eval` option: a questions file (docs/eval.md) the index must answer well for the build
 * to pass, as a path or `{ questions, minRecall = 0.8, maxAnsweredUnanswerable }`.
 * @returns {{questions: string, minRecall: number, maxAnsweredUnanswerable?: number} | null}
 */
function evalOption(value, cwd) {
  if (value === undefined || value === null || value === false) return null;
  const o = typeof value === 'string' ? { questions: value } : value;
  const shape = 'eval must be the path of a questions file or { questions: "docent-questions.jsonl", minRecall: 0.8, maxAnsweredUnanswerable: 0 }';
  if (typeof o !== 'object' || typeof o.questions !== 'string' || o.questions.trim() === '') {
    throw new DocentOptionsError(`${shape} (got ${JSON.stringify(value)})`);
  }
  for (const key of Object.keys(o)) {
    if (!EVAL_KEYS.has(key)) throw new DocentOptionsError(`unknown eval option "${key}"; ${shape}`);
  }
  const minRecall = o.minRecall ?? DEFAULT_MIN_RECALL;
  if (typeof minRecall !== 'number' || !(minRecall >= 0 && minRecall <= 1)) {
    throw new DocentOptionsError(`eval.minRecall is the share of questions whose section must be in the top 5, from 0 to 1 (got ${JSON.stringify(o.minRecall)})`);
  }
  const max = o.maxAnsweredUnanswerable;
  if (max !== undefined && !(Number.isInteger(max) && max >= 0)) {
    throw new DocentOptionsError(`eval.maxAnsweredUnanswerable must be a whole number ≥ 0 (got ${JSON.stringify(max)})`);
  }
  return { questions: path.resolve(cwd, o.questions), minRecall, ...(max === undefined ? {} : { maxAnsweredUnanswerable: max }) };
}

/**
 * The script tag's attributes for a site served under `base` (VitePress `base` or Docusaurus
 * `baseUrl`, e.g. "/" or "/docs/"), in a stable order: type, src, data-index, then the optional data-* attributes.
 */
export function scriptAttributes(opts, base = '/') {
  const prefix = joinBase(base, opts.path);
  return {
    type: 'module',
    src: `${prefix}/docent.js`,
    'data-index': `${prefix}/index.bin`,
    ...opts.attrs,
  };
}

/** "/docs/" + "docent" → "/docs/docent" (no trailing slash). */
export function joinBase(base, sub) {
  let b = String(base || '/');
  if (!b.startsWith('/') && !/^https?:\/\//.test(b)) b = `/${b}`;
  if (!b.endsWith('/')) b = `${b}/`;
  return `${b}${sub}`;
}

/** The escaped HTML of a script tag with these attributes. */
export function scriptTagHtml(attrs) {
  const parts = Object.entries(attrs).map(([k, v]) => `${k}="${escapeAttr(v)}"`);
  return `<script ${parts.join(' ')}></script>`;
}

function escapeAttr(v) {
  return String(v)
    .replace(/&/g, '&amp;')
    .replace(/"/g, '&quot;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

/**
 * Where the widget assets are: the `widgetDir` option, else the site's own `docent-widget` npm
 * package (its dist/ folder or its root), else the `docent-widget` package this module belongs
 * to (bundled with the plugin) when it holds a built dist/, else an error that says how to get
 * them.
 */
export function resolveWidgetDir(opts, cwd = process.cwd()) {
  if (opts.widgetDir) return opts.widgetDir;
  const candidates = [];
  const require = createRequire(path.join(cwd, 'package.json'));
  try {
    const pkg = path.dirname(require.resolve('docent-widget/package.json'));
    candidates.push(path.join(pkg, 'dist'), pkg);
  } catch {
    // not installed in the site: try the bundled copy
  }
  candidates.push(path.join(path.dirname(fileURLToPath(import.meta.url)), 'dist'));
  for (const dir of candidates) {
    if (fs.existsSync(path.join(dir, 'docent.js'))) return dir;
  }
  throw new DocentOptionsError(
    'widget assets not found: set the "widgetDir" option to the folder that ' +
      'scripts/build-widget writes (dist/widget), or npm install docent-widget',
  );
}

/** MIME types for the files served or copied. */
export function contentType(file) {
  const ext = path.extname(file).toLowerCase();
  return (
    {
      '.js': 'text/javascript; charset=utf-8',
      '.css': 'text/css; charset=utf-8',
      '.wasm': 'application/wasm',
      '.bin': 'application/octet-stream',
      '.tiktoken': 'text/plain; charset=utf-8',
      '.txt': 'text/plain; charset=utf-8',
      '.json': 'application/json',
    }[ext] || 'application/octet-stream'
  );
}

/**
 * The widget's files alone: name → absolute path (a dev server serves them before its index
 * exists). Throws a clear error when a required file is missing.
 */
export function widgetAssetMap(opts, cwd = process.cwd()) {
  const widgetDir = resolveWidgetDir(opts, cwd);
  for (const name of REQUIRED_WIDGET_FILES) {
    const src = path.join(widgetDir, name);
    if (!fs.existsSync(src)) {
      throw new DocentOptionsError(
        `${src} is missing: build the widget first (scripts/build-widget) or fix "widgetDir"`,
      );
    }
  }
  const map = new Map();
  for (const entry of fs.readdirSync(widgetDir, { withFileTypes: true })) {
    if (entry.isFile() && isWidgetAsset(entry.name)) {
      map.set(entry.name, path.join(widgetDir, entry.name));
    }
  }
  return map;
}

/**
 * The files to publish: name under the public folder → absolute source path. Throws a clear
 * error when the index or a required widget file is missing. `indexFile` defaults to the
 * prebuilt `index` option.
 */
export function assetMap(opts, cwd = process.cwd(), indexFile = opts.index) {
  const map = widgetAssetMap(opts, cwd);
  if (!indexFile) {
    throw new DocentOptionsError('no index to publish: the plugin builds one during the site build');
  }
  if (!fs.existsSync(indexFile)) {
    throw new DocentOptionsError(
      `index file ${indexFile} not found: run \`docent index <docs folder> --out ${indexFile}\` first`,
    );
  }
  checkIndexFormat(indexFile, resolveWidgetDir(opts, cwd));
  map.set('index.bin', indexFile);
  for (const [name, file] of shardFiles(indexFile)) map.set(name, file);
  return map;
}

/** True for a split index's shard file name: `<stem>-<p|t|v>-<8 hex>.bin` (postings, texts, vectors). */
export function isShardName(name) {
  return typeof name === 'string' && /^[^/\\.][^/\\]*-[ptv]-[0-9a-f]{8}\.bin$/.test(name);
}

/**
 * The shards of a split index (`docent index --split`), found next to its entry file and named
 * after its stem: [name, absolute path] pairs, none for a one-file index. They are published
 * next to `index.bin` under their own names, which the entry lists.
 */
export function shardFiles(indexFile) {
  const dir = path.dirname(indexFile);
  const stem = path.basename(indexFile).replace(/\.[^.]*$/, '');
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => isShardName(n) && n.startsWith(`${stem}-`) && /^-[ptv]-[0-9a-f]{8}\.bin$/.test(n.slice(stem.length)))
    .sort()
    .map((n) => [n, path.join(dir, n)]);
}

/** The index format versions this package's widget reads (package.json `docent.indexFormats`). */
export function widgetIndexFormats(widgetDir) {
  const own = path.join(path.dirname(fileURLToPath(import.meta.url)), 'package.json');
  for (const file of [path.join(widgetDir, '..', 'package.json'), path.join(widgetDir, 'package.json'), own]) {
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (pkg.name === 'docent-widget' && pkg.docent?.indexFormats) return { ...pkg.docent.indexFormats, version: pkg.version };
    } catch {
      // not there: try the next
    }
  }
  return null;
}

/**
 * Throws when the index file is not a docent index, or its format version is one the widget
 * cannot read (a docent CLI newer or older than the widget).
 */
export function checkIndexFormat(indexFile, widgetDir) {
  const fd = fs.openSync(indexFile, 'r');
  const head = Buffer.alloc(12);
  let n;
  try {
    n = fs.readSync(fd, head, 0, 12, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (n < 12 || head.toString('latin1', 0, 8) !== 'DOCENTIX') {
    throw new DocentOptionsError(`${indexFile} is not a docent index: build it with \`docent index\``);
  }
  const version = head.readUInt32LE(8);
  const formats = widgetIndexFormats(widgetDir);
  if (formats?.retired?.includes(version)) {
    // An earlier split layout this widget no longer reads: the CLI that wrote it is older.
    throw new DocentOptionsError(
      `${indexFile} has index format ${version}, an earlier split layout docent-widget ${formats.version} no longer reads: ` +
        'install the docent CLI of the same version as docent-widget and rebuild the index',
    );
  }
  if (formats && (version < formats.min || version > formats.max)) {
    throw new DocentOptionsError(
      `${indexFile} has index format ${version} but docent-widget ${formats.version} reads formats ` +
        `${formats.min}-${formats.max}: install the docent CLI and docent-widget of the same version ` +
        '(npm install docent@<v> docent-widget@<v>) and rebuild',
    );
  }
}

/**
 * Copies the widget assets and the index into `<outDir>/<path>/`: first into a temp folder next
 * to it, then renamed into place, so a failure leaves no half-written folder. Returns the copied
 * names.
 */
export async function copyAssets(opts, outDir, cwd = process.cwd(), indexFile = opts.index) {
  const map = assetMap(opts, cwd, indexFile);
  const dest = path.join(outDir, opts.path);
  const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.tmp-${process.pid}`);
  await fsp.rm(tmp, { recursive: true, force: true });
  await fsp.mkdir(tmp, { recursive: true });
  const copied = [];
  try {
    for (const [name, src] of map) {
      await fsp.copyFile(src, path.join(tmp, name));
      copied.push(name);
    }
    await fsp.rm(dest, { recursive: true, force: true });
    await fsp.rename(tmp, dest);
  } catch (err) {
    await fsp.rm(tmp, { recursive: true, force: true });
    throw err;
  }
  return copied;
}

/** A failed index build: the message carries docent's own error and the command. */
export class DocentBuildError extends Error {
  constructor(message) {
    super(`docent: ${message}`);
    this.name = 'DocentBuildError';
  }
}

/**
 * Runs `docent index` through `run` (the docent npm package's `run`, or a test double) and
 * returns docent's one-line summary. The index is written to `out` (docent writes a temp file
 * and renames it, so a failed build leaves the previous index in place, and unchanged chunks
 * keep their vectors on the next build).
 * @param {(args: string[]) => Promise<{code: number, stdout: string, stderr: string}>} run
 * `namespaces` ({ namespace, dirs }) puts the pages in namespaces: `dirs` maps a folder of the
 * site to its namespace (docs versions, locales), `namespace` is for the other pages.
 * @param {{sources: string[], out: string, baseUrl?: string, cleanUrls?: boolean,
 *   flavor?: string, exclude?: string[], checkAnchors?: boolean,
 *   namespaces?: {namespace?: string, dirs: Record<string, string>},
 *   build: {embed: string, exclude: string[], indexArgs: string[], checkAnchors: boolean}}} job
 */
export async function buildIndex(run, job) {
  await fsp.mkdir(path.dirname(job.out), { recursive: true });
  const args = ['index', ...siteArgs(job), '--out', job.out, '--embed', job.build.embed, '--quiet'];
  if (job.checkAnchors && job.build.checkAnchors) args.push('--check-anchors');
  args.push(...job.build.indexArgs);
  return summaryOf(await runDocent(run, args));
}

/**
 * Runs `docent llms` over the same pages as {@link buildIndex} and writes llms.txt, llms-full.txt and
 * a `.md` per page into `outDir` (the built site), unless the `llms` option is false (then
 * resolves with null). Same `run` and `job` as {@link buildIndex}.
 * @param {(args: string[]) => Promise<{code: number, stdout: string, stderr: string}>} run
 * @param {object} job
 * @param {string} outDir
 */
export async function buildLlms(run, job, outDir) {
  if (!job.build.llms) return null;
  // No namespaces: a built page's URL is unique already, and each .md file belongs at that URL
  // plus `.md` (docent llms would put namespaced pages under `<namespace>/`).
  const args = ['llms', ...siteArgs({ ...job, namespaces: undefined }), '--out', outDir];
  return summaryOf(await runDocent(run, args));
}

/**
 * The quality gate: runs `docent eval` with the `eval` option's questions over `indexFile` and
 * resolves with its report, or rejects with a {@link DocentBuildError} that names the questions
 * that failed (the build stops before anything is copied). Resolves with null without `eval`.
 * @param {(args: string[]) => Promise<{code: number, stdout: string, stderr: string}>} run
 * @param {{eval: object|null, build: {indexArgs: string[]}}} opts normalised options
 * @param {string} indexFile
 */
export async function runEval(run, opts, indexFile) {
  const gate = opts.eval;
  if (!gate) return null;
  if (!fs.existsSync(gate.questions)) {
    throw new DocentOptionsError(
      `eval.questions: no file at ${gate.questions}; write one JSON object per line, ` +
        '{"question": "...", "gold": ["/guide/install#linux"]} (see docent\'s docs/eval.md)',
    );
  }
  const args = ['eval', indexFile, gate.questions, '--min-recall', String(gate.minRecall)];
  if (gate.maxAnsweredUnanswerable !== undefined) {
    args.push('--max-answered-unanswerable', String(gate.maxAnsweredUnanswerable));
  }
  // the questions are embedded the way the index was: the same embedding service and key
  const ia = opts.build?.indexArgs ?? [];
  for (const flag of ['--embed-base-url', '--api-key-env']) {
    const i = ia.indexOf(flag);
    if (i >= 0 && i + 1 < ia.length) args.push(flag, ia[i + 1]);
  }
  return (await runDocent(run, args)).stdout.trim();
}

/** The `docent index` / `docent llms` options that say which pages a job reads and their URLs. */
function siteArgs(job) {
  const args = [...job.sources];
  if (job.baseUrl) args.push('--base-url', job.baseUrl);
  if (job.cleanUrls) args.push('--clean-urls');
  if (job.flavor) args.push('--flavor', job.flavor);
  for (const glob of [...(job.exclude ?? []), ...job.build.exclude]) args.push('--exclude', glob);
  if (job.namespaces?.namespace) args.push('--namespace', job.namespaces.namespace);
  for (const [dir, ns] of Object.entries(job.namespaces?.dirs ?? {})) args.push('--namespace-dir', `${dir}=${ns}`);
  for (const [src, url] of Object.entries(job.sourceUrls ?? {})) args.push('--source-url', `${src}=${url}`);
  return args;
}

/** Runs docent; a failure is a {@link DocentBuildError} with docent's message and the command. */
async function runDocent(run, args) {
  const r = await run(args);
  if (r.code !== 0) {
    throw new DocentBuildError(
      `docent ${args[0]} failed (exit ${r.code}):\n${(r.stderr || r.stdout).trim()}\n` +
        `(command: docent ${args.join(' ')})`,
    );
  }
  return r;
}

/** docent's output lines as one line. */
function summaryOf(r) {
  return r.stdout.trim().split('\n').map((l) => l.trim()).join('; ');
}

/**
 * Keeps a dev server's index fresh: `schedule()` after a page changed rebuilds it (debounced,
 * one build at a time, the next one queued), `ready()` resolves with the index file once the
 * latest scheduled build is done (rejects with its error while the last build failed).
 */
export class DevIndexer {
  /**
   * @param {() => Promise<string>} build runs one build, resolves with a summary line
   * @param {string} file the index file the build writes
   * @param {{delayMs?: number, log?: (line: string) => void}} [o]
   */
  constructor(build, file, o = {}) {
    this.build = build;
    this.file = file;
    this.delayMs = o.delayMs ?? 200;
    this.log = o.log ?? ((line) => console.log(line));
    this.current = null;
    this.timer = null;
    this.dirty = false;
    this.waiters = [];
    this.error = null;
  }

  /** Rebuild soon (after `delayMs` without further calls). */
  schedule() {
    this.dirty = true;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), this.delayMs);
    this.timer.unref?.();
  }

  /** Rebuild now (when no build is running; else right after it). */
  kick() {
    this.timer = null;
    if (this.current) return;
    this.dirty = false;
    this.current = this.build()
      .then((summary) => {
        this.error = null;
        this.log(`docent: dev index rebuilt: ${summary}`);
      })
      .catch((err) => {
        this.error = err;
        this.log(`${err.message}`);
      })
      .finally(() => {
        this.current = null;
        if (this.dirty && !this.timer) this.kick();
        if (!this.dirty && !this.current) this.settle();
      });
  }

  settle() {
    const waiters = this.waiters.splice(0);
    for (const w of waiters) (this.error ? w.reject(this.error) : w.resolve(this.file));
  }

  /** Resolves with the index file once no build is pending. */
  ready() {
    if (!this.current && !this.dirty) {
      return this.error ? Promise.reject(this.error) : Promise.resolve(this.file);
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }
}
