import { test } from 'node:test';
import { tempDir } from '../../test-support/temp-dir.js';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import docentPlugin, { devStaticDirs, normalizeOptions, validateOptions } from '../src/index.js';


async function fixture() {
  const dir = await tempDir('docent-docusaurus-');
  const widget = path.join(dir, 'widget');
  await fsp.mkdir(widget);
  for (const f of ['docent.js', 'docent-widget.js', 'docent-widget_bg.wasm', 'docent.css', 'cl100k_base.tiktoken',
    'THIRD-PARTY-LICENSES.txt', 'docent-widget.cdx.json']) {
    await fsp.writeFile(path.join(widget, f), `/* ${f} */`);
  }
  await fsp.mkdir(path.join(dir, 'docent'));
  const index = path.join(dir, 'docent', 'index.bin');
  // a docent index header: magic, then format version 3 (u32 LE); the body is not read
  await fsp.writeFile(index, Buffer.concat([Buffer.from('DOCENTIX'), Buffer.from([3, 0, 0, 0]), Buffer.from('test-index')]));
  return { dir, widget, index };
}

test('the plugin injects one module script at the end of the body with the data attributes', () => {
  const plugin = docentPlugin(
    { siteDir: '/site', baseUrl: '/' },
    { index: 'docent/index.bin', widgetDir: 'w', proxy: '/api', title: 'Ask', starters: 'a|b' },
  );
  assert.equal(plugin.name, 'docusaurus-plugin-docent');
  const tags = plugin.injectHtmlTags();
  assert.deepEqual(Object.keys(tags), ['postBodyTags']);
  assert.deepEqual(tags.postBodyTags, [
    {
      tagName: 'script',
      attributes: {
        type: 'module',
        src: '/docent/docent.js',
        'data-index': '/docent/index.bin',
        'data-proxy': '/api',
        'data-title': 'Ask',
        'data-starters': 'a|b',
      },
    },
  ]);
});

test('the baseUrl of the site prefixes the script and index urls', () => {
  const plugin = docentPlugin({ siteDir: '/site', baseUrl: '/project/' }, { index: 'i.bin', widgetDir: 'w' });
  const [tag] = plugin.injectHtmlTags().postBodyTags;
  assert.equal(tag.attributes.src, '/project/docent/docent.js');
  assert.equal(tag.attributes['data-index'], '/project/docent/index.bin');
});

test('relative paths are resolved against the site folder', () => {
  const opts = normalizeOptions({ index: 'docent/index.bin', widgetDir: '../dist/widget' }, '/site/website');
  assert.equal(opts.index, path.resolve('/site/website/docent/index.bin'));
  assert.equal(opts.widgetDir, path.resolve('/site/dist/widget'));
});

test('postBuild copies the widget, its license notices and the index into the build output', async () => {
  const { dir, widget } = await fixture();
  const plugin = docentPlugin({ siteDir: dir, baseUrl: '/' }, { index: 'docent/index.bin', widgetDir: widget });
  const outDir = path.join(dir, 'build');
  await plugin.postBuild({ outDir });
  const files = (await fsp.readdir(path.join(outDir, 'docent'))).sort();
  assert.deepEqual(files, [
    'THIRD-PARTY-LICENSES.txt',
    'cl100k_base.tiktoken',
    'docent-widget.cdx.json',
    'docent-widget.js',
    'docent-widget_bg.wasm',
    'docent.css',
    'docent.js',
    'index.bin',
  ]);
  assert.deepEqual(await fsp.readFile(path.join(outDir, 'docent', 'index.bin')), await fsp.readFile(path.join(dir, 'docent', 'index.bin')));
});

