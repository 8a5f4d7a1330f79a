// docent-vitepress: adds the docent chat widget to a VitePress site.
//
//   // .vitepress/config.mjs
//   import { defineConfig } from 'vitepress'
//   import { withDocent } from 'docent-vitepress'
//   export default withDocent(defineConfig({ title: 'My docs' }), {
//     index: 'docent/index.bin',          // written by `docent index docs --out docent/index.bin`
//     widgetDir: '../dist/widget',        // or npm install docent-widget
//     proxy: 'https://ask.example.com',   // optional: without it answers are extractive
//     title: 'Ask the docs',
//   })
//
// What it does:
//   - head: one <script type="module" src="<base>docent/docent.js" data-index=...> on every page
//   - dev server (`vitepress dev`): serves the widget files and the index under <base>docent/
//   - build (`vitepress build`): copies them into <outDir>/docent/ (the buildEnd hook)
import fs from 'node:fs';
import path from 'node:path';
import {
  assetMap,
  contentType,
  copyAssets,
  normalizeOptions,
  scriptAttributes,
  scriptTagHtml,
  joinBase,
  DocentOptionsError,
  REQUIRED_WIDGET_FILES,
  isWidgetAsset,
} from 'docent-widget/integration';

export { normalizeOptions, scriptAttributes, scriptTagHtml, copyAssets, DocentOptionsError, REQUIRED_WIDGET_FILES };

/**
 * The VitePress `head` entry for the widget: `['script', attributes]`.
 * @param {object} options plugin options (see README)
 * @param {string} [base] the site's `base`, e.g. "/" or "/docs/"
 */
export function docentHead(options, base = '/') {
  const opts = normalizeOptions(options);
  return ['script', scriptAttributes(opts, base)];
}

/**
 * A Vite plugin for `vitepress dev`: serves the widget files and the index under
 * `<base><path>/` so the script tag works before anything is built.
 */
export function docentVitePlugin(options, base = '/') {
  return vitePlugin(normalizeOptions(options), base);
}

function vitePlugin(opts, base) {
  const prefix = `${joinBase(base, opts.path)}/`;
  return {
    name: 'docent-assets',
    apply: 'serve',
    configureServer(server) {
      server.middlewares.use(docentMiddleware(opts, prefix));
    },
  };
}

/**
 * A connect/express-style middleware that serves `<prefix><file>` from the widget folder and
 * the index; anything else goes to `next()`. Exported for tests and custom servers.
 */
export function docentMiddleware(opts, prefix) {
  return function docentAssets(req, res, next) {
    const url = (req.url || '').split('?')[0];
    if (!url.startsWith(prefix)) return next();
    const name = decodeURIComponent(url.slice(prefix.length));
    if (name !== 'index.bin' && !isWidgetAsset(name)) return next();
    let map;
    try {
      map = assetMap(opts);
    } catch (err) {
      res.statusCode = 404;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end(String(err.message));
      return undefined;
    }
    const file = map.get(name);
    if (!file) return next();
    res.statusCode = 200;
    res.setHeader('Content-Type', contentType(name));
    res.setHeader('Cache-Control', 'no-cache');
    fs.createReadStream(file).pipe(res);
    return undefined;
  };
}

/**
 * Wraps a VitePress config: adds the script tag to `head`, the dev-server plugin to
 * `vite.plugins`, and chains `buildEnd` to copy the assets into the build output. An existing
 * `head`, `vite.plugins` and `buildEnd` are kept.
 * @param {object} config a VitePress config (what `defineConfig` returns)
 * @param {object} options plugin options (see README)
 */
export function withDocent(config = {}, options) {
  const root = config.vite?.root ?? process.cwd();
  const opts = normalizeOptions(options, root);
  const base = config.base ?? '/';
  const previousBuildEnd = config.buildEnd;
  return {
    ...config,
    head: [...(config.head ?? []), ['script', scriptAttributes(opts, base)]],
    vite: {
      ...(config.vite ?? {}),
      plugins: [...(config.vite?.plugins ?? []), vitePlugin(opts, base)],
    },
    async buildEnd(siteConfig) {
      if (previousBuildEnd) await previousBuildEnd(siteConfig);
      const outDir = siteConfig?.outDir;
      if (!outDir) {
        throw new DocentOptionsError('buildEnd got no outDir from VitePress; cannot copy the widget');
      }
      const copied = await copyAssets(opts, outDir, root);
      console.log(`docent: copied ${copied.length} files to ${path.join(outDir, opts.path)}`);
    },
  };
}

/** The tag as HTML, for sites that write their own layout: `<script type="module" ...>`. */
export function docentScriptTag(options, base = '/') {
  return scriptTagHtml(scriptAttributes(normalizeOptions(options), base));
}

export default withDocent;
