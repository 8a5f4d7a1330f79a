// The shared build steps of both plugins (docent-widget/integration): running `docent index`,
// the dev server's re-indexing, the index format check and the all-or-nothing copy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { tempDir } from '../../test-support/temp-dir.js';
import {
  buildIndex,
  buildLlms,
  copyAssets,
  checkIndexFormat,
  DevIndexer,
  DocentBuildError,
  normalizeOptions,
  runEval,
} from 'docent-widget/integration';

const header = (version) => Buffer.concat([Buffer.from('DOCENTIX'), Buffer.from([version, 0, 0, 0])]);

async function widgetDir() {
  const dir = await tempDir('docent-build-');
  const widget = path.join(dir, 'widget');
  await fsp.mkdir(widget);
  for (const f of ['docent.js', 'docent-widget.js', 'docent-widget_bg.wasm', 'docent.css']) {
    await fsp.writeFile(path.join(widget, f), `/* ${f} */`);
  }
  return { dir, widget };
}

test('buildIndex runs docent index with the site settings and the user options', async () => {
  const { dir } = await widgetDir();
  const opts = normalizeOptions({ embed: 'local', exclude: ['drafts/**'], indexArgs: ['--max-tokens', '200'] }, dir);
  let got;
  const run = async (args) => {
    got = args;
    return { code: 0, stdout: 'wrote x (2 KiB)\n  pages    3 indexed\n', stderr: '' };
  };
  const out = path.join(dir, 'cache', 'index.bin');
  const summary = await buildIndex(run, {
    sources: ['/site/dist'], out, baseUrl: '/docs/', cleanUrls: true, exclude: ['404.html'], checkAnchors: true, build: opts.build,
  });
  assert.equal(summary, 'wrote x (2 KiB); pages    3 indexed');
  assert.deepEqual(got, [
    'index', '/site/dist', '--base-url', '/docs/', '--clean-urls', '--exclude', '404.html', '--exclude', 'drafts/**',
    '--out', out, '--embed', 'local', '--quiet', '--check-anchors', '--max-tokens', '200',
  ]);
  assert.ok(fs.existsSync(path.dirname(out)), 'the output folder is created');
  const off = normalizeOptions({ checkAnchors: false }, dir);
  await buildIndex(run, { sources: ['s'], out, checkAnchors: true, build: off.build });
  assert.ok(!got.includes('--check-anchors'), 'checkAnchors: false turns the check off');
});

test('buildLlms runs docent llms over the same pages into the built site, unless llms is false', async () => {
  const calls = [];
  const run = async (args) => {
    calls.push(args);
    return { code: 0, stdout: 'wrote 3 pages\n', stderr: '' };
  };
  const job = {
    sources: ['/site/dist'], out: '/cache/index.bin', baseUrl: '/docs/', cleanUrls: true, exclude: ['404.html'],
    namespaces: { namespace: 'en-US', dirs: { fr: 'fr' } },
    build: normalizeOptions({ exclude: ['drafts/**'], indexArgs: ['--max-tokens', '200'] }).build,
  };
  assert.equal(await buildLlms(run, job, '/site/dist'), 'wrote 3 pages');
  assert.deepEqual(calls[0], [
    'llms', '/site/dist', '--base-url', '/docs/', '--clean-urls', '--exclude', '404.html', '--exclude', 'drafts/**',
    '--out', '/site/dist',
  ], 'neither the index options (embed, indexArgs, anchors) nor namespaces: each .md sits at its page URL');
  const off = { ...job, build: normalizeOptions({ llms: false }).build };
  assert.equal(await buildLlms(run, off, '/site/dist'), null);
  assert.equal(calls.length, 1, 'llms: false runs nothing');
  assert.throws(() => normalizeOptions({ llms: 'yes' }), /llms must be true or false/);
  assert.throws(() => normalizeOptions({ index: 'i.bin', llms: true }), /only applies when the plugin builds the index/);
  const failing = async () => ({ code: 1, stdout: '', stderr: 'error: no pages to write\n' });
  await assert.rejects(buildLlms(failing, job, '/site/dist'), /docent llms failed \(exit 1\):\nerror: no pages to write/);
});

