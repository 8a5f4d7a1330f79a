// docent-vitepress: adds the docent chat widget to a VitePress site.
//
//   // .vitepress/config.mjs
//   import { defineConfig } from 'vitepress'
//   import { withDocent } from 'docent-vitepress'
//   export default withDocent(defineConfig({ title: 'My docs' }), {
//     embed: 'none',                      // or 'local' / 'openai': vectors for hybrid search
//     proxy: 'https://ask.example.com',   // optional: without it answers are extractive
//     title: 'Ask the docs',
//   })
//
// What it does:
//   - head: one <script type="module" src="<base>docent/docent.js" data-index=...> on every page
//   - build (`vitepress build`, the buildEnd hook): `docent index` over the HTML just built (the
//     anchors are VitePress's own), then the widget files and the index into <outDir>/docent/
//   - dev server (`vitepress dev`): indexes the Markdown sources, re-indexes when a page changes,
//     and serves the widget files and the index under <base>docent/
//   - with the `index` option it publishes that prebuilt index instead of building one
import fs from 'node:fs';
import path from 'node:path';
import {
  assetMap,
  buildIndex,
  buildLlms,
  runEval,
  contentType,
  copyAssets,
  DevIndexer,
  normalizeOptions,
  scriptAttributes,
  scriptTagHtml,
  joinBase,
  DocentOptionsError,
  REQUIRED_WIDGET_FILES,
  isShardName,
  isWidgetAsset,
  widgetAssetMap,
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
      let indexFile;
      if (!opts.index) {
        const dev = devIndexer(opts, server.config.vitepress, server.config.root, base);
        dev.indexer.kick();
        server.watcher.on('all', (_event, file) => {
          if (/\.md$/.test(file) && file.startsWith(dev.srcDir)) dev.indexer.schedule();
        });
        indexFile = () => dev.indexer.ready();
      }
      server.middlewares.use(docentMiddleware(opts, prefix, indexFile));
    },
  };
}

/** The dev server's indexer: the Markdown sources (VitePress anchor rules) into the cache. */
function devIndexer(opts, siteConfig, root, base) {
  const srcDir = siteConfig?.srcDir ?? root;
  const cacheDir = siteConfig?.cacheDir ?? path.join(srcDir, '.vitepress', 'cache');
  const out = path.join(cacheDir, 'docent', 'dev', 'index.bin');
  const build = async () => {
    const { run } = await import('docent');
    return buildIndex(run, {
      sources: [srcDir],
      out,
      baseUrl: siteConfig?.site?.base ?? base,
      cleanUrls: Boolean(siteConfig?.cleanUrls),
      flavor: 'vitepress',
      namespaces: siteNamespaces(siteConfig?.site, opts.build.versions, srcDir),
      build: opts.build,
    });
  };
  return { srcDir, indexer: new DevIndexer(build, out) };
}

/**
 * A connect/express-style middleware that serves `<prefix><file>` from the widget folder and
 * the index; anything else goes to `next()`. `indexFile` (optional) resolves with the index to
 * serve, e.g. once the dev server's re-indexing is done; default: the `index` option. Exported
 * for tests and custom servers.
 */
export function docentMiddleware(opts, prefix, indexFile) {
  return async function docentAssets(req, res, next) {
    const url = (req.url || '').split('?')[0];
    if (!url.startsWith(prefix)) return next();
    const name = decodeURIComponent(url.slice(prefix.length));
    if (name !== 'index.bin' && !isWidgetAsset(name)) return next();
    // The index and, for a split index, its shards come from the index's folder.
    const ofIndex = name === 'index.bin' || isShardName(name);
    let map;
    try {
      const index = indexFile && ofIndex ? await indexFile() : opts.index;
      map = ofIndex ? assetMap(opts, undefined, index) : widgetAssetMap(opts);
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
 * `vite.plugins`, and chains `buildEnd` to index the built pages and copy the widget and the
 * index into the build output. An existing `head`, `vite.plugins` and `buildEnd` are kept.
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
      const started = Date.now();
      const outDir = siteConfig?.outDir;
      if (!outDir) {
        throw new DocentOptionsError('buildEnd got no outDir from VitePress; cannot copy the widget');
      }
      let indexFile = opts.index;
      if (!indexFile) {
        indexFile = path.join(siteConfig.cacheDir ?? path.join(outDir, '..', 'cache'), 'docent', 'index.bin');
        const { run } = await import('docent');
        const job = {
          sources: [outDir],
          out: indexFile,
          baseUrl: siteConfig.site?.base ?? base,
          cleanUrls: Boolean(siteConfig.cleanUrls),
          exclude: ['404.html', `${opts.path}/**`],
          checkAnchors: true,
          namespaces: siteNamespaces(siteConfig.site, opts.build.versions, outDir),
          build: opts.build,
        };
        const summary = await buildIndex(run, job);
        console.log(`docent: indexed the built site: ${summary}`);
        const llms = await buildLlms(run, job, outDir);
        if (llms) console.log(`docent: wrote llms.txt, llms-full.txt and a .md per page: ${llms}`);
      }
      if (opts.eval) {
        const { run } = await import('docent');
        console.log(`docent: quality gate passed (eval.questions):\n${await runEval(run, opts, indexFile)}`);
      }
      const copied = await copyAssets(opts, outDir, root, indexFile);
      console.log(
        `docent: copied ${copied.length} files to ${path.join(outDir, opts.path)} ` +
          `(docent's build step: ${secondsSince(started)} s)`,
      );
    },
  };
}

/** Seconds since `t0` (ms), two decimals. */
function secondsSince(t0) {
  return ((Date.now() - t0) / 1000).toFixed(2);
}

/**
 * The site's namespaces: each locale but the root (`fr/`), each version folder (`v1/`) and each
 * version inside a locale (`fr/v1/`) is its own; the other pages are the root locale's `lang`
 * (`en-US`) when there are locales, else `latest`. None when the site has neither. `dir` is the
 * folder whose layout is checked for the versions inside locales (sources or output).
 * @returns {{namespace: string, dirs: Record<string, string>} | undefined}
 */
export function siteNamespaces(site = {}, versions = [], dir = '.') {
  const locales = Object.keys(site.locales ?? {}).filter((k) => k !== 'root');
  if (locales.length === 0 && versions.length === 0) return undefined;
  const dirs = {};
  for (const l of locales) dirs[l] = l;
  for (const v of versions) {
    dirs[v] = v;
    for (const l of locales) {
      if (fs.existsSync(path.join(dir, l, v))) dirs[`${l}/${v}`] = `${l}/${v}`;
    }
  }
  const rootLang = site.locales?.root?.lang ?? site.lang;
  return { namespace: locales.length && rootLang ? rootLang : 'latest', dirs };
}

/** The tag as HTML, for sites that write their own layout: `<script type="module" ...>`. */
export function docentScriptTag(options, base = '/') {
  return scriptTagHtml(scriptAttributes(normalizeOptions(options), base));
}

export default withDocent;
