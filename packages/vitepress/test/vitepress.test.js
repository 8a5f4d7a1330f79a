import { test } from 'node:test';
import { tempDir } from '../../test-support/temp-dir.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import {
  withDocent,
  docentHead,
  docentScriptTag,
  docentMiddleware,
  normalizeOptions,
  DocentOptionsError,
} from '../src/index.js';


/** A temp folder with fake widget assets and an index file. */
async function fixture() {
  const dir = await tempDir('docent-vitepress-');
  const widget = path.join(dir, 'widget');
  await fsp.mkdir(widget);
  for (const f of ['docent.js', 'docent-widget.js', 'docent-widget_bg.wasm', 'docent.css', 'docent-tokenizer.js', 'index.html']) {
    await fsp.writeFile(path.join(widget, f), `/* ${f} */`);
  }
  const index = path.join(dir, 'index.bin');
  // a docent index header: magic, then format version 3 (u32 LE); the body is not read
  await fsp.writeFile(index, Buffer.concat([Buffer.from('DOCENTIX'), Buffer.from([3, 0, 0, 0, 1, 2, 3])]));
  return { dir, widget, index };
}

test('the head entry is a module script with the index and every data attribute', () => {
  const [tag, attrs] = docentHead(
    {
      index: 'x/index.bin',
      widgetDir: 'w',
      proxy: 'https://ask.example.com',
      title: 'Ask the docs',
      starters: ['How do I install it?', 'What does it cost?'],
      theme: 'dark',
      position: 'bottom-left',
      shortcut: 'mod+k',
      namespace: 'v2',
      language: 'de',
      rewrite: 'off',
      docsOrigin: 'https://docs.example.com',
      support: 'https://help.example.com/new?subject={question}',
      supportLabel: 'Ask our team',
    },
    '/',
  );
  assert.equal(tag, 'script');
  assert.deepEqual(attrs, {
    type: 'module',
    src: '/docent/docent.js',
    'data-index': '/docent/index.bin',
    'data-proxy': 'https://ask.example.com',
    'data-title': 'Ask the docs',
    'data-namespace': 'v2',
    'data-starters': 'How do I install it?|What does it cost?',
    'data-shortcut': 'mod+k',
    'data-theme': 'dark',
    'data-position': 'bottom-left',
    'data-language': 'de',
    'data-rewrite': 'off',
    'data-docs-origin': 'https://docs.example.com',
    'data-support': 'https://help.example.com/new?subject={question}',
    'data-support-label': 'Ask our team',
  });
});

test('the site base and a custom path prefix the asset urls', () => {
  const [, attrs] = docentHead({ index: 'i.bin', path: '/assets/ai/' }, '/my-project/');
  assert.equal(attrs.src, '/my-project/assets/ai/docent.js');
  assert.equal(attrs['data-index'], '/my-project/assets/ai/index.bin');
  const [, noSlash] = docentHead({ index: 'i.bin' }, 'guide');
  assert.equal(noSlash.src, '/guide/docent/docent.js');
});

test('without a proxy the tag has no data-proxy so the widget answers extractively', () => {
  const [, attrs] = docentHead({ index: 'i.bin' });
  assert.equal('data-proxy' in attrs, false);
});

test('the html form escapes attribute values', () => {
  const html = docentScriptTag({ index: 'i.bin', title: 'Say "hi" <b>&</b>' });
  assert.match(html, /^<script type="module" src="\/docent\/docent.js" data-index="\/docent\/index.bin"/);
  assert.match(html, /data-title="Say &quot;hi&quot; &lt;b&gt;&amp;&lt;\/b&gt;"/);
  assert.match(html, /><\/script>$/);
});

test('bad options give errors that say what to do', () => {
  assert.throws(() => normalizeOptions({ index: ' ' }), /prebuilt index file.*leave it out/);
  assert.throws(() => normalizeOptions({ embed: 'bert' }), /embed must be one of none, local, openai/);
  assert.throws(() => normalizeOptions({ index: 'i', embed: 'local' }), /"embed" only applies when the plugin builds the index/);
  assert.throws(() => normalizeOptions({ exclude: 'drafts' }), /exclude must be an array of strings/);
  assert.throws(() => normalizeOptions({ checkAnchors: 'yes' }), /checkAnchors must be true or false/);
  assert.throws(() => normalizeOptions({ index: 'i', thme: 'dark' }), /unknown option "thme"/);
  assert.throws(() => normalizeOptions({ index: 'i', theme: 'purple' }), /theme must be one of/);
  assert.throws(() => normalizeOptions({ index: 'i', position: 'top' }), /position must be/);
  assert.throws(() => normalizeOptions({ index: 'i', proxy: 'javascript:alert(1)' }), /proxy must be/);
  assert.throws(() => normalizeOptions({ index: 'i', path: '../up' }), /path must be a folder/);
  assert.throws(() => normalizeOptions({ index: 'i', starters: ['a|b'] }), /may not contain "\|"/);
  assert.throws(() => normalizeOptions({ index: 'i', rewrite: 'sometimes' }), /rewrite must be one of/);
  assert.throws(() => normalizeOptions({ index: 'i', launcher: 'hidden' }), /launcher can only be "none"/);
  assert.throws(() => normalizeOptions({ index: 'i', theme: 'x' }), DocentOptionsError);
});

