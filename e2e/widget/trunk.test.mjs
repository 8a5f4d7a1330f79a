// Smoke test of the Trunk build: `trunk build --release` writes dist/trunk/ (index.html, the
// development page, plus the widget in dist/trunk/docent/ from the pre_build hook). This serves
// dist/trunk from a static server and checks in headless Chromium that the page works: the
// launcher appears, the wasm instantiates and mounts the dialog and the inline element, and (when
// run.sh put an index next to the page) a question gets a cited answer. The page's data-proxy
// (127.0.0.1:8787) is made unreachable, so the answer is the offline one (excerpts).
//
// Run via e2e/widget/run.sh --trunk (it builds the index and runs trunk build first).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../lib/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.resolve(process.env.DOCENT_TRUNK_DIST || path.join(here, '../../dist/trunk'));
const T = 20_000;
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', '.bin': 'application/octet-stream', '.tiktoken': 'text/plain; charset=utf-8',
};

let server;
let base;
let browser;

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), `${DIST}/index.html missing: run trunk build --release`);
  server = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.join(DIST, p === '/' ? 'index.html' : p);
    if (p.includes('..') || !file.startsWith(DIST)) { res.writeHead(400); res.end(); return; }
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
      res.end(data);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

test('the trunk-built page loads the widget and its wasm mounts the dialog and the inline chat', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/8787|ERR_FAILED|net::/.test(m.text())) errors.push(m.text()); });
  // No proxy is running for this page: make its data-proxy unreachable (offline answers).
  await page.route('http://127.0.0.1:8787/**', (route) => route.abort('connectionrefused'));
  await page.goto(`${base}/index.html`);
  const launcher = page.locator('[data-testid="docent-launcher"]');
  await launcher.waitFor({ timeout: T });
  await launcher.click();
  // The floating dialog and the inline <docent-chat> both mount, from the one wasm module.
  await page.locator('[data-testid="docent-input"]').nth(1).waitFor({ timeout: T });
  const inputs = await page.locator('[data-testid="docent-input"]').count();
  assert.equal(inputs, 2, 'the floating dialog and the inline chat are both mounted');
  const wasm = await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm')).map((e) => e.name));
  assert.ok(wasm.some((u) => u.endsWith('/docent/docent-widget_bg.wasm')), `the widget wasm was fetched (${wasm.join(', ')})`);
  if (fs.existsSync(path.join(DIST, 'index.bin'))) {
    const inline = page.locator('docent-chat');
    const box = inline.locator('[data-testid="docent-input"]');
    await box.fill('How do I install the frobnicator?');
    await box.press('Enter');
    await inline.locator('[data-testid="docent-excerpt-label"]').waitFor({ timeout: T });
    const sources = await inline.locator('[data-testid="docent-source"]').count();
    assert.ok(sources > 0, 'the offline answer lists its sources');
  }
  assert.deepEqual(errors, [], 'no page errors');
  await context.close();
});