test('postBuild fails clearly when the index is missing', async () => {
  const { dir, widget } = await fixture();
  const plugin = docentPlugin({ siteDir: dir }, { index: 'missing.bin', widgetDir: widget });
  await assert.rejects(plugin.postBuild({ outDir: path.join(dir, 'build') }), /missing\.bin not found: run `docent index/);
});

test('the dev server gets static folders for the widget and the index under the public path', async () => {
  const { dir, widget, index } = await fixture();
  const opts = normalizeOptions({ index, widgetDir: widget });
  const dirs = devStaticDirs(opts, dir, '/docs/');
  assert.deepEqual(
    dirs.map((d) => d.directory).sort(),
    [path.dirname(index), widget].sort(),
  );
  for (const d of dirs) assert.equal(d.publicPath, '/docs/docent/');
});

test('configureWebpack adds nothing for the server bundle or a production build', async () => {
  const { widget, index } = await fixture();
  const plugin = docentPlugin({ siteDir: '/' }, { index, widgetDir: widget });
  assert.deepEqual(plugin.configureWebpack({}, true), {});
  const saved = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    assert.deepEqual(plugin.configureWebpack({}, false), {});
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
});

test('invalid options are rejected by validateOptions with a helpful message', () => {
  assert.equal(validateOptions({ options: {} }).index, undefined, 'without "index" the plugin builds one');
  assert.throws(() => validateOptions({ options: { embed: 'bert' } }), /embed must be one of none, local, openai/);
  assert.throws(() => validateOptions({ options: { index: 'i', colour: 'red' } }), /unknown option "colour"/);
  const ok = { index: 'i', theme: 'auto' };
  assert.deepEqual(validateOptions({ options: ok }), { ...ok, id: 'default' }, 'Docusaurus needs an id');
  assert.equal(validateOptions({ options: { ...ok, id: 'two' } }).id, 'two');
  // the plugin accepts the id Docusaurus passes back
  assert.equal(docentPlugin({ siteDir: '/site' }, { ...ok, id: 'default' }).name, 'docusaurus-plugin-docent');
});

test('both plugins use the one shared integration module from docent-widget', async () => {
  const shared = await import('docent-widget/integration');
  const vitepress = await import('../../vitepress/src/index.js');
  assert.equal(normalizeOptions, shared.normalizeOptions);
  assert.equal(vitepress.normalizeOptions, shared.normalizeOptions);
  assert.equal(vitepress.scriptAttributes, shared.scriptAttributes);
  // Each plugin declares the dependency and bundles it, so the published tarball carries it.
  for (const dir of ['vitepress', 'docusaurus']) {
    const pkg = JSON.parse(await fsp.readFile(new URL(`../../${dir}/package.json`, import.meta.url), 'utf8'));
    assert.equal(pkg.dependencies['docent-widget'], 'file:../widget', dir);
    assert.deepEqual(pkg.bundleDependencies, ['docent-widget'], dir);
  }
  const widget = JSON.parse(await fsp.readFile(new URL('../../widget/package.json', import.meta.url), 'utf8'));
  assert.ok(widget.files.includes('integration.js'));
  assert.equal(widget.exports['./integration'], './integration.js');
});

test('without widgetDir or an installed docent-widget the error says how to get the assets', async () => {
  const shared = await import('docent-widget/integration');
  const dir = await tempDir('docent-nowidget-');
  const opts = normalizeOptions({ index: 'i.bin' }, dir);
  const bundledDist = path.join(path.dirname(new URL(import.meta.resolve('docent-widget/integration')).pathname), 'dist');
  if ((await fsp.stat(path.join(bundledDist, 'docent.js')).catch(() => null)) !== null) {
    assert.equal(shared.resolveWidgetDir(opts, dir), bundledDist, 'the built dist/ of the docent-widget package is used');
  } else {
    assert.throws(() => shared.resolveWidgetDir(opts, dir), /widget assets not found: set the "widgetDir" option/);
  }
});

test('docs versions become namespaces named by their labels, per locale', async () => {
  const { versionNamespaces } = await import('../src/index.js');
  const docs = (paths) => ({
    name: 'docusaurus-plugin-content-docs',
    content: { loadedVersions: paths.map(([path, label]) => ({ path, label })) },
  });
  assert.deepEqual(versionNamespaces([docs([['/docs', '2.x'], ['/docs/1.0', '1.0']])], '/'), {
    dirs: { docs: '2.x', 'docs/1.0': '1.0' },
  });
  assert.deepEqual(versionNamespaces([{ name: 'other' }, docs([['/fr/docs', '2.x'], ['/fr/docs/1.0', '1.0']])], '/fr/'), {
    dirs: { docs: '2.x', 'docs/1.0': '1.0' },
  });
  assert.equal(versionNamespaces([docs([['/docs', 'Next']])], '/'), undefined, 'one version: no namespaces');
  // A second, unversioned instance (`community`) labels its one version `Next` too: no namespace
  // for it, and two unversioned instances make none at all.
  const community = docs([['/community', 'Next']]);
  assert.deepEqual(versionNamespaces([docs([['/docs/next', 'Next'], ['/docs', '3.x']]), community], '/'), {
    dirs: { 'docs/next': 'Next', docs: '3.x' },
  });
  assert.equal(versionNamespaces([docs([['/docs', 'Next']]), community], '/'), undefined);
});

test('the dev index gives an unversioned docs instance no namespace', async () => {
  const { docsVersions, devVersionsJob } = await import('../src/index.js');
  const loaded = (versions) => ({ loadedVersions: versions });
  const allContent = {
    'docusaurus-plugin-content-docs': {
      default: loaded([{ label: 'Next', path: '/docs/next', contentPath: '/s/docs' },
        { label: '3.x', path: '/docs', contentPath: '/s/versioned_docs/version-3.x' }]),
      community: loaded([{ label: 'Next', path: '/community', contentPath: '/s/community' }]),
    },
  };
  const job = devVersionsJob({ out: '/x/index.bin' }, docsVersions(allContent), {});
  assert.deepEqual(job.sources, ['Next=/s/docs', '3.x=/s/versioned_docs/version-3.x', '/s/community']);
  assert.equal(job.sourceUrls['/s/community'], '/community');
  // two unversioned instances: neither is namespaced
  const two = devVersionsJob({ out: '/x/index.bin' }, docsVersions({
    'docusaurus-plugin-content-docs': {
      default: loaded([{ label: 'Next', path: '/docs', contentPath: '/s/docs' }]),
      community: loaded([{ label: 'Next', path: '/community', contentPath: '/s/community' }]),
    },
  }), {});
  assert.deepEqual(two.sources, ['/s/docs', '/s/community']);
});

test('the dev index reads each docs version from its folder, at its route, in its namespace', async () => {
  const { devVersionsJob } = await import('../src/index.js');
  const site = await tempDir('docent-du-dev-');
  const fr = path.join(site, 'i18n/fr/docusaurus-plugin-content-docs/current');
  await fsp.mkdir(fr, { recursive: true });
  const job = { out: '/x/index.bin', sources: ['/site/docs'], baseUrl: '/docs', cleanUrls: true };
  const versions = [
    { label: '2.x', path: '/docs', contentPath: path.join(site, 'docs'), contentPathLocalized: fr },
    { label: '1.0', path: '/docs/1.0/', contentPath: path.join(site, 'versioned_docs/version-1.0'),
      contentPathLocalized: path.join(site, 'i18n/fr/docusaurus-plugin-content-docs/version-1.0') },
  ];
  const en = devVersionsJob(job, versions, { i18n: { currentLocale: 'en', defaultLocale: 'en' } });
  assert.deepEqual(en.sources, [`2.x=${path.join(site, 'docs')}`, `1.0=${path.join(site, 'versioned_docs/version-1.0')}`]);
  assert.equal(en.baseUrl, undefined);
  assert.deepEqual(en.sourceUrls, {
    [path.join(site, 'docs')]: '/docs',
    [path.join(site, 'versioned_docs/version-1.0')]: '/docs/1.0',
  });
  assert.equal(en.out, '/x/index.bin', 'the rest of the job is kept');
  // French: the translated folder where there is one, else the original
  const french = devVersionsJob(job, versions, { i18n: { currentLocale: 'fr', defaultLocale: 'en' } });
  assert.deepEqual(french.sources, [`2.x=${fr}`, `1.0=${path.join(site, 'versioned_docs/version-1.0')}`]);
  // one version: no namespaces, its route is the base URL
  const one = devVersionsJob(job, versions.slice(0, 1), {});
  assert.deepEqual([one.sources, one.baseUrl, one.sourceUrls], [[path.join(site, 'docs')], '/docs', undefined]);
  assert.equal(devVersionsJob(job, [], {}), job, 'nothing loaded: the job from the options');
});
