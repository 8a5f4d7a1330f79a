// docent in real VitePress and Docusaurus sites, driven with playwright-core and Debian's
// chromium. Run via e2e/sites/run.sh: it packs docent, installs the generators from the npm
// registry and docent from the tarballs, runs the real builds, serves them and sets:
//   DOCENT_SITES_VP, DOCENT_SITES_VP_DEV, DOCENT_SITES_VP_DIR   the VitePress build, `vitepress dev`, its folder
//   DOCENT_SITES_DU, DOCENT_SITES_DU_DEV, DOCENT_SITES_DU_DIR   the same for Docusaurus
// A site whose variables are unset (DOCENT_SITES=vitepress) has its tests skipped.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { launchChromium, watchPageErrors } from '../lib/browser.mjs';
import { assertAccessible, WIDGET } from '../lib/axe.mjs';

const VP = process.env.DOCENT_SITES_VP;
const VP_DEV = process.env.DOCENT_SITES_VP_DEV;
const VP_DIR = process.env.DOCENT_SITES_VP_DIR;
const DU = process.env.DOCENT_SITES_DU;
const DU_DEV = process.env.DOCENT_SITES_DU_DEV;
const DU_DIR = process.env.DOCENT_SITES_DU_DIR;
if (!VP && !DU) throw new Error('run these tests with e2e/sites/run.sh (no site variables set)');

const T = 30_000;
const tid = (id) => `[data-testid="${id}"]`;
let browser;
let context;
let page;
/** The current page's uncaught errors: each test fails on any. */
let pageErrors;

