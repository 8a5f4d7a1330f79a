// docusaurus-plugin-docent: adds the docent chat widget to a Docusaurus site.
//
//   // docusaurus.config.js
//   plugins: [
//     ['docusaurus-plugin-docent', {
//       embed: 'none',                      // or 'local' / 'openai': vectors for hybrid search
//       proxy: 'https://ask.example.com',   // optional: without it answers are extractive
//       title: 'Ask the docs',
//     }],
//   ],
//
// What it does:
//   - injectHtmlTags: one <script type="module" src="<baseUrl>docent/docent.js" ...> at the end
//     of <body> on every page
//   - postBuild (`docusaurus build`, once per locale): `docent index` over the HTML just built
//     for that locale (the anchors are Docusaurus's own), then the widget files and the index
//     into <outDir>/docent/
//   - `docusaurus start`: indexes the docs' Markdown (again when a doc changes) and serves the
//     widget files and the index under <baseUrl>docent/
//   - with the `index` option it publishes that prebuilt index instead of building one
import fs from 'node:fs';
import path from 'node:path';
import {
  assetMap,
  buildIndex,
  buildLlms,
  copyAssets,
  normalizeOptions,
  runEval,
  scriptAttributes,
  widgetAssetMap,
  joinBase,
  DocentOptionsError,
  REQUIRED_WIDGET_FILES,
} from 'docent-widget/integration';

export { normalizeOptions, scriptAttributes, copyAssets, DocentOptionsError, REQUIRED_WIDGET_FILES };

/**
 * The plugin. `context` is Docusaurus' LoadContext ({ siteDir, baseUrl, outDir, ... }).
 * @param {{siteDir?: string, baseUrl?: string}} context
 * @param {object} options plugin options (see README)
 */
export default function docentPlugin(context = {}, options = {}) {
  const siteDir = context.siteDir ?? process.cwd();
  // Docusaurus gives every plugin instance an `id` (see validateOptions): not a docent option
  const { id: _id, ...docentOptions } = options;
  const opts = normalizeOptions(docentOptions, siteDir);
  const baseUrl = context.baseUrl ?? '/';
  const dev = opts.index ? null : devIndexJob(opts, context);
  return {
    name: 'docusaurus-plugin-docent',

    async allContentLoaded({ allContent }) {
      // `docusaurus start` runs this once every plugin has loaded its content, and again after
      // the docs plugin reloads an edited doc: re-index (unchanged chunks keep their vectors),
      // each docs version in its own namespace. A failed build is reported, the dev server
      // keeps running.
      if (!dev || process.env.NODE_ENV === 'production') return;
      try {
        const { run } = await import('docent');
        const job = devVersionsJob(dev, docsVersions(allContent), context);
        console.log(`docent: dev index: ${await buildIndex(run, job)}`);
      } catch (err) {
        console.warn(err.message);
      }
    },

    injectHtmlTags() {
      return {
        postBodyTags: [{ tagName: 'script', attributes: scriptAttributes(opts, baseUrl) }],
      };
    },

    configureWebpack(_config, isServer) {
      if (isServer || process.env.NODE_ENV === 'production') return {};
      // `docusaurus start`: serve the assets from where they are, without copying
      let dirs;
      try {
        dirs = devStaticDirs(opts, siteDir, baseUrl, dev?.out);
      } catch (err) {
        console.warn(`${err.message} (the widget will not load in the dev server)`);
        return {};
      }
      return { devServer: { static: dirs } };
    },

    async postBuild(props) {
      const started = Date.now();
      const { outDir } = props;
      if (!outDir) {
        throw new DocentOptionsError('postBuild got no outDir from Docusaurus; cannot copy the widget');
      }
      const i18n = props.i18n ?? context.i18n;
      let indexFile = opts.index;
      if (!indexFile) {
        const locale = i18n?.currentLocale ?? 'default';
        indexFile = path.join(generatedDir(context), 'docent', 'build', locale, 'index.bin');
        // the default locale's build folder holds the other locales' folders: not this index's
        const others = (i18n?.locales ?? []).filter((l) => l !== locale).map((l) => `${l}/**`);
        const { run } = await import('docent');
        const job = {
          sources: [outDir],
          out: indexFile,
          baseUrl: props.baseUrl ?? baseUrl,
          cleanUrls: true,
          exclude: ['404.html', `${opts.path}/**`, ...others],
          checkAnchors: true,
          namespaces: versionNamespaces(props.plugins, props.baseUrl ?? baseUrl),
          build: opts.build,
        };
        const summary = await buildIndex(run, job);
        console.log(`docent: indexed the built site (${locale}): ${summary}`);
        const llms = await buildLlms(run, job, outDir);
        if (llms) console.log(`docent: wrote llms.txt, llms-full.txt and a .md per page: ${llms}`);
      }
      // The golden questions are about the default locale's pages: other locales' indexes (each
      // locale is its own build) are not gated.
      if (opts.eval && (!i18n || i18n.currentLocale === i18n.defaultLocale)) {
        const { run } = await import('docent');
        console.log(`docent: quality gate passed (eval.questions):\n${await runEval(run, opts, indexFile)}`);
      }
      const copied = await copyAssets(opts, outDir, siteDir, indexFile);
      const secs = ((Date.now() - started) / 1000).toFixed(2);
      console.log(`docent: copied ${copied.length} files to ${path.join(outDir, opts.path)} (docent's build step: ${secs} s)`);
    },
  };
}

/**
 * webpack-dev-server `static` entries for `docusaurus start`: the widget folder and the index's
 * folder, both published under `<baseUrl><path>/`. Exported for tests.
 */