test('a failed docent index is a build error with docent\'s message and the command', async () => {
  const { dir } = await widgetDir();
  const run = async () => ({ code: 1, stdout: '', stderr: 'error: --check-anchors: 1 of 4 links would not land on a heading\n' });
  await assert.rejects(
    buildIndex(run, { sources: ['/site/dist'], out: path.join(dir, 'i.bin'), build: normalizeOptions({}).build }),
    (e) => e instanceof DocentBuildError && /docent index failed \(exit 1\):\nerror: --check-anchors.*\n\(command: docent index \/site\/dist/s.test(e.message),
  );
});

test('the dev indexer rebuilds once per burst of edits and waits for the build in ready()', async () => {
  let builds = 0;
  let release;
  const build = () => {
    builds += 1;
    return new Promise((r) => (release = () => r(`build ${builds}`)));
  };
  const logs = [];
  const dev = new DevIndexer(build, '/cache/index.bin', { delayMs: 20, log: (l) => logs.push(l) });
  dev.kick();
  const first = dev.ready();
  dev.schedule();
  dev.schedule();
  release();
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(builds, 2, 'the edits during the first build give one more build');
  release();
  assert.equal(await first, '/cache/index.bin');
  assert.deepEqual(logs, ['docent: dev index rebuilt: build 1', 'docent: dev index rebuilt: build 2']);
  assert.equal(await dev.ready(), '/cache/index.bin');
});

test('an index of a format the widget cannot read is refused with what to install', async () => {
  const { dir, widget } = await widgetDir();
  const file = path.join(dir, 'index.bin');
  // The range the widget package declares (it grows with every new index format).
  const { min, max } = JSON.parse(
    await fsp.readFile(new URL('../../widget/package.json', import.meta.url), 'utf8'),
  ).docent.indexFormats;
  await fsp.writeFile(file, header(max + 1));
  assert.throws(
    () => checkIndexFormat(file, widget),
    new RegExp(`index format ${max + 1} but docent-widget 0\\.1\\.0 reads formats ${min}-${max}: install the docent CLI and docent-widget of the same version`),
  );
  // Earlier split layouts inside the range are refused too, with a message to rebuild.
  await fsp.writeFile(file, header(7));
  assert.throws(() => checkIndexFormat(file, widget), /index format 7, an earlier split layout .* rebuild the index/);
  await fsp.writeFile(file, Buffer.from('<!doctype html>'));
  assert.throws(() => checkIndexFormat(file, widget), /is not a docent index/);
  await fsp.writeFile(file, header(3));
  checkIndexFormat(file, widget);
});

test('a failed copy leaves no half-written docent folder and keeps the previous one', async () => {
  const { dir, widget } = await widgetDir();
  const out = path.join(dir, 'out');
  const index = path.join(dir, 'index.bin');
  await fsp.writeFile(index, header(3));
  const opts = normalizeOptions({ index, widgetDir: widget }, dir);
  await copyAssets(opts, out, dir);
  assert.ok(fs.existsSync(path.join(out, 'docent', 'index.bin')));
  // the next build's index is broken: the copy fails before anything is replaced
  await fsp.writeFile(index, Buffer.from('broken'));
  await assert.rejects(copyAssets(opts, out, dir), /not a docent index/);
  assert.deepEqual((await fsp.readdir(out)).sort(), ['docent'], 'no temp folder left behind');
  assert.deepEqual(await fsp.readFile(path.join(out, 'docent', 'index.bin')), header(3));
});

test('a split index is published with its shards, and only its own', async () => {
  const { dir, widget } = await widgetDir();
  const out = path.join(dir, 'out');
  const index = path.join(dir, 'cache', 'index.bin');
  await fsp.mkdir(path.dirname(index));
  await fsp.writeFile(index, header(9));
  const shards = ['index-p-01234567.bin', 'index-t-fedcba98.bin', 'index-v-89abcdef.bin'];
  for (const s of shards) await fsp.writeFile(path.join(dir, 'cache', s), s);
  // Not shards of this index: another stem, a bad name, a temp file, an earlier layout's name.
  for (const other of ['other-p-01234567.bin', 'index-p-xyz.bin', '.index-t-fedcba98.bin', 'index-t-fedcba9876543210.bin']) {
    await fsp.writeFile(path.join(dir, 'cache', other), other);
  }
  const opts = normalizeOptions({ index, widgetDir: widget }, dir);
  const copied = await copyAssets(opts, out, dir);
  for (const s of shards) {
    assert.ok(copied.includes(s), `${s} copied: ${copied}`);
    assert.equal(await fsp.readFile(path.join(out, 'docent', s), 'utf8'), s);
  }
  assert.deepEqual(copied.filter((n) => /-[ptv]-/.test(n)).sort(), shards);
});

test('locales and version folders become namespaces of the index', async () => {
  const { siteNamespaces } = await import('../src/index.js');
  const dir = await tempDir('docent-ns-');
  fs.mkdirSync(path.join(dir, 'fr', 'v1'), { recursive: true });
  const site = { lang: 'en-US', locales: { root: { lang: 'en' }, fr: { lang: 'fr' }, de: { lang: 'de' } } };
  assert.deepEqual(siteNamespaces(site, ['v1'], dir), {
    namespace: 'en',
    dirs: { fr: 'fr', de: 'de', v1: 'v1', 'fr/v1': 'fr/v1' },
  });
  assert.deepEqual(siteNamespaces({ lang: 'en-US' }, ['v1', 'v0'], dir), { namespace: 'latest', dirs: { v1: 'v1', v0: 'v0' } });
  assert.equal(siteNamespaces({ lang: 'en-US' }, [], dir), undefined, 'one locale, one version: no namespaces');
  let got;
  const run = async (args) => {
    got = args;
    return { code: 0, stdout: 'ok', stderr: '' };
  };
  await buildIndex(run, {
    sources: ['out'], out: path.join(dir, 'i.bin'), namespaces: { namespace: 'en', dirs: { fr: 'fr', v1: 'v1' } },
    build: normalizeOptions({}).build,
  });
  assert.deepEqual(got.slice(2, 8), ['--namespace', 'en', '--namespace-dir', 'fr=fr', '--namespace-dir', 'v1=v1']);
  assert.throws(() => normalizeOptions({ versions: ['../v1'] }), /versions are folders of the site/);
});

test('the eval option gates the build on golden questions with docent eval', async () => {
  const { dir } = await widgetDir();
  await fsp.writeFile(path.join(dir, 'questions.jsonl'), '{"question": "How do I install it?", "gold": ["/guide/install#linux"]}\n');
  let got;
  const passing = async (args) => {
    got = args;
    return { code: 0, stdout: 'docent eval: 1 questions\nALL 1 100.0%\n', stderr: '' };
  };
  const opts = normalizeOptions({ eval: 'questions.jsonl', indexArgs: ['--api-key-env', 'EMBED_KEY'] }, dir);
  assert.deepEqual(opts.eval, { questions: path.join(dir, 'questions.jsonl'), minRecall: 0.8 });
  assert.match(await runEval(passing, opts, '/c/index.bin'), /ALL 1 100\.0%/);
  assert.deepEqual(got, ['eval', '/c/index.bin', path.join(dir, 'questions.jsonl'), '--min-recall', '0.8', '--api-key-env', 'EMBED_KEY']);
  const strict = normalizeOptions({ eval: { questions: 'questions.jsonl', minRecall: 1, maxAnsweredUnanswerable: 0 } }, dir);
  await runEval(passing, strict, '/c/index.bin');
  assert.deepEqual(got.slice(3), ['--min-recall', '1', '--max-answered-unanswerable', '0']);
  // a failed gate stops the build with docent's list of missed questions
  const failing = async () => ({ code: 1, stdout: '', stderr: 'error: quality gate failed: R@5 is 0.0% ...\n  - "How do I install it?" (top hit /x)\n' });
  await assert.rejects(runEval(failing, opts, '/c/index.bin'), (e) => e instanceof DocentBuildError && /quality gate failed/.test(e.message) && /How do I install it/.test(e.message));
  assert.equal(await runEval(passing, normalizeOptions({}, dir), '/c/index.bin'), null, 'no eval option: no gate');
  // bad options and a missing file say what to write
  assert.throws(() => normalizeOptions({ eval: { questions: 'q.jsonl', minRecall: 80 } }, dir), /from 0 to 1/);
  assert.throws(() => normalizeOptions({ eval: { questions: 'q.jsonl', recall: 0.8 } }, dir), /unknown eval option "recall"/);
  assert.throws(() => normalizeOptions({ eval: 3 }, dir), /path of a questions file/);
  await assert.rejects(runEval(passing, normalizeOptions({ eval: 'missing.jsonl' }, dir), '/c/index.bin'), /no file at .*missing\.jsonl/);
});