before(async () => {
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

beforeEach(async () => {
  await context?.close();
  context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  page = await context.newPage();
  pageErrors = watchPageErrors(page);
});

afterEach(() => {
  assert.deepEqual(pageErrors, [], 'no uncaught error in the page (a crashed widget)');
});

async function openWidget() {
  await page.locator(tid('docent-launcher')).click({ timeout: T });
  await page.locator(tid('docent-dialog')).waitFor({ state: 'visible', timeout: T });
}

/** Asks a question and waits for the answer to settle; returns the turn. */
async function ask(question) {
  const input = page.locator(tid('docent-input'));
  await input.fill(question);
  await input.press('Enter');
  await page.waitForFunction(() => {
    const sr = document.querySelector('[data-docent-host]')?.shadowRoot;
    const turns = sr ? sr.querySelectorAll('[data-testid="docent-turn"]') : [];
    const t = turns[turns.length - 1];
    return !!(t && (t.querySelector('[data-testid="docent-feedback-up"]') || t.querySelector('[data-testid="docent-error"]')));
  }, null, { timeout: T });
  const turn = page.locator(tid('docent-turn')).last();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  return turn;
}

/** The dialog's scope line ("Answering from v1 docs"). */
async function scopeText() {
  const scope = page.locator(tid('docent-scope'));
  await scope.waitFor({ state: 'visible', timeout: T });
  return scope.innerText();
}

/** The hrefs of a turn's citations and sources. */
async function citedLinks(turn) {
  const cites = await turn.locator(`${tid('docent-answer')} a.docent-cite`).evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  const sources = await turn.locator(tid('docent-source')).evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  return { cites, sources, all: [...new Set([...cites, ...sources])] };
}

/** Opens every link in a fresh page and checks it lands on an existing heading (a link without
 * an anchor, to a page whose text comes before any heading with an id, must be a page). */
async function assertLandOnHeadings(links, site) {
  const p = await context.newPage();
  try {
    for (const href of links) {
      const url = new URL(href, site);
      const res = await p.goto(url.href, { waitUntil: 'domcontentloaded' });
      assert.equal(res.status(), 200, `${href} is a page of the built site`);
      if (url.hash.length <= 1) continue;
      const id = decodeURIComponent(url.hash.slice(1));
      const tag = await p.evaluate((i) => {
        const el = document.getElementById(i);
        return el ? el.tagName : null;
      }, id);
      assert.match(String(tag), /^H[1-6]$/, `${href}: #${id} is a heading of the page (found ${tag})`);
    }
  } finally {
    await p.close();
  }
}

async function indexBytes(site, prefix = '') {
  const r = await fetch(`${site}${prefix}/docent/index.bin`);
  assert.equal(r.status, 200, `${site}${prefix}/docent/index.bin is served`);
  return Buffer.from(await r.arrayBuffer());
}

/** Polls the served index until it holds `word` (the dev server re-indexed an edit). */
async function waitForIndexed(site, word, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const bytes = await indexBytes(site).catch(() => Buffer.alloc(0));
    if (bytes.includes(word)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.fail(`the dev server's index never picked up "${word}" within ${seconds} s`);
}

/** Checks the built site serves llms.txt, llms-full.txt and a linked page's Markdown with the
 * page's own heading anchors (written by `docent llms` at build time). */
async function assertLlmsFiles(site, { page: pagePath, heading }) {
  const txt = await fetch(`${site}/llms.txt`);
  assert.equal(txt.status, 200, `${site}/llms.txt is served`);
  const body = await txt.text();
  assert.match(body, /^# \S/, `llms.txt starts with the site title: ${body.slice(0, 200)}`);
  const links = [...body.matchAll(/^- \[[^\]]+\]\(([^)\s]+\.md)\)/gm)].map((m) => m[1]);
  const link = links.find((l) => new URL(l, `${site}/`).pathname === pagePath);
  assert.ok(link, `llms.txt links ${pagePath}: ${links.join(', ')}`);
  const md = await fetch(new URL(link, `${site}/`).href);
  assert.equal(md.status, 200, `${link} is served`);
  const text = await md.text();
  assert.ok(text.includes(heading), `${link} has the heading "${heading}" with its anchor:\n${text.slice(0, 600)}`);
  assert.ok(!/<script|<nav/i.test(text), `${link} is the page content only`);
  const full = await fetch(`${site}/llms-full.txt`);
  assert.equal(full.status, 200, `${site}/llms-full.txt is served`);
  assert.ok((await full.text()).includes(heading), 'llms-full.txt holds the page too');
}

function appendToFile(file, text) {
  const before = fs.readFileSync(file, 'utf8');
  fs.writeFileSync(file, `${before}\n${text}\n`);
  return () => fs.writeFileSync(file, before);
}

// ------------------------------------------------------------------------------- VitePress

test('vitepress build: the launcher appears and the answer cites headings of the built pages', { skip: !VP }, async () => {
  const html = await (await fetch(`${VP}/guide/install`)).text();
  assert.match(html, /<script type="module" src="\/docent\/docent\.js" data-index="\/docent\/index\.bin"/);
  assert.ok((await indexBytes(VP)).subarray(0, 8).equals(Buffer.from('DOCENTIX')));
  await page.goto(`${VP}/guide/install`);
  await page.locator(tid('docent-launcher')).waitFor({ state: 'visible', timeout: T });
  await openWidget();
  const turn = await ask('How do I install Frobnicator on Linux?');
  const { cites, all } = await citedLinks(turn);
  assert.ok(cites.length >= 1, `a cited answer: ${await turn.innerText()}`);
  assert.ok(all.includes('/guide/install#install-on-linux'), `the Linux section is cited: ${all.join(', ')}`);
  // axe-core (WCAG 2.2 A/AA) on the widget as this real site shows it: open, with the answer.
  await assertAccessible(page, 'VitePress build, the widget open with an answer', { include: WIDGET });
  await assertLandOnHeadings(all, VP);
});

test('vitepress build: each locale and version answers from its own pages', { skip: !VP }, async () => {
  const cases = [
    ['/guide/install', 'How do I install Frobnicator on Linux?', 'en', (h) => !/^\/(fr|v1)\//.test(h)],
    ['/v1/guide/install', 'How do I install Frobnicator on Linux?', 'v1', (h) => h.startsWith('/v1/')],
    ['/fr/guide/installation', "Comment faire l'installation sous Linux ?", 'fr', (h) => h.startsWith('/fr/')],
  ];
  for (const [at, question, scope, inScope] of cases) {
    await page.goto(`${VP}${at}`);
    await openWidget();
    const turn = await ask(question);
    assert.match(await scopeText(), new RegExp(`Answering from ${scope} docs`));
    const { cites, all } = await citedLinks(turn);
    assert.ok(cites.length >= 1, `${at}: a cited answer: ${await turn.innerText()}`);
    assert.ok(all.every(inScope), `${at}: only ${scope} pages: ${all.join(', ')}`);
    assert.equal(await turn.locator(tid('docent-fallback')).count(), 0, `${at}: no fallback`);
    await assertLandOnHeadings(all, VP);
  }
});

test('vitepress build: a v1 reader is told when the answer comes from all docs, and can switch', { skip: !VP }, async () => {
  await page.goto(`${VP}/v1/guide/install`);
  await openWidget();
  // parallel jobs are only documented for the current version
  const turn = await ask('How do I run jobs in parallel?');
  assert.equal(await turn.locator(tid('docent-fallback')).innerText(), 'Nothing in the v1 docs answers this: this answer is from all docs.');
  assert.match(await scopeText(), /Answering from v1 docs/);
  assert.ok((await citedLinks(turn)).all.includes('/guide/configure#parallel-jobs'));
  await page.locator(`${tid('docent-scope')} select`).selectOption('en');
  assert.match(await scopeText(), /Answering from en docs/);
  const next = await ask('How do I install Frobnicator on Linux?');
  const { all } = await citedLinks(next);
  assert.ok(all.length > 0 && all.every((h) => !/^\/(fr|v1)\//.test(h)), `the reader's scope: ${all.join(', ')}`);
});

test('vitepress build: after a client-side navigation the scope follows the page', { skip: !VP }, async () => {
  await page.goto(`${VP}/v1/guide/install`);
  await openWidget();
  await ask('How do I install Frobnicator on Linux?');
  assert.match(await scopeText(), /Answering from v1 docs/);
  await page.keyboard.press('Escape');
  // VitePress's router changes the page without reloading it (or the widget)
  await page.evaluate(() => { window.__docentSamePage = true; });
  await page.locator('.vp-doc a[href="/guide/install"]').click({ timeout: T });
  await page.waitForURL(`${VP}/guide/install`, { timeout: T });
  assert.equal(await page.evaluate(() => window.__docentSamePage), true, 'a client-side navigation');
  await openWidget();
  assert.match(await scopeText(), /Answering from en docs/, 'the scope follows when the dialog opens');
  const turn = await ask('How do I install Frobnicator on Linux?');
  const { all } = await citedLinks(turn);
  assert.ok(all.length > 0 && all.every((h) => !/^\/(fr|v1)\//.test(h)), `the en docs only: ${all.join(', ')}`);
});

test('vitepress build: the golden questions gate the build', { skip: !VP }, () => {
  const log = fs.readFileSync(path.join(VP_DIR, 'build.log'), 'utf8');
  assert.match(log, /docent: quality gate passed \(eval\.questions\)/, log);
  assert.match(log, /^ALL\s+3\s/m, 'the report of the three questions is in the build log: ' + log);
});

test('vitepress build: llms.txt, llms-full.txt and the pages as Markdown are in the built site', { skip: !VP }, async () => {
  await assertLlmsFiles(VP, { page: '/guide/install.md', heading: '## Install on Linux {#install-on-linux}' });
});

test('vitepress dev: the dev server serves the widget and re-indexes an edited page', { skip: !VP_DEV }, async () => {
  await page.goto(`${VP_DEV}/guide/configure`);
  await page.locator(tid('docent-launcher')).waitFor({ state: 'visible', timeout: T });
  assert.ok((await indexBytes(VP_DEV)).subarray(0, 8).equals(Buffer.from('DOCENTIX')));
  const restore = appendToFile(path.join(VP_DIR, 'docs/guide/configure.md'),
    '## Zanzibar mode\n\nZanzibar mode frobnicates quietly at night.');
  try {
    await waitForIndexed(VP_DEV, 'Zanzibar', 60);
    await page.reload();
    await openWidget();
    const turn = await ask('What does zanzibar mode do?');
    const { all } = await citedLinks(turn);
    assert.ok(all.includes('/guide/configure#zanzibar-mode'), `the new section is cited: ${all.join(', ')}`);
  } finally {
    restore();
  }
});

// ------------------------------------------------------------------------------- Docusaurus

/** A link a reader of the 1.0 docs may get: a 1.0 page, or a page no version owns (outside
 * /docs/, e.g. the home page). */
const inVersion10 = (h) => h.startsWith('/docs/1.0/') || !h.startsWith('/docs/');

test('docusaurus build: the launcher appears and the answer cites headings of the built pages', { skip: !DU }, async () => {
  assert.ok((await indexBytes(DU)).subarray(0, 8).equals(Buffer.from('DOCENTIX')));
  await page.goto(`${DU}/docs/install`);
  await page.locator(tid('docent-launcher')).waitFor({ state: 'visible', timeout: T });
  await openWidget();
  const turn = await ask('How do I install Frobnicator on Linux?');
  const { cites, all } = await citedLinks(turn);
  assert.ok(cites.length >= 1, `a cited answer: ${await turn.innerText()}`);
  assert.ok(all.some((h) => /^\/docs\/install\/?#install-on-linux$/.test(h)), `the Linux section is cited: ${all.join(', ')}`);
  assert.ok(all.every((h) => !h.startsWith('/fr/')), `no French page in an English answer: ${all.join(', ')}`);
  assert.ok(all.every((h) => !h.startsWith('/docs/1.0/')), `no 1.0 page on a 2.x page: ${all.join(', ')}`);
  assert.match(await scopeText(), /Answering from 2\.x docs/);
  // axe-core (WCAG 2.2 A/AA) on the widget as this real site shows it: open, with the answer.
  await assertAccessible(page, 'Docusaurus build, the widget open with an answer', { include: WIDGET });
  await assertLandOnHeadings(all, DU);
});

test('docusaurus build: a French page answers from the French docs', { skip: !DU }, async () => {
  await page.goto(`${DU}/fr/docs/install`);
  await openWidget();
  const turn = await ask("Comment faire l'installation sous Linux ?");
  const { cites, all } = await citedLinks(turn);
  assert.ok(cites.length >= 1, `a cited answer: ${await turn.innerText()}`);
  assert.ok(all.every((h) => h.startsWith('/fr/')), `only French pages: ${all.join(', ')}`);
  await assertLandOnHeadings(all, DU);
});

test('docusaurus build: a 1.0 page answers only from 1.0, and the scope follows a link to 2.x', { skip: !DU }, async () => {
  await page.goto(`${DU}/docs/1.0/install`);
  await openWidget();
  const turn = await ask('How do I install Frobnicator on Linux?');
  assert.match(await scopeText(), /Answering from 1\.0 docs/);
  const { cites, all } = await citedLinks(turn);
  assert.ok(cites.length >= 1, `a cited answer: ${await turn.innerText()}`);
  // Pages outside the versioned docs (the home page, a blog) have no namespace: every version
  // shares them.
  assert.ok(all.every(inVersion10), `only 1.0 pages and shared ones: ${all.join(', ')}`);
  assert.ok(all.some((h) => h.startsWith('/docs/1.0/')), `a 1.0 page is cited: ${all.join(', ')}`);
  await assertLandOnHeadings(all, DU);
  // The old-version banner links to the latest docs: a client-side navigation, so the widget
  // stays loaded, and its scope follows the page.
  await page.keyboard.press('Escape');
  await page.evaluate(() => { window.__docentSamePage = true; });
  await page.locator('.theme-doc-version-banner a').click({ timeout: T });
  await page.waitForURL(/\/docs\/install\/?$/, { timeout: T });
  assert.equal(await page.evaluate(() => window.__docentSamePage), true, 'a client-side navigation');
  await openWidget();
  assert.match(await scopeText(), /Answering from 2\.x docs/);
  const latest = await ask('How do I install Frobnicator on Linux?');
  const now = (await citedLinks(latest)).all;
  assert.ok(now.length > 0 && now.every((h) => !h.startsWith('/docs/1.0/')), `no 1.0 page: ${now.join(', ')}`);
});

test('docusaurus build: llms.txt, llms-full.txt and the pages as Markdown are in the built site', { skip: !DU }, async () => {
  // The page's URL is /docs/install (its canonical link), so its Markdown is /docs/install.md.
  await assertLlmsFiles(DU, { page: '/docs/install.md', heading: '## Install on Linux {#install-on-linux}' });
});

test('docusaurus start: the dev server serves the widget, answers per version, re-indexes an edit', { skip: !DU_DEV }, async () => {
  await page.goto(`${DU_DEV}/docs/install`);
  await page.locator(tid('docent-launcher')).waitFor({ state: 'visible', timeout: T });
  assert.ok((await indexBytes(DU_DEV)).subarray(0, 8).equals(Buffer.from('DOCENTIX')));
  // The dev index has the docs versions too, each in its namespace, as the built site does.
  await page.goto(`${DU_DEV}/docs/1.0/install`);
  await openWidget();
  const turn = await ask('How do I install Frobnicator on Linux?');
  assert.match(await scopeText(), /Answering from 1\.0 docs/);
  const { all } = await citedLinks(turn);
  assert.ok(all.some((h) => h.startsWith('/docs/1.0/')), `a 1.0 page is cited: ${all.join(', ')}`);
  assert.ok(all.every(inVersion10), `only 1.0 pages and shared ones: ${all.join(', ')}`);
  const restore = appendToFile(path.join(DU_DIR, 'docs/install.md'),
    '## Zanzibar mode\n\nZanzibar mode frobnicates quietly at night.');
  try {
    await waitForIndexed(DU_DEV, 'Zanzibar', 90);
  } finally {
    restore();
  }
});

// ------------------------------------------------------- what docent read, built vs sources

/** Every chunk of the index served at `site` (built HTML or a dev server's sources), read with
 * the site's own docent: `inspect --sections` lists the pages, `inspect --page --json` their
 * chunks exactly as indexed. */
async function servedChunks(siteDir, site) {
  const bin = path.join(siteDir, 'node_modules/.bin/docent');
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'docent-chunks-')), 'index.bin');
  fs.writeFileSync(file, await indexBytes(site));
  const run = (args) => execFileSync(bin, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const urls = new Set();
  for (const line of run(['inspect', file, '--sections']).split('\n').filter(Boolean)) {
    const link = line.split('\t')[0];
    // `namespace/url#anchor`: URLs here start with `/` (or a scheme), namespaces hold no `/`.
    const url = /^(\/|https?:)/.test(link) ? link : link.slice(link.indexOf('/') + 1);
    urls.add(url.split('#')[0]);
  }
  const chunks = [];
  for (const url of urls) {
    for (const line of run(['inspect', file, '--page', url, '--json']).split('\n').filter(Boolean)) {
      chunks.push(JSON.parse(line));
    }
  }
  return chunks;
}

/** Text outside code: fenced blocks and inline code removed. */
function prose(text) {
  return text.replace(/(`{3,})[^\n]*\n[\s\S]*?\n\1/g, '').replace(/`[^`\n]*`/g, '');
}

/** What a reader never sees and no chunk may hold: MDX statements, JSX and Vue component tags,
 * container and fence markers, unresolved includes, twoslash and notation markers. */
function assertCleanChunks(chunks, label) {
  for (const c of chunks) {
    const where = `${label}: ${c.url}#${c.anchor} (chunk ${c.chunk}):\n${c.text}`;
    const p = prose(c.text);
    assert.ok(!/^\s*(import|export)\s/m.test(p), `an import/export statement in ${where}`);
    assert.ok(!/<\/?([A-Z][\w.]*|[a-z]+-[\w-]*)[\s/>]/.test(p), `a component tag in ${where}`);
    assert.ok(!/:::|Code-group:|<<<|@include|\{frontMatter|\{\/\*/.test(p), `a marker in ${where}`);
    assert.ok(!/mdx-code-block|---cut---|\/\/ @noErrors|\/\/\s*\^\?|\[!code |highlight-next-line/.test(c.text),
      `a fence, twoslash or notation marker in ${where}`);
  }
}

/** Every link a hit can show (url#anchor of every chunk) is a page of the built site with that
 * heading id. */
async function assertLinksExist(chunks, builtSite, label) {
  const pages = new Map();
  for (const c of chunks) {
    if (!pages.has(c.url)) {
      const r = await fetch(new URL(c.url, builtSite).href);
      pages.set(c.url, { status: r.status, html: r.status === 200 ? await r.text() : '' });
    }
    const { status, html } = pages.get(c.url);
    assert.equal(status, 200, `${label}: ${c.url} is a page of the built site`);
    if (c.anchor) {
      assert.ok(html.includes(`id="${c.anchor}"`), `${label}: ${c.url} has a heading with id "${c.anchor}"`);
    }
  }
}

/** The links (url#anchor) of one page's chunks. */
function pageLinks(chunks, url) {
  return [...new Set(chunks.filter((c) => c.url === url).map((c) => `${c.url}#${c.anchor}`))].sort();
}

function pageText(chunks, url) {
  return chunks.filter((c) => c.url === url).map((c) => c.text).join('\n\n');
}

test('vitepress: built and sources index read includes, snippets and code groups as the site shows them', { skip: !VP || !VP_DEV }, async () => {
  const built = await servedChunks(VP_DIR, VP);
  const dev = await servedChunks(VP_DIR, VP_DEV);
  for (const [chunks, label] of [[built, 'built HTML'], [dev, 'sources (vitepress dev)']]) {
    assertCleanChunks(chunks, label);
    await assertLinksExist(chunks, VP, label);
    const text = pageText(chunks, '/guide/features');
    assert.match(text, /walks through the zorblax options/, `${label}: the @include`);
    assert.match(text, /name: Deploy the quuxer site/, `${label}: the <<< snippet's region`);
    assert.ok(!/Not shown/.test(text), `${label}: only the region`);
    assert.match(text, /deploy\.yml/, `${label}: the code-group tab title`);
    assert.match(text, /zorblax: true,\n/, `${label}: the notation comment is gone`);
  }
  // The section with no text of its own (## Environments, then ### Staging) is a hit in both.
  assert.deepEqual(pageLinks(dev, '/guide/features'), pageLinks(built, '/guide/features'));
  assert.ok(pageLinks(dev, '/guide/features').includes('/guide/features#environments'));
});

test('docusaurus: built and sources index read partials, mdx-code-block, tabs and h1s as the site shows them', { skip: !DU || !DU_DEV }, async () => {
  const built = await servedChunks(DU_DIR, DU);
  const dev = await servedChunks(DU_DIR, DU_DEV);
  for (const [chunks, label] of [[built, 'built HTML'], [dev, 'sources (docusaurus start)']]) {
    assertCleanChunks(chunks, label);
    await assertLinksExist(chunks, DU, label);
    assert.ok(chunks.every((c) => !c.url.includes('_partial')), `${label}: a partial is no page`);
    const text = pageText(chunks, '/docs/features');
    assert.match(text, /Declare the zorblax tags/, `${label}: the partial's text is on the importing page`);
    assert.match(text, /`\{\/\* truncate \*\/\}`/, `${label}: the MDX comment in inline code`);
    assert.match(text, /The Features tour shows/, `${label}: {frontMatter.title}`);
    // Routed as Docusaurus routes them (every link is checked against the built site above):
    // number prefixes dropped, a doc named like its folder at the folder's URL.
    assert.match(pageText(chunks, '/docs/guides/setup'), /frobnitz cache is removed/, `${label}: 02-guides/3-setup.md`);
    assert.match(pageText(chunks, '/docs/reference/'), /snargleblaster options live here/, `${label}: reference/reference.md`);
  }
  // The sources keep every tab with its label (the built HTML hides the inactive tab panels).
  const devText = pageText(dev, '/docs/features');
  assert.match(devText, /Using npm/, 'sources: the tab label');
  assert.match(devText, /Install the quuxer with `yarn add quuxer`\./, 'sources: the one-line tab');
  assert.deepEqual(pageLinks(dev, '/docs/features'), pageLinks(built, '/docs/features'));
  assert.ok(pageLinks(dev, '/docs/features').includes('/docs/features#tags-file'));
});