export function devStaticDirs(opts, siteDir, baseUrl = '/', devIndex = undefined) {
  const index = devIndex ?? opts.index;
  if (devIndex) fs.mkdirSync(path.dirname(devIndex), { recursive: true });
  const map = devIndex ? widgetAssetMap(opts, siteDir) : assetMap(opts, siteDir);
  const publicPath = `${joinBase(baseUrl, opts.path)}/`;
  const dirs = new Set([...map.values()].map((f) => path.dirname(f)));
  dirs.add(path.dirname(index));
  if (path.basename(index) !== 'index.bin') {
    throw new DocentOptionsError(
      `for \`docusaurus start\` the index file must be named index.bin (got ${index})`,
    );
  }
  return [...dirs].map((directory) => ({ directory, publicPath, watch: false }));
}

/**
 * Each docs version is a namespace named by its label (`2.x`, `1.0`): its route folder relative
 * to the locale's baseUrl (`docs`, `docs/1.0`) → label, from the docs plugins' loaded versions.
 * None with a single version.
 * @param {Array<{name: string, content?: any}>} [plugins] postBuild's `plugins`
 * @returns {{dirs: Record<string, string>} | undefined}
 */
export function versionNamespaces(plugins = [], baseUrl = '/') {
  // Only a versioned docs instance names namespaces: an unversioned one (a second `community`
  // instance beside the docs) has one version labelled `Next` like the docs' unreleased one,
  // and its pages belong to no version.
  const versions = plugins
    .filter((p) => p.name === 'docusaurus-plugin-content-docs')
    .map((p) => p.content?.loadedVersions ?? [])
    .filter((vs) => vs.length >= 2)
    .flat();
  if (versions.length < 2) return undefined;
  const base = joinBase(baseUrl, '');
  const dirs = {};
  for (const v of versions) {
    const dir = String(v.path ?? '').replace(base, '').replace(/^\/+|\/+$/g, '');
    if (dir) dirs[dir] = String(v.label ?? v.versionName);
  }
  return { dirs };
}

/**
 * The docs plugins' loaded versions, from `allContentLoaded`'s `allContent`, each marked
 * `versioned` when its plugin instance has two or more (only those get a namespace).
 */
export function docsVersions(allContent = {}) {
  return Object.values(allContent['docusaurus-plugin-content-docs'] ?? {}).flatMap((content) => {
    const versions = content?.loadedVersions ?? [];
    return versions.map((v) => ({ ...v, versioned: versions.length >= 2 }));
  });
}

/**
 * The dev server's index job over the docs versions Docusaurus loaded: each version's Markdown
 * (translated for the locale being served when it has been translated) published at the
 * version's route (`/docs`, `/docs/1.0`), and, with two or more versions, in a namespace named
 * by its label, as in the built site (a version of an unversioned instance, `versioned: false`,
 * in none). Without loaded versions, `job` as it is. Exported for tests.
 * @param {object} job the job from the plugin's options (out, build, flavor)
 * @param {Array<{label?: string, versionName?: string, path?: string, contentPath?: string,
 *   contentPathLocalized?: string}>} versions
 * @param {{i18n?: {currentLocale?: string, defaultLocale?: string}}} context
 */
export function devVersionsJob(job, versions, context = {}) {
  const usable = versions.filter((v) => v.contentPath && v.path);
  if (usable.length === 0) return job;
  const i18n = context.i18n;
  const translated = i18n?.currentLocale && i18n.currentLocale !== i18n.defaultLocale;
  const dirOf = (v) => (translated && v.contentPathLocalized && fs.existsSync(v.contentPathLocalized)
    ? v.contentPathLocalized
    : v.contentPath);
  const routeOf = (v) => String(v.path).replace(/\/+$/, '') || '/';
  if (usable.length === 1) {
    return { ...job, sources: [dirOf(usable[0])], baseUrl: routeOf(usable[0]) };
  }
  const sourceUrls = {};
  const sources = usable.map((v) => {
    sourceUrls[dirOf(v)] = routeOf(v);
    // an unversioned instance's pages (`versioned: false`, see docsVersions) get no namespace
    return v.versioned === false ? dirOf(v) : `${String(v.label ?? v.versionName)}=${dirOf(v)}`;
  });
  return { ...job, sources, baseUrl: undefined, sourceUrls };
}

/** Where Docusaurus keeps generated files (`.docusaurus`). */
function generatedDir(context) {
  return context.generatedFilesDir ?? path.join(context.siteDir ?? process.cwd(), '.docusaurus');
}

/**
 * The dev server's index job before Docusaurus has loaded the docs versions (`devVersionsJob`
 * then replaces its pages): the docs of the locale being served (the translated docs of
 * i18n/<locale>/ when they exist, else docs/), Docusaurus anchor rules, URLs under
 * `<baseUrl>docs/`.
 */
function devIndexJob(opts, context) {
  const siteDir = context.siteDir ?? process.cwd();
  const i18n = context.i18n;
  const locale = i18n?.currentLocale;
  const translated = path.join(siteDir, 'i18n', locale ?? '', 'docusaurus-plugin-content-docs', 'current');
  const docs = locale && locale !== i18n?.defaultLocale && fs.existsSync(translated)
    ? translated
    : path.join(siteDir, 'docs');
  return {
    sources: [docs],
    out: path.join(generatedDir(context), 'docent', 'dev', 'index.bin'),
    baseUrl: `${joinBase(context.baseUrl ?? '/', 'docs')}`,
    cleanUrls: true,
    flavor: 'docusaurus',
    build: opts.build,
  };
}

/** Docusaurus calls this to check options before the plugin is created. */
export function validateOptions({ options }) {
  const { id: _id, ...docentOptions } = options;
  normalizeOptions(docentOptions);
  // every Docusaurus plugin instance has an id (its generated files are kept under it)
  return { ...options, id: options.id ?? 'default' };
}
