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
 * other file in the widget folder (the lazily loaded tokenizer module, the ranks, ...) is
 * published too, except pages and a stale index. */
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
};

const KNOWN_OPTIONS = new Set(['index', 'widgetDir', 'path', ...Object.keys(ATTRIBUTES)]);
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
  if (typeof options.index !== 'string' || options.index.trim() === '') {
    throw new DocentOptionsError(
      'the "index" option is required: the path of the file written by ' +
        '`docent index docs --out <file>`',
    );
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
    index: path.resolve(cwd, options.index),
    widgetDir: options.widgetDir ? path.resolve(cwd, options.widgetDir) : null,
    path: publicPath,
    attrs,
  };
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
      '.json': 'application/json',
    }[ext] || 'application/octet-stream'
  );
}

/**
 * The files to publish: name under the public folder → absolute source path. Throws a clear
 * error when the index or a required widget file is missing.
 */
export function assetMap(opts, cwd = process.cwd()) {
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
  if (!fs.existsSync(opts.index)) {
    throw new DocentOptionsError(
      `index file ${opts.index} not found: run \`docent index <docs folder> --out ${opts.index}\` first`,
    );
  }
  map.set('index.bin', opts.index);
  return map;
}

/**
 * Copies the widget assets and the index into `<outDir>/<path>/`. Returns the copied names.
 */
export async function copyAssets(opts, outDir, cwd = process.cwd()) {
  const map = assetMap(opts, cwd);
  const dest = path.join(outDir, opts.path);
  await fsp.mkdir(dest, { recursive: true });
  const copied = [];
  for (const [name, src] of map) {
    await fsp.copyFile(src, path.join(dest, name));
    copied.push(name);
  }
  return copied;
}
