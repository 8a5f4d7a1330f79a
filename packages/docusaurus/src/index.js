// docusaurus-plugin-docent: adds the docent chat widget to a Docusaurus site.
//
//   // docusaurus.config.js
//   plugins: [
//     ['docusaurus-plugin-docent', {
//       index: 'docent/index.bin',          // `docent index docs --out docent/index.bin`
//       widgetDir: '../dist/widget',        // or npm install docent-widget
//       proxy: 'https://ask.example.com',   // optional: without it answers are extractive
//       title: 'Ask the docs',
//     }],
//   ],
//
// What it does:
//   - injectHtmlTags: one <script type="module" src="<baseUrl>docent/docent.js" ...> at the end
//     of <body> on every page
//   - postBuild (`docusaurus build`): copies the widget files and the index into <outDir>/docent/
//   - `docusaurus start`: the dev server serves the same files under <baseUrl>docent/
import path from 'node:path';
import {
  assetMap,
  copyAssets,
  normalizeOptions,
  scriptAttributes,
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
  const opts = normalizeOptions(options, siteDir);
  const baseUrl = context.baseUrl ?? '/';
  return {
    name: 'docusaurus-plugin-docent',

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
        dirs = devStaticDirs(opts, siteDir, baseUrl);
      } catch (err) {
        console.warn(`${err.message} (the widget will not load in the dev server)`);
        return {};
      }
      return { devServer: { static: dirs } };
    },

    async postBuild({ outDir }) {
      if (!outDir) {
        throw new DocentOptionsError('postBuild got no outDir from Docusaurus; cannot copy the widget');
      }
      const copied = await copyAssets(opts, outDir, siteDir);
      console.log(`docent: copied ${copied.length} files to ${path.join(outDir, opts.path)}`);
    },
  };
}

/**
 * webpack-dev-server `static` entries for `docusaurus start`: the widget folder and the index's
 * folder, both published under `<baseUrl><path>/`. Exported for tests.
 */
export function devStaticDirs(opts, siteDir, baseUrl = '/') {
  const map = assetMap(opts, siteDir);
  const publicPath = `${joinBase(baseUrl, opts.path)}/`;
  const dirs = new Set([...map.values()].map((f) => path.dirname(f)));
  if (path.basename(opts.index) !== 'index.bin') {
    throw new DocentOptionsError(
      `for \`docusaurus start\` the index file must be named index.bin (got ${opts.index})`,
    );
  }
  return [...dirs].map((directory) => ({ directory, publicPath, watch: false }));
}

/** Docusaurus calls this to check options before the plugin is created. */
export function validateOptions({ options }) {
  normalizeOptions(options);
  return options;
}