test('withDocent keeps the existing config, head, plugins and buildEnd', async () => {
  const { dir, widget, index } = await fixture();
  let earlierBuildEndRan = false;
  const userPlugin = { name: 'user-plugin' };
  const config = withDocent(
    {
      title: 'Mine',
      base: '/b/',
      head: [['meta', { name: 'x', content: 'y' }]],
      vite: { plugins: [userPlugin], server: { port: 1 } },
      buildEnd: async () => {
        earlierBuildEndRan = true;
      },
    },
    { index, widgetDir: widget },
  );
  assert.equal(config.title, 'Mine');
  assert.equal(config.head.length, 2);
  assert.deepEqual(config.head[0], ['meta', { name: 'x', content: 'y' }]);
  assert.equal(config.head[1][1].src, '/b/docent/docent.js');
  assert.equal(config.vite.server.port, 1);
  assert.equal(config.vite.plugins[0], userPlugin);
  assert.equal(config.vite.plugins[1].name, 'docent-assets');

  const outDir = path.join(dir, 'dist');
  await config.buildEnd({ outDir });
  assert.equal(earlierBuildEndRan, true);
  const copied = (await fsp.readdir(path.join(outDir, 'docent'))).sort();
  // every widget file is published (the lazily loaded tokenizer too), but not Trunk's page
  assert.deepEqual(copied, ['docent-tokenizer.js', 'docent-widget.js', 'docent-widget_bg.wasm', 'docent.css', 'docent.js', 'index.bin']);
  assert.deepEqual(
    await fsp.readFile(path.join(outDir, 'docent', 'index.bin')),
    await fsp.readFile(index),
  );
});

test('the build step fails clearly when the index was not built', async () => {
  const { dir, widget } = await fixture();
  const config = withDocent({}, { index: path.join(dir, 'nope.bin'), widgetDir: widget });
  await assert.rejects(config.buildEnd({ outDir: path.join(dir, 'out') }), /nope\.bin not found: run `docent index/);
});

test('the build step fails clearly when the widget was not built', async () => {
  const { dir, index } = await fixture();
  const empty = path.join(dir, 'empty');
  fs.mkdirSync(empty);
  const config = withDocent({}, { index, widgetDir: empty });
  await assert.rejects(config.buildEnd({ outDir: path.join(dir, 'out') }), /docent\.js is missing: build the widget/);
});

test('the dev middleware serves the assets with the right content types and passes the rest on', async () => {
  const { widget, index } = await fixture();
  const opts = normalizeOptions({ index, widgetDir: widget });
  const mw = docentMiddleware(opts, '/docent/');
  const server = http.createServer((req, res) =>
    mw(req, res, () => {
      res.statusCode = 418;
      res.end('next');
    }),
  );
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  try {
    const wasm = await fetch(`http://127.0.0.1:${port}/docent/docent-widget_bg.wasm`);
    assert.equal(wasm.status, 200);
    assert.equal(wasm.headers.get('content-type'), 'application/wasm');
    const bin = await fetch(`http://127.0.0.1:${port}/docent/index.bin?v=1`);
    assert.equal(bin.status, 200);
    assert.deepEqual(Buffer.from(await bin.arrayBuffer()), await fsp.readFile(index));
    const other = await fetch(`http://127.0.0.1:${port}/docent/../package.json`);
    assert.equal(other.status, 418);
    const tok = await fetch(`http://127.0.0.1:${port}/docent/docent-tokenizer.js`);
    assert.equal(tok.status, 200);
    assert.equal(tok.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const html = await fetch(`http://127.0.0.1:${port}/docent/index.html`);
    assert.equal(html.status, 418);
    const page = await fetch(`http://127.0.0.1:${port}/guide/`);
    assert.equal(page.status, 418);
    // A split index's shards are served from the index's folder.
    const shard = path.join(path.dirname(index), `${path.basename(index).replace(/\.[^.]*$/, '')}-t-01234567.bin`);
    await fsp.writeFile(shard, 'shard bytes');
    try {
      const got = await fetch(`http://127.0.0.1:${port}/docent/${path.basename(shard)}`);
      assert.equal(got.status, 200);
      assert.equal(await got.text(), 'shard bytes');
    } finally {
      await fsp.rm(shard);
    }
  } finally {
    server.close();
  }
});
