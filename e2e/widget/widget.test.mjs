// Browser end-to-end tests of the docent widget: the built widget + `docent serve` + the OpenAI
// upstream double, driven with playwright-core and Debian's chromium.
//
// Run via e2e/widget/run.sh (it builds everything, starts the servers and sets these variables):
//   DOCENT_E2E_SITE       static server with the test pages and the widget (server.mjs)
//   DOCENT_E2E_PROXY      docent serve with the upstream double as its chat/embedding upstream
//   DOCENT_E2E_NOCHAT     docent serve with no chat model (answers 503 no_chat_model)
//   DOCENT_E2E_CACHED     docent serve with the answer cache on ([cache] enabled)
//   DOCENT_E2E_UPSTREAM   the upstream double (GET /_requests)
//   DOCENT_E2E_SCREENSHOT where to write the README screenshot (optional)
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, watchPageErrors } from '../lib/browser.mjs';
import { assertAccessible, axeViolations, WIDGET } from '../lib/axe.mjs';

const SITE = process.env.DOCENT_E2E_SITE;
const PROXY = process.env.DOCENT_E2E_PROXY;
const NOCHAT = process.env.DOCENT_E2E_NOCHAT;
const CACHED = process.env.DOCENT_E2E_CACHED;
const UPSTREAM = process.env.DOCENT_E2E_UPSTREAM;
const SCREENSHOT = process.env.DOCENT_E2E_SCREENSHOT;
const DEMO = process.env.DOCENT_E2E_DEMO;
if (!SITE) throw new Error('run these tests with e2e/widget/run.sh (DOCENT_E2E_SITE is not set)');

const T = 20_000;
let browser;
let context;
let page;
/** Every URL the page requested, in order. */
let requests;
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
  context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: SITE });
  page = await context.newPage();
  requests = [];
  page.on('request', (r) => requests.push(r.url()));
  pageErrors = watchPageErrors(page);
});

afterEach(() => {
  assert.deepEqual(pageErrors, [], 'no uncaught error in the page (a crashed widget)');
});

function pageUrl(params = {}) {
  const q = new URLSearchParams(params);
  return `${SITE}/page?${q}`;
}

const tid = (id) => `[data-testid="${id}"]`;

async function upstreamRequests() {
  const r = await fetch(`${UPSTREAM}/_requests`);
  return r.json();
}

function lastUserText(req) {
  const msgs = (req.body && req.body.messages) || [];
  const users = msgs.filter((m) => m.role === 'user');
  return users.length ? String(users[users.length - 1].content) : '';
}

async function openWidget() {
  await page.locator(tid('docent-launcher')).click();
  await page.locator(tid('docent-dialog')).waitFor({ state: 'visible', timeout: T });
}

async function ask(question) {
  const input = page.locator(tid('docent-input'));
  await input.fill(question);
  await input.press('Enter');
}

/** Waits for the last turn to settle (done, stopped or failed). */
async function lastTurnSettled() {
  const turn = page.locator(tid('docent-turn')).last();
  await page.waitForFunction(() => {
    const host = document.querySelector('[data-docent-host]') || document.querySelector('docent-chat');
    const sr = host && host.shadowRoot;
    if (!sr) return false;
    const turns = sr.querySelectorAll('[data-testid="docent-turn"]');
    const t = turns[turns.length - 1];
    if (!t) return false;
    return !!(t.querySelector('[data-testid="docent-feedback-up"]') || t.querySelector('[data-testid="docent-error"]') ||
      t.querySelector('[data-testid="docent-stopped"]'));
  }, null, { timeout: T });
  return turn;
}

test('the loader shows the launcher at once and fetches nothing heavy before interest', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  const launcher = page.locator(tid('docent-launcher'));
  await launcher.waitFor({ state: 'visible', timeout: T });
  await page.waitForTimeout(300);
  assert.ok(!requests.some((u) => u.endsWith('.wasm') || u.endsWith('index.bin') || u.endsWith('.tiktoken')),
    `nothing heavy before interest: ${requests.join(', ')}`);
  // The host page's aggressive CSS (* { color: red !important }) does not reach the widget.
  await launcher.hover();
  await page.waitForFunction(() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('.wasm')), null, { timeout: T });
  assert.ok(!requests.some((u) => u.endsWith('index.bin')), 'the index waits for the first question');
  await launcher.click();
  const dialog = page.locator(tid('docent-dialog'));
  await dialog.waitFor({ state: 'visible', timeout: T });
  assert.equal(await dialog.getAttribute('role'), 'dialog');
  assert.equal(await dialog.getAttribute('aria-modal'), 'true');
  const color = await page.locator('.docent-title').evaluate((e) => getComputedStyle(e).color);
  assert.notEqual(color, 'rgb(255, 0, 0)', 'host CSS leaked into the widget');
  assert.ok(!requests.some((u) => u.endsWith('.tiktoken')), 'tokenizer ranks are not fetched up front');
});

test('a question streams a cited answer with sources and a live region', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  await ask('How do I install Frobnicator on Linux?');
  // Streaming: the answer grows while the Stop button is shown.
  await page.locator(tid('docent-stop')).waitFor({ state: 'visible', timeout: T });
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  const answer = turn.locator(tid('docent-answer'));
  assert.match(await answer.innerText(), /According to the docs/);
  const cites = answer.locator('a.docent-cite');
  assert.ok(await cites.count() >= 1, 'citations are links');
  const href = await cites.first().getAttribute('href');
  const title = await cites.first().getAttribute('title');
  assert.ok(title && title.length > 0, 'citation has the source title on hover');
  const sources = turn.locator(tid('docent-source'));
  assert.ok(await sources.count() >= 1);
  assert.equal(await sources.first().getAttribute('href'), href, 'the [1] link is source 1');
  assert.ok((await page.locator(tid('docent-live')).innerText()).length > 0, 'live region announced text');
  if (SCREENSHOT) {
    await page.locator(tid('docent-dialog')).screenshot({ path: SCREENSHOT });
  }
  // What I looked at: sections with scores.
  await turn.locator(`${tid('docent-looked-at')} summary`).click();
  assert.match(await turn.locator(tid('docent-looked-at')).innerText(), /score \d/);
  // The chat request carried the numbered sources and only user/assistant roles.
  const reqs = await upstreamRequests();
  const chat = reqs.filter((r) => r.path.endsWith('/chat/completions') && r.body && r.body.stream);
  assert.ok(chat.length > 0, 'the upstream got a streamed chat request');
  assert.match(lastUserText(chat[chat.length - 1]), /Install on Linux|install script/i);
});

test('a citation link lands on the right section', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  await ask('How do I install Frobnicator on Linux?');
  const turn = await lastTurnSettled();
  const cite = turn.locator(`${tid('docent-answer')} a.docent-cite`).first();
  const href = await cite.getAttribute('href');
  const target = new URL(href, SITE);
  assert.ok(target.hash.length > 1, `citation points at a section: ${href}`);
  await Promise.all([page.waitForURL((u) => u.pathname === target.pathname, { timeout: T }), cite.click()]);
  const anchor = decodeURIComponent(target.hash.slice(1));
  const inView = await page.evaluate((id) => {
    const el = document.getElementById(id);
    if (!el) return 'missing';
    const r = el.getBoundingClientRect();
    return r.top >= -5 && r.top < innerHeight ? 'visible' : `off-screen ${r.top}`;
  }, anchor);
  assert.equal(inView, 'visible', `section #${anchor}`);
  assert.match(await page.evaluate((id) => document.getElementById(id).textContent, anchor), /Linux/);
  // The conversation survives navigation between pages with the widget (sessionStorage).
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  assert.equal(await page.locator(tid('docent-turn')).count(), 1);
  assert.match(await page.locator(tid('docent-question')).first().innerText(), /install Frobnicator/);
});

test('a follow-up is rewritten with the conversation and sends the history', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  await ask('How do I install Frobnicator on Linux?');
  await lastTurnSettled();
  const before = (await upstreamRequests()).length;
  await ask('and how do I update it?');
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  const reqs = (await upstreamRequests()).slice(before);
  const rewrite = reqs.find((r) => r.path.endsWith('/chat/completions') &&
    JSON.stringify(r.body.messages || []).includes('standalone search query'));
  assert.ok(rewrite, 'a rewrite request was made');
  assert.ok(!rewrite.body.stream, 'the rewrite is not streamed');
  const answer = reqs.find((r) => r.path.endsWith('/chat/completions') && r.body.stream);
  assert.ok(answer, 'the answer was streamed');
  const roles = answer.body.messages.filter((m) => m.role !== 'system').map((m) => m.role);
  assert.deepEqual(roles.slice(0, 3), ['user', 'assistant', 'user'], 'history sent before the question');
  assert.match(lastUserText(answer), /update/i);
  await turn.locator(`${tid('docent-looked-at')} summary`).click();
  assert.equal(await turn.locator(tid('docent-rewritten')).count(), 1, 'the rewritten query is shown');
});

test('Stop aborts the stream and keeps the partial answer', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  await ask('SLOW: how do I configure the cache?');
  const turn = page.locator(tid('docent-turn')).last();
  await page.waitForFunction(() => {
    const sr = document.querySelector('[data-docent-host]').shadowRoot;
    const a = sr.querySelector('[data-testid="docent-answer"]');
    return a && a.textContent.length > 5;
  }, null, { timeout: T });
  await page.locator(tid('docent-stop')).click();
  await turn.locator(tid('docent-stopped')).waitFor({ timeout: T });
  const partial = await turn.locator(tid('docent-answer')).innerText();
  assert.ok(partial.length > 0, 'partial answer kept');
  await page.waitForTimeout(500);
  assert.equal(await turn.locator(tid('docent-answer')).innerText(), partial, 'nothing arrives after Stop');
  // The upstream saw the client go away.
  let disconnected = false;
  for (let i = 0; i < 40 && !disconnected; i++) {
    const reqs = await upstreamRequests();
    disconnected = reqs.some((r) => lastUserText(r).includes('SLOW') && r.body.stream && r.disconnected);
    if (!disconnected) await page.waitForTimeout(250);
  }
  assert.ok(disconnected, 'the upstream request was aborted');
  // Send works again.
  assert.equal(await page.locator(tid('docent-send')).count(), 1);
});

test('hostile model output executes nothing and loads nothing from other sites', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  await ask('HOSTILE how do I use the FROB_LOG environment variable to debug Frobnicator?');
  const turn = await lastTurnSettled();
  await page.waitForTimeout(300);
  // The hostile output must actually have been streamed (no abstain, no fallback to excerpts).
  assert.equal(await turn.locator(tid('docent-not-covered')).count(), 0, 'the question was answered');
  assert.match(await turn.locator(tid('docent-answer')).innerText(), /Here is the answer/);
  assert.equal(await page.evaluate(() => typeof window.__pwned), 'undefined', 'model output ran script');
  const answer = turn.locator(tid('docent-answer'));
  assert.equal(await answer.locator('img, script, iframe, object, embed, svg').count(), 0);
  const hrefs = await answer.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') || ''));
  for (const h of hrefs) assert.ok(!/^\s*(javascript|data|vbscript):/i.test(h), `dangerous href ${h}`);
  const onAttrs = await answer.evaluate((el) => [...el.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')));
  assert.deepEqual(onAttrs, []);
  assert.ok(!requests.some((u) => u.includes('evil.example')), 'no request to the attacker host');
  assert.match(await answer.innerText(), /<img|onerror|<script/i, 'raw HTML is shown as text');
  const cites = await answer.locator('a.docent-cite').evaluateAll((as) => as.map((a) => a.textContent));
  assert.ok(!cites.includes('[99]'), 'a citation with no source is not linked');
  // Clicking every link in the answer still executes nothing.
  for (const a of await answer.locator('a:not(.docent-cite)').all()) {
    await a.click({ modifiers: ['Control'] }).catch(() => {});
  }
  assert.equal(await page.evaluate(() => typeof window.__pwned), 'undefined');
});

test('model output cannot show one thing and copy or link another', async () => {
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await openWidget();
  await ask('DECEIVE how do I use the FROB_LOG environment variable to debug Frobnicator?');
  const turn = await lastTurnSettled();
  const answer = turn.locator(tid('docent-answer'));
  assert.match(await answer.innerText(), /sign in at/);
  // The code's copy holds what the page shows: no bidi control to reorder it, no escape to end
  // a terminal's bracketed paste.
  const code = answer.locator('pre code');
  const shown = await code.innerText();
  await answer.locator(tid('docent-copy-code')).click();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  for (const text of [shown, copied]) {
    assert.ok(!/[\u202a-\u202e\u2066-\u2069\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(text), JSON.stringify(text));
  }
  assert.equal(copied.trim(), shown.trim());
  // A host spelt to look like docs.example.com is shown as a browser shows it, after every link.
  const hosts = await answer.locator('.docent-link-host').allInnerTexts();
  assert.deepEqual(hosts.map((h) => h.trim()), ['(xn--dcs-sed.example.com)', '(xn--dcs-sed.example.com)']);
  assert.ok(!requests.some((u) => /xn--dcs-sed|d\u043ecs/.test(u)), 'nothing loaded from it');
});

test('an answer that never ends is cut where nothing more could show, and its stream left', async () => {
  // An upstream that ignores max_tokens: the widget kept every byte (megabytes a second, for
  // as long as the proxy's max_stream_secs allows), copied all of it for every streamed piece,
  // and the page stalled for seconds at a time.
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await openWidget();
  await ask('ENDLESS how do I use the FROB_LOG environment variable to debug Frobnicator?');
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, 'an answer, not an error');
  assert.match(await turn.innerText(), /too long to show in full/);
  assert.match(await turn.locator(tid('docent-answer')).innerText(), /goes on and on/);
  let disconnected = false;
  for (let i = 0; i < 40 && !disconnected; i++) {
    const reqs = await upstreamRequests();
    disconnected = reqs.some((r) => lastUserText(r).includes('ENDLESS') && r.body.stream && r.disconnected);
    if (!disconnected) await page.waitForTimeout(250);
  }
  assert.ok(disconnected, 'the stream was left, and the proxy left the upstream');
  const started = Date.now();
  await page.evaluate(() => 1);
  assert.ok(Date.now() - started < 1000, 'the page answers at once');
});

test('upstream errors, rate limits and moderation show clear messages and keep the question', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  await ask('ERROR500 how do I install Frobnicator on Linux with the install script?');
  let turn = await lastTurnSettled();
  let err = turn.locator(tid('docent-error'));
  assert.equal(await err.count(), 1);
  assert.match(await err.innerText(), /language model|answer service/i);
  assert.equal(await turn.locator(tid('docent-retry')).count(), 1);
  assert.match(await turn.locator(tid('docent-question')).innerText(), /ERROR500 how do I install Frobnicator/);

  await ask('RATE429 how do I install Frobnicator on Linux with the install script?');
  turn = await lastTurnSettled();
  err = turn.locator(tid('docent-error'));
  assert.match(await err.innerText(), /Try again in 7 seconds/);

  await ask('MIDSTREAM_ERROR how do I install Frobnicator on Linux: download the release archive and run the install script?');
  turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 1, 'mid-stream error shown');
  assert.ok((await turn.locator(tid('docent-answer')).innerText()).length > 0, 'partial answer kept');

  await ask('FLAGME how do I install Frobnicator on Linux with the install script?');
  turn = await lastTurnSettled();
  assert.match(await turn.locator(tid('docent-error')).innerText(), /content filter/i);

  // Retry re-asks the same question in place.
  const n = await page.locator(tid('docent-turn')).count();
  await turn.locator(tid('docent-retry')).click();
  await lastTurnSettled();
  assert.equal(await page.locator(tid('docent-turn')).count(), n);
});

test('without a proxy the widget answers with cited excerpts', async () => {
  await page.goto(pageUrl({}));
  await openWidget();
  await ask('How do I limit the cache size?');
  const turn = await lastTurnSettled();
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  const answer = turn.locator(tid('docent-answer'));
  assert.match(await answer.innerText(), /cache/i);
  assert.ok(await answer.locator('a.docent-cite').count() >= 1);
  assert.ok(!requests.some((u) => u.includes('/v1/')), 'no proxy calls');
});

test('a hostile docs page is shown as text, loads nothing, and its 200 KB title stays short', async (t) => {
  // e2e/widget/hostile: script, event handlers, javascript: links and raw HTML in a Markdown and a
  // built page, whose title and headings are 200 KB long. The title went whole into the answer,
  // a citation's title, the sources list and "What I looked at" (megabytes of page, a turn
  // 100,000 pixels tall) and into sessionStorage, which two such turns filled for the site.
  if (!process.env.DOCENT_E2E_HOSTILE_DIR) return t.skip('DOCENT_E2E_HOSTILE_DIR not set');
  await page.goto(pageUrl({ index: '/hostile/index.bin' }));
  await openWidget();
  for (const question of ['zorblax setup', 'flimflam setup']) {
    await ask(question);
    const turn = await lastTurnSettled();
    await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
    assert.match(await turn.locator(tid('docent-answer')).innerText(), /setup/i);
    await turn.locator(`${tid('docent-looked-at')} summary`).click();
    const html = await turn.evaluate((e) => e.innerHTML);
    assert.ok(html.length < 40_000, `a turn of ${html.length} bytes of HTML`);
    assert.equal(await turn.locator('img, script, iframe, object, embed, svg, style').count(), 0);
    const hrefs = await turn.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') || ''));
    for (const h of hrefs) assert.ok(/^(\/hostile\/|#)/.test(h), `a link off the site: ${h}`);
    const onAttrs = await turn.evaluate((e) => [...e.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')));
    assert.deepEqual(onAttrs, []);
    // A title of one long word wraps inside the panel.
    const past = await page.locator(tid('docent-dialog')).evaluate((d) => {
      const right = d.getBoundingClientRect().right;
      return [...d.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > right + 1).map((e) => `${e.tagName}.${e.className}`);
    });
    assert.deepEqual(past, [], 'nothing runs past the panel');
  }
  assert.equal(await page.evaluate(() => typeof window.__pwned), 'undefined', 'a docs page ran script');
  assert.ok(!requests.some((u) => u.includes('evil.example')), 'nothing loaded from the page\'s hosts');
  const saved = await page.evaluate(() => Object.values(sessionStorage).reduce((n, v) => n + v.length, 0));
  assert.ok(saved < 60_000, `the conversation keeps ${saved} characters in sessionStorage`);
});

test('a starter question is asked when clicked, and the starters leave with the empty state', async () => {
  await page.goto(pageUrl({ starters: 'How do I limit the cache size? | Is <b>this</b> "escaped"?' }));
  await openWidget();
  const starters = page.locator(tid('docent-starter'));
  assert.equal(await starters.count(), 2);
  assert.equal(await starters.nth(1).innerText(), 'Is <b>this</b> "escaped"?', 'starter text is shown as text');
  await starters.first().click();
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-question')).innerText(), 'How do I limit the cache size?');
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  assert.equal(await page.locator(tid('docent-starter')).count(), 0, 'no starters once a question is asked');
});

test('an unreachable proxy falls back to excerpts with a notice', async () => {
  await page.goto(pageUrl({ proxy: 'http://127.0.0.1:9' }));
  await openWidget();
  await ask('How do I limit the cache size?');
  const turn = await lastTurnSettled();
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  assert.match(await turn.locator(tid('docent-notice')).innerText(), /reach/i);
});

test('a proxy without a chat model gives excerpts, and is asked once instead of every time', async () => {
  await page.goto(pageUrl({ proxy: NOCHAT }));
  await openWidget();
  await ask('How do I limit the cache size?');
  let turn = await lastTurnSettled();
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  assert.ok(await turn.locator(`${tid('docent-answer')} a.docent-cite`).count() >= 1);
  await ask('How do I install it?');
  turn = await lastTurnSettled();
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  // /healthz said there is no chat model: no chat request, so no 503 in the console.
  assert.deepEqual(requests.filter((u) => u.includes('/v1/chat/completions')), []);
  assert.equal(requests.filter((u) => u.endsWith('/healthz')).length, 1, 'asked once');
});

test('a question the search is unsure of is answered with a note, and the model is told', async () => {
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await openWidget();
  const before = (await upstreamRequests()).length;
  // Its words are half the docs' (cache, limit, size) and half not (reader, kubernetes).
  await ask('Can I limit the cache size per reader in kubernetes?');
  const turn = await lastTurnSettled();
  const note = turn.locator(tid('docent-uncertain'));
  await note.waitFor({ timeout: T });
  assert.match(await note.innerText(), /may not fully answer your question/);
  assert.equal(await turn.locator(tid('docent-not-covered')).count(), 0, 'answered, not declined');
  assert.ok((await turn.locator(tid('docent-answer')).innerText()).trim().length > 0, 'an answer');
  const chat = (await upstreamRequests()).slice(before)
    .find((r) => r.path.endsWith('/chat/completions') && r.body && r.body.stream);
  assert.ok(chat, 'the model was asked');
  assert.match(lastUserText(chat), /not sure these sources cover this question/);
  // A question the docs answer carries no note.
  await ask('How do I limit the cache size?');
  const sure = await lastTurnSettled();
  await sure.locator(tid('docent-answer')).waitFor({ timeout: T });
  // (The double's stock answer is not in these docs, so the citation check may add its own note.)
  assert.equal(await sure.locator(tid('docent-uncertain')).filter({ hasText: /may not fully answer/ }).count(), 0);
});

test('a sentence not found in the source it cites is marked when the answer completes', async () => {
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await openWidget();
  await ask('CITECHECK how do I install Frobnicator on Linux with the install script?');
  const turn = await lastTurnSettled();
  const marks = turn.locator(`${tid('docent-answer')} ${tid('docent-unsupported')}`);
  await marks.first().waitFor({ timeout: T });
  assert.equal(await marks.count(), 1, 'only the sentence that is not in the install page');
  assert.equal((await marks.first().innerText()).trim(), 'not found in [1]');
  // The marker follows the second sentence; the first, from the docs, has none.
  const text = await turn.locator(tid('docent-answer')).innerText();
  assert.match(text, /64 GB of memory\s*\[1\]\.\s*not found in \[1\]/);
  assert.doesNotMatch(text, /run the install script\s*\[1\]\.\s*not found/);
  // The turn carries the uncertain note (the search's own wording wins when it was unsure too:
  // the made-up keyword lowers its confidence).
  const note = turn.locator(tid('docent-uncertain'));
  assert.match(await note.innerText(), /not found in the sources cited|may not fully answer/);
  // Saved with the conversation: a reload shows the marker again.
  await page.reload();
  await openWidget();
  const restored = page.locator(`${tid('docent-turn')}`).last();
  await restored.locator(tid('docent-unsupported')).first().waitFor({ timeout: T });
  assert.equal(await restored.locator(tid('docent-unsupported')).count(), 1);
});

test('a question the docs do not cover gets no model call and the closest sections', async () => {
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await openWidget();
  const before = (await upstreamRequests()).length;
  await ask('zebra migration patterns serengeti savanna');
  const turn = await lastTurnSettled();
  await turn.locator(tid('docent-not-covered')).waitFor({ timeout: T });
  const chats = (await upstreamRequests()).slice(before).filter((r) => r.path.endsWith('/chat/completions'));
  assert.equal(chats.length, 0, 'no LLM call below the floor');
});

test('keyboard: the shortcut opens, Esc closes and returns focus, Tab stays inside', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await page.locator(tid('docent-launcher')).waitFor({ timeout: T });
  await page.locator('#host-input').focus();
  await page.keyboard.press('Control+k');
  await page.locator(tid('docent-dialog')).waitFor({ state: 'visible', timeout: T });
  await page.waitForFunction(() => {
    const sr = document.querySelector('[data-docent-host]').shadowRoot;
    return sr.activeElement && sr.activeElement.getAttribute('data-testid') === 'docent-input';
  }, null, { timeout: T });
  for (let i = 0; i < 8; i++) await page.keyboard.press('Tab');
  const inside = await page.evaluate(() => {
    const host = document.querySelector('[data-docent-host]');
    return document.activeElement === host && !!host.shadowRoot.activeElement?.closest('[data-testid="docent-dialog"]');
  });
  assert.ok(inside, 'focus trapped in the dialog');
  await page.keyboard.press('Escape');
  await page.locator(tid('docent-dialog')).waitFor({ state: 'detached', timeout: T });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'host-input', 'focus is back where it was');
  assert.equal(await page.locator(tid('docent-launcher')).getAttribute('aria-expanded'), 'false');
  // Opened from the launcher, closed with Esc: focus goes back to the launcher.
  await page.locator(tid('docent-launcher')).focus();
  await page.keyboard.press('Enter');
  await page.locator(tid('docent-dialog')).waitFor({ state: 'visible', timeout: T });
  await page.keyboard.press('Escape');
  await page.locator(tid('docent-dialog')).waitFor({ state: 'detached', timeout: T });
  const focused = await page.evaluate(() => document.querySelector('[data-docent-host]').shadowRoot.activeElement?.getAttribute('data-testid'));
  assert.equal(focused, 'docent-launcher');
});

test('keyboard only: ask, reach every source link and button with Tab, Esc returns focus', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await page.locator(tid('docent-launcher')).waitFor({ timeout: T });
  await page.locator('#host-input').focus();
  await page.keyboard.press('Control+k');
  await page.locator(tid('docent-dialog')).waitFor({ state: 'visible', timeout: T });
  await page.waitForFunction(() => document.querySelector('[data-docent-host]').shadowRoot.activeElement
    ?.getAttribute('data-testid') === 'docent-input', null, { timeout: T });
  await page.keyboard.type('How do I install Frobnicator on Linux?');
  await page.keyboard.press('Enter');
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  assert.ok(await turn.locator(tid('docent-source')).count() >= 1, 'the answer lists sources');
  // Tab from the question box round the dialog until focus wraps back to it, noting each stop.
  await page.evaluate(() => { window.__tabStops = new Set(); });
  let wrapped = false;
  for (let i = 0; i < 80 && !wrapped; i++) {
    await page.keyboard.press('Tab');
    wrapped = await page.evaluate(() => {
      const a = document.querySelector('[data-docent-host]').shadowRoot.activeElement;
      if (a) window.__tabStops.add(a);
      return a?.getAttribute('data-testid') === 'docent-input';
    });
  }
  assert.ok(wrapped, 'Tab goes round the dialog and back to the question box');
  const report = await page.evaluate(() => {
    const dialog = document.querySelector('[data-docent-host]').shadowRoot.querySelector('[data-testid="docent-dialog"]');
    // A closed <details> keeps its content laid out (getClientRects) but out of the tab order.
    const visible = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden'
      && (e.tagName === 'SUMMARY' || !e.closest('details:not([open])'));
    const all = [...dialog.querySelectorAll('a[href], button, textarea, select, summary')].filter(visible);
    const name = (e) => `${e.tagName.toLowerCase()} ${e.getAttribute('data-testid') || ''} ${(e.textContent || '').trim().slice(0, 40)}`;
    return {
      missed: all.filter((e) => !window.__tabStops.has(e)).map(name),
      sources: all.filter((e) => e.getAttribute('data-testid') === 'docent-source' && window.__tabStops.has(e)).length,
      cites: all.filter((e) => e.classList.contains('docent-cite') && window.__tabStops.has(e)).length,
      buttons: all.filter((e) => e.tagName === 'BUTTON' && window.__tabStops.has(e)).map((e) => e.getAttribute('data-testid')),
    };
  });
  assert.deepEqual(report.missed, [], 'every link and button in the dialog is reachable with Tab');
  assert.equal(report.sources, await turn.locator(tid('docent-source')).count(), 'every source link');
  assert.ok(report.cites >= 1, 'the citation links');
  for (const b of ['docent-new', 'docent-close', 'docent-send', 'docent-copy', 'docent-retry-answer', 'docent-feedback-up', 'docent-feedback-down']) {
    assert.ok(report.buttons.includes(b), `${b} reached with Tab: ${report.buttons.join(', ')}`);
  }
  // Esc closes from anywhere in the dialog: focus is back in the host page where it was.
  await page.keyboard.press('Escape');
  await page.locator(tid('docent-dialog')).waitFor({ state: 'detached', timeout: T });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'host-input', 'focus is back where it was');
});

/** The text of the widget's polite live region as the accessibility tree has it (CDP). */
async function liveRegionInAxTree(cdp) {
  const { nodes } = await cdp.send('Accessibility.getFullAXTree');
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  const prop = (n, name) => (n.properties || []).find((p) => p.name === name)?.value.value;
  // The live region's root: polite, and its parent is not in the same live region.
  const live = nodes.filter((n) => prop(n, 'live') === 'polite' && n.role?.value !== 'StaticText' &&
    !(n.parentId && byId.get(n.parentId) && prop(byId.get(n.parentId), 'live')));
  const text = (n) => (n.role?.value === 'StaticText' ? n.name?.value || '' :
    (n.childIds || []).map((id) => byId.get(id)).filter(Boolean).map(text).join(''));
  return live.map((n) => ({ atomic: prop(n, 'atomic') === true, text: text(n) }));
}

test('the live region announces the answer starting and complete with its sources, not its text', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Accessibility.enable');
  // Every text the live region takes, in order (what a screen reader is given to announce).
  await page.evaluate(() => {
    const live = document.querySelector('[data-docent-host]').shadowRoot.querySelector('[data-testid="docent-live"]');
    window.__announced = [];
    new MutationObserver(() => {
      const t = live.textContent;
      if (t && window.__announced[window.__announced.length - 1] !== t) window.__announced.push(t);
    }).observe(live, { childList: true, characterData: true, subtree: true });
  });
  // While a long answer streams, the live region says it is being written, and stays so.
  await ask('SLOW: how do I configure the cache?');
  const answerLength = () => page.locator(tid('docent-answer')).last().evaluate((e) => e.textContent.length);
  await page.waitForFunction(() => {
    const a = document.querySelector('[data-docent-host]').shadowRoot.querySelector('[data-testid="docent-answer"]');
    return a && a.textContent.length > 20;
  }, null, { timeout: T });
  const first = await liveRegionInAxTree(cdp);
  const grown = await answerLength();
  await page.waitForFunction((n) => {
    const a = document.querySelector('[data-docent-host]').shadowRoot.querySelector('[data-testid="docent-answer"]');
    return a.textContent.length > n + 40;
  }, grown, { timeout: T });
  const second = await liveRegionInAxTree(cdp);
  assert.equal(first.length, 1, `one polite live region in the accessibility tree: ${JSON.stringify(first)}`);
  assert.ok(first[0].atomic, 'the live region is atomic');
  assert.equal(first[0].text, 'Writing the answer…');
  assert.equal(second[0].text, 'Writing the answer…', 'the live region does not follow the streamed text');
  await page.locator(tid('docent-stop')).click();
  await page.locator(tid('docent-stopped')).waitFor({ timeout: T });
  assert.equal((await liveRegionInAxTree(cdp))[0].text, 'Stopped.');

  await page.evaluate(() => { window.__announced = []; });
  await ask('How do I install Frobnicator on Linux?');
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  const n = await turn.locator(tid('docent-source')).count();
  assert.ok(n >= 1);
  const done = `Answer complete, with ${n} source${n === 1 ? '' : 's'}.`;
  await page.waitForFunction((want) => document.querySelector('[data-docent-host]').shadowRoot
    .querySelector('[data-testid="docent-live"]').textContent === want, done, { timeout: T });
  assert.deepEqual(await liveRegionInAxTree(cdp), [{ atomic: true, text: done }]);
  assert.deepEqual(await page.evaluate(() => window.__announced),
    ['Searching the docs…', 'Writing the answer…', done], 'three announcements, none of them the answer text');
  await cdp.detach();
});

test('the widget follows the site theme (html.dark, data-theme, forced)', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  const host = page.locator('[data-docent-host]');
  await host.waitFor({ state: 'attached', timeout: T });
  assert.equal(await host.getAttribute('data-docent-theme'), 'light');
  await page.evaluate(() => document.documentElement.classList.add('dark'));
  await page.waitForFunction(() => document.querySelector('[data-docent-host]').getAttribute('data-docent-theme') === 'dark');
  await page.evaluate(() => { document.documentElement.classList.remove('dark'); document.documentElement.setAttribute('data-theme', 'dark'); });
  await page.waitForFunction(() => document.querySelector('[data-docent-host]').getAttribute('data-docent-theme') === 'dark');
  await page.goto(pageUrl({ proxy: PROXY, theme: 'dark' }));
  await page.waitForFunction(() => document.querySelector('[data-docent-host]')?.getAttribute('data-docent-theme') === 'dark');
});

test('feedback posts to the proxy and raises a DOM event; copy and new conversation work', async () => {
  await page.goto(pageUrl({ proxy: PROXY }));
  await page.evaluate(() => {
    window.__feedback = [];
    document.addEventListener('docent:feedback', (e) => window.__feedback.push(e.detail));
  });
  await openWidget();
  await ask('How do I install Frobnicator on Linux?');
  const turn = await lastTurnSettled();
  const feedbackReq = page.waitForRequest((r) => r.url().endsWith('/v1/feedback'), { timeout: T });
  await turn.locator(tid('docent-feedback-up')).click();
  const req = await feedbackReq;
  assert.equal(JSON.parse(req.postData()).rating, 'up');
  const events = await page.evaluate(() => window.__feedback);
  assert.equal(events.length, 1);
  assert.equal(events[0].rating, 'up');
  assert.match(events[0].question, /install/);
  assert.equal(await turn.locator(tid('docent-feedback-up')).getAttribute('aria-pressed'), 'true');
  await turn.locator(tid('docent-copy')).click();
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(clip, /According to the docs/);
  await page.locator(tid('docent-new')).click();
  assert.equal(await page.locator(tid('docent-turn')).count(), 0);
});

test('a cached answer is marked, and "not helpful" takes it out of the cache', async () => {
  await page.goto(pageUrl({ proxy: CACHED }));
  await openWidget();
  const question = 'How do I configure the cache size limit?';
  const answerOnce = async () => {
    await ask(question);
    const turn = await lastTurnSettled();
    assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
    return turn;
  };
  const upstreamCalls = async () => (await upstreamRequests())
    .filter((r) => r.path.endsWith('/chat/completions') && lastUserText(r).includes(question)).length;
  const before = await upstreamCalls();
  const first = await answerOnce();
  assert.equal(await first.locator(tid('docent-cached')).count(), 0, 'the first answer is fresh');
  assert.equal(await upstreamCalls(), before + 1);
  // a new conversation, the same single-turn question: replayed from the cache
  await page.locator(tid('docent-new')).click();
  const second = await answerOnce();
  await second.locator(tid('docent-cached')).waitFor({ state: 'visible', timeout: T });
  assert.equal(await upstreamCalls(), before + 1, 'no upstream call for a cached answer');
  // "not helpful" on the cached answer sends its cache key, and the proxy evicts it
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/feedback'), { timeout: T }),
    second.locator(tid('docent-feedback-down')).click(),
  ]);
  const body = JSON.parse(response.request().postData());
  assert.equal(body.rating, 'down');
  assert.match(String(body.cache_key), /^[0-9a-f]{64}$/, `the cache key goes with the rating: ${JSON.stringify(body)}`);
  assert.ok(response.ok(), `the proxy took the feedback: ${response.status()}`);
  await page.locator(tid('docent-new')).click();
  const third = await answerOnce();
  assert.equal(await third.locator(tid('docent-cached')).count(), 0, 'evicted: answered afresh');
  assert.equal(await upstreamCalls(), before + 2);
});

test('the inline <docent-chat> element answers in place', async () => {
  await page.goto(pageUrl({ proxy: PROXY, inline: '1' }));
  const panel = page.locator(`docent-chat ${tid('docent-dialog')}`);
  await panel.waitFor({ state: 'visible', timeout: T });
  assert.equal(await panel.getAttribute('role'), 'region');
  assert.equal(await page.locator(tid('docent-launcher')).count(), 0);
  const input = page.locator(`docent-chat ${tid('docent-input')}`);
  await input.fill('How do I change the number of parallel jobs?');
  await input.press('Enter');
  const turn = await lastTurnSettled();
  assert.ok(await turn.locator(`${tid('docent-answer')} a.docent-cite`).count() >= 1);
});

test('small screens get a full-screen dialog', async () => {
  await page.setViewportSize({ width: 390, height: 760 });
  await page.goto(pageUrl({ proxy: PROXY }));
  await openWidget();
  const box = await page.locator(tid('docent-dialog')).boundingBox();
  assert.ok(box.width >= 389 && box.height >= 750, `dialog ${box.width}x${box.height}`);
});

// ---------------------------------------------------------------- accessibility (axe-core)

test('the axe-core check sees inside the widget\'s shadow root and fails on a violation there', async () => {
  await page.setContent(`<!doctype html><html lang="en"><head><title>t</title></head><body><main>
    <div data-docent-host></div></main></body></html>`);
  await page.evaluate(() => {
    const sr = document.querySelector('[data-docent-host]').attachShadow({ mode: 'open' });
    sr.innerHTML = '<button type="button" aria-label="Ask again">Retry</button>' +
      '<p style="color:#000">Text with a <a href="#x" style="color:#222;text-decoration:none">link</a> in it.</p>';
  });
  const ids = (await axeViolations(page, { include: WIDGET })).map((v) => v.id).sort();
  assert.deepEqual(ids, ['label-content-name-mismatch', 'link-in-text-block']);
  await assert.rejects(assertAccessible(page, 'a broken widget', { include: WIDGET }), /label-content-name-mismatch/);
});

const VIEWPORTS = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 800 } };

for (const theme of ['light', 'dark']) {
  for (const [device, viewport] of Object.entries(VIEWPORTS)) {
    test(`axe-core finds no WCAG 2.2 A/AA violation in the widget in any state (${theme}, ${device})`, async () => {
      await page.setViewportSize(viewport);
      const check = (state) => assertAccessible(page, `${state}, ${theme}, ${device} ${viewport.width}x${viewport.height}`, { include: WIDGET });
      await page.goto(pageUrl({ proxy: PROXY, theme, rewrite: 'off', starters: 'How do I limit the cache size? | What does FROB_LOG do?' }));
      await page.locator(tid('docent-launcher')).waitFor({ timeout: T });
      await check('closed');
      await openWidget();
      await check('open and empty');

      await ask('SLOW: how do I configure the cache?');
      await page.waitForFunction(() => {
        const a = document.querySelector('[data-docent-host]').shadowRoot.querySelector('[data-testid="docent-answer"]');
        return a && a.textContent.length > 20;
      }, null, { timeout: T });
      await check('streaming');
      await page.locator(tid('docent-stop')).click();
      await lastTurnSettled();

      let turn;
      await ask('How do I install Frobnicator on Linux?');
      turn = await lastTurnSettled();
      assert.ok(await turn.locator(tid('docent-source')).count() >= 1, await turn.innerText());
      await turn.locator(`${tid('docent-looked-at')} summary`).click();
      await turn.locator(tid('docent-copy')).click();
      await check('answered with sources (copied, "What I looked at" open)');

      await ask('zebra migration patterns serengeti savanna');
      turn = await lastTurnSettled();
      await turn.locator(tid('docent-not-covered')).waitFor({ timeout: T });
      await check("the docs don't cover this");

      await ask('ERROR500 how do I install Frobnicator on Linux with the install script?');
      turn = await lastTurnSettled();
      await turn.locator(tid('docent-error')).waitFor({ timeout: T });
      await check('an error');

      await page.reload();
      await openWidget();
      assert.equal(await page.locator(tid('docent-turn')).count(), 4, 'the conversation is restored');
      await check('a restored conversation');

      // An index with a docs version: the scope picker shows once the index is loaded.
      await page.goto(pageUrl({ theme, index: '/docent/scoped.bin' }));
      await openWidget();
      await ask('How do I limit the cache size?');
      turn = await lastTurnSettled();
      await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
      await page.locator(tid('docent-scope-pick')).waitFor({ state: 'visible', timeout: T });
      await check('the scope picker, with an excerpts answer');
    });
  }
}

test('the offline demo site\'s pages pass axe-core, light and dark, and with the widget answering', async (t) => {
  if (!DEMO) return t.skip('DOCENT_E2E_DEMO is not set (run.sh writes the demo site)');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const pages = fs.readdirSync(DEMO, { recursive: true }).filter((f) => String(f).endsWith('.html')).map(String).sort();
  assert.ok(pages.length >= 5, `demo pages: ${pages.join(', ')}`);
  // The page-level landmark rules too: one banner, one main, unique landmark names.
  const rules = ['landmark-no-duplicate-banner', 'landmark-no-duplicate-contentinfo', 'landmark-no-duplicate-main',
    'landmark-one-main', 'landmark-unique', 'page-has-heading-one'];
  for (const theme of ['light', 'dark']) {
    await page.setViewportSize(theme === 'dark' ? VIEWPORTS.phone : VIEWPORTS.desktop);
    await page.goto(`${SITE}/demo/index.html`);
    await page.evaluate((th) => localStorage.setItem('docent-demo-theme', th), theme);
    for (const p of pages) {
      await page.goto(`${SITE}/demo/${p.split(path.sep).join('/')}`);
      await assertAccessible(page, `demo ${p}, ${theme}`, { rules });
    }
  }
  // The page most readers land on, with the widget open and an extractive answer shown.
  await page.goto(`${SITE}/demo/index.html`);
  await openWidget();
  await ask('How do I install docent?');
  const turn = await lastTurnSettled();
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  await assertAccessible(page, 'demo index.html with the widget answering (dark, phone)', { rules });
});

test('a split index answers after fetching only the shards the question needs', async (t) => {
  const dir = process.env.DOCENT_E2E_SPLIT_DIR;
  if (!dir) return t.skip('DOCENT_E2E_SPLIT_DIR is not set (run.sh writes the split index)');
  const fs = await import('node:fs');
  const shards = fs.readdirSync(dir).filter((f) => /^index-[pt]-[0-9a-f]{8}\.bin$/.test(f));
  assert.ok(shards.length >= 4, `shards: ${shards.join(', ')}`);
  await page.goto(pageUrl({ index: '/split/index.bin' }));
  await openWidget();
  await ask('How do I turn on the answer cache?');
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  await turn.locator(tid('docent-excerpt-label')).waitFor({ timeout: T });
  const answer = await turn.locator(tid('docent-answer')).innerText();
  assert.match(answer, /cache/i, answer);
  assert.ok(await turn.locator(`${tid('docent-answer')} a.docent-cite`).count() > 0, 'cited');
  const fetched = (kind) => new Set(requests.filter((u) => u.includes(`/split/index-${kind}-`))).size;
  assert.ok(fetched('p') >= 1 && fetched('t') >= 1, `postings ${fetched('p')}, texts ${fetched('t')}`);
  assert.ok(fetched('p') + fetched('t') < shards.length,
    `fetched ${fetched('p') + fetched('t')} of ${shards.length} shards: only what the question needs`);
  // A second question fetches at most the shards it did not have yet.
  const before = requests.length;
  await ask('How do I turn on the answer cache?');
  await lastTurnSettled();
  const again = requests.slice(before).filter((u) => u.includes('/split/index-'));
  assert.deepEqual(again, [], 'the same question needs no new shard');
});

test('a split index with vectors fetches only the nearest clusters\' vectors', async (t) => {
  const dir = process.env.DOCENT_E2E_VSPLIT_DIR;
  const vec = process.env.DOCENT_E2E_VEC;
  if (!dir || !vec) return t.skip('DOCENT_E2E_VSPLIT_DIR is not set (run.sh writes the index with vectors)');
  const fs = await import('node:fs');
  const vectorShards = fs.readdirSync(dir).filter((f) => /^index-v-[0-9a-f]{8}\.bin$/.test(f));
  assert.ok(vectorShards.length > 16, `vector shards: ${vectorShards.length} (more than one probe's 16)`);
  const before = requests.length;
  const upstreamBefore = (await upstreamRequests()).length;
  await page.goto(pageUrl({ index: '/vsplit/index.bin', proxy: vec, rewrite: 'off' }));
  await openWidget();
  await ask('How do I turn on the answer cache?');
  const turn = await lastTurnSettled();
  assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
  assert.ok(await turn.locator(`${tid('docent-answer')} a.docent-cite`).count() > 0, 'cited');
  const fetched = new Set(requests.slice(before).filter((u) => /\/vsplit\/index-v-/.test(u))
    .map((u) => u.split('/').pop()));
  // Exactly the clusters the native reader probes for the question (`docent search --shards`:
  // 16 probes' worth of chunks, Coarse::probed), never all of them.
  const { spawnSync } = await import('node:child_process');
  const native = spawnSync(process.env.DOCENT_E2E_DOCENT, ['search', `${dir}/index.bin`,
    'How do I turn on the answer cache?', '--shards', '--nprobe', '16',
    '--embed-base-url', `${UPSTREAM}/v1`], { encoding: 'utf8', env: { ...process.env, OPENAI_API_KEY: 'e2e-double' } });
  const line = native.stderr.split('\n').filter((l) => l.startsWith('{"postings"')).pop();
  assert.ok(line, `docent search --shards: ${native.stderr}`);
  const probed = JSON.parse(line).vectors;
  assert.ok(probed.length >= 1 && probed.length < vectorShards.length, `probed ${probed.length}`);
  assert.deepEqual([...fetched].sort(), [...probed].sort(),
    `fetched ${fetched.size} of ${vectorShards.length} vector shards: the nearest clusters only`);
  // The proxy embedded the question with the index's model, and the sources sent to the model
  // are the cache sections.
  const reqs = (await upstreamRequests()).slice(upstreamBefore);
  const embed = reqs.find((r) => r.path.endsWith('/embeddings'));
  assert.ok(embed && JSON.stringify(embed.body).includes('answer cache'), 'question embedded');
  assert.equal(embed.body.model, 'double-bow');
  const chat = reqs.filter((r) => r.path.endsWith('/chat/completions') && r.body && r.body.stream);
  assert.ok(chat.length > 0, 'a streamed chat request');
  assert.match(lastUserText(chat[chat.length - 1]), /cache/i);
});

test('a proxy that embeds no questions still answers an index with vectors, by its words', async (t) => {
  if (!process.env.DOCENT_E2E_VSPLIT_DIR) return t.skip('DOCENT_E2E_VSPLIT_DIR is not set');
  // PROXY has no [serve.embeddings]: /v1/embeddings answers 503 no_embedding_model.
  const warnings = [];
  const onConsole = (m) => { if (m.type() === 'warning') warnings.push(m.text()); };
  page.on('console', onConsole);
  try {
    await page.goto(pageUrl({ index: '/vsplit/index.bin', proxy: PROXY, rewrite: 'off' }));
    await openWidget();
    for (const q of ['How do I turn on the answer cache?', 'What does the proxy log?']) {
      await ask(q);
      const turn = await lastTurnSettled();
      assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
      assert.ok(await turn.locator(`${tid('docent-answer')} a.docent-cite`).count() > 0, 'cited');
    }
    assert.equal(warnings.filter((w) => /embeds no questions/.test(w)).length, 1, warnings.join('\n'));
  } finally {
    page.off('console', onConsole);
  }
});

test('a failing embedding provider leaves the question searched by its words, answered', async (t) => {
  const vec = process.env.DOCENT_E2E_VEC;
  if (!process.env.DOCENT_E2E_VSPLIT_DIR || !vec) return t.skip('DOCENT_E2E_VSPLIT_DIR is not set');
  // The upstream double answers /embeddings with 500 for EMBED500: the proxy says 502
  // upstream_error, and the widget searches by words instead of failing the turn.
  const warnings = [];
  const onConsole = (m) => { if (m.type() === 'warning') warnings.push(m.text()); };
  page.on('console', onConsole);
  try {
    const upstreamBefore = (await upstreamRequests()).length;
    await page.goto(pageUrl({ index: '/vsplit/index.bin', proxy: vec, rewrite: 'off' }));
    await openWidget();
    await ask('EMBED500 How do I turn on the answer cache?');
    const turn = await lastTurnSettled();
    assert.equal(await turn.locator(tid('docent-error')).count(), 0, await turn.innerText());
    assert.ok(await turn.locator(`${tid('docent-answer')} a.docent-cite`).count() > 0, 'cited');
    const reqs = (await upstreamRequests()).slice(upstreamBefore);
    assert.ok(reqs.some((r) => r.path.endsWith('/embeddings')), 'the proxy tried to embed it');
    const chat = reqs.filter((r) => r.path.endsWith('/chat/completions') && r.body && r.body.stream);
    assert.ok(chat.length > 0, 'and the answer was still asked for');
    assert.match(lastUserText(chat[chat.length - 1]), /^\[1\] [^\n]*#[^)\n]*cache/im, 'with the cache sections its words found');
    assert.ok(warnings.some((w) => /searching by words, the question was not embedded/.test(w)), warnings.join('\n'));
  } finally {
    page.off('console', onConsole);
  }
});

test('a shard from another build is refused with a reload message, never answered from', async (t) => {
  if (!process.env.DOCENT_E2E_SPLIT_DIR) return t.skip('DOCENT_E2E_SPLIT_DIR is not set');
  await page.goto(pageUrl({ index: '/split-bad/index.bin' }));
  await openWidget();
  await ask('How do I turn on the answer cache?');
  const turn = await lastTurnSettled();
  const error = turn.locator(tid('docent-error'));
  await error.waitFor({ timeout: T });
  assert.match(await error.innerText(), /changed while it was loading.*Reload the page/s);
  assert.equal((await turn.locator(tid('docent-answer')).innerText()).trim(), '', 'no answer from a wrong shard');
  assert.equal(await turn.locator(tid('docent-source')).count(), 0, 'no sources either');
});

test('a turn the docs do not answer links to the site\'s support page with the question', async () => {
  await page.goto(pageUrl({ support: '/support?q={question}', 'support-label': 'Ask our team' }));
  await page.evaluate(() => {
    window.__answers = [];
    document.addEventListener('docent:answer', (e) => window.__answers.push(e.detail));
  });
  await openWidget();
  await ask('Can I bake sourdough bread with it?');
  const declined = await lastTurnSettled();
  const link = declined.locator(tid('docent-support'));
  await link.waitFor({ timeout: T });
  assert.equal(await link.innerText(), 'Ask our team');
  assert.equal(await link.getAttribute('href'), '/support?q=Can%20I%20bake%20sourdough%20bread%20with%20it%3F');
  assert.equal(await link.getAttribute('rel'), 'noopener');
  await ask('How do I limit the cache size?');
  const answered = await lastTurnSettled();
  await answered.locator(tid('docent-answer')).waitFor({ timeout: T });
  const outcomes = await page.evaluate(() => window.__answers.map((a) => a.outcome));
  assert.equal(outcomes[0], 'declined');
  // Only where the docs did not answer, or may not have fully: never under an answered turn.
  assert.equal(await answered.locator(tid('docent-support')).isVisible(), outcomes[1] !== 'answered', outcomes[1]);
  // An excerpt answer is copied as the docs wrote it, without the escapes that keep its text text.
  await answered.locator(tid('docent-copy')).click();
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(clip, /cache\.max_size/);
  assert.ok(!clip.includes('\\_'), clip);
  await assertAccessible(page, 'a support link', { include: WIDGET });
  // A script address is refused with the key's name, in place of the widget.
  await page.goto(pageUrl({ support: 'javascript:alert(1)' }));
  await page.locator(tid('docent-launcher')).click();
  const error = page.locator(tid('docent-load-error'));
  await error.waitFor({ timeout: T });
  assert.match(await error.innerText(), /`support` must be an http\(s\) or mailto: URL/);
});

test('a model answer saying the docs do not cover it counts as declined', async () => {
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await openWidget();
  await ask('How do I configure the cache NOTCOVERED?');
  const turn = await lastTurnSettled();
  const note = turn.locator(tid('docent-declined'));
  await note.waitFor({ timeout: T });
  assert.match(await note.innerText(), /don't seem to cover this/);
  assert.equal(await turn.locator(tid('docent-uncertain')).count(), 0);
  assert.match(await turn.locator(tid('docent-answer')).innerText(), /does not seem to cover/);
});

test('each question\'s outcome is recorded, and docent report makes a page of them', async (t) => {
  const file = process.env.DOCENT_E2E_ANALYTICS;
  const docent = process.env.DOCENT_E2E_DOCENT;
  if (!file || !docent) return t.skip('DOCENT_E2E_ANALYTICS is not set (run.sh enables [analytics])');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { execFileSync } = await import('node:child_process');
  await page.goto(pageUrl({ proxy: PROXY, rewrite: 'off' }));
  await page.evaluate(() => {
    window.__answers = [];
    document.addEventListener('docent:answer', (e) => window.__answers.push(e.detail));
  });
  await openWidget();
  const questions = ['How can I limit the size of the cache?', 'Can I bake sourdough bread with it?'];
  for (const q of questions) {
    await ask(q);
    await lastTurnSettled();
  }
  const events = await page.evaluate(() => window.__answers);
  assert.deepEqual(events.map((e) => e.question), questions, 'a docent:answer DOM event per turn');
  // The double's stock answer is not in the test docs: the citation check marks it, so the
  // first turn is uncertain; sourdough is declined by the search.
  assert.deepEqual(events.map((e) => e.outcome), ['uncertain', 'declined']);
  assert.match(events[0].index, /^[0-9a-f]{16}$/);
  // The proxy got them too (POST /v1/events) and wrote them, with no IP or reader id.
  const deadline = Date.now() + 5000;
  let records = [];
  while (Date.now() < deadline) {
    records = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    if (questions.every((q) => records.some((r) => r.question === q))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const mine = records.filter((r) => questions.includes(r.question));
  assert.deepEqual(mine.map((r) => r.outcome), ['uncertain', 'declined'], JSON.stringify(mine));
  assert.ok(mine[0].sections.length > 0 && mine[0].sections[0].url.startsWith('/docs/'));
  assert.ok(!fs.readFileSync(file, 'utf8').includes('127.0.0.1'), 'no IP address in the records');
  // A few more days of questions, so the page has a history to show.
  const day = 86400;
  const now = Math.floor(Date.now() / 1000);
  const extra = [
    ['Where are the logs of what people asked?', 'uncertain', 3],
    ['Does it collect data about my readers?', 'uncertain', 3],
    ['Does docent collect any data about readers?', 'declined', 2],
    ['How do I run it in kubernetes?', 'declined', 1],
    ['How do I install the widget?', 'answered', 1],
  ].map(([question, outcome, ago]) => JSON.stringify({ v: 1, type: 'question', ts: now - ago * day, question, outcome,
    sections: [{ url: '/docs/config.html#cache', title: 'Configuration' }] }));
  const log = path.join(path.dirname(file), 'report-input.jsonl');
  // This test's two records and the days above (not the other tests' traffic through the proxy).
  fs.writeFileSync(log, [...extra, ...mine.map((r) => JSON.stringify(r))].join('\n') + '\n');
  const out = path.join(path.dirname(file), 'report.html');
  execFileSync(docent, ['report', log, '--out', out, '--site', 'Frobnicator docs']);
  // The report's Content-Security-Policy forbids every script, axe-core's too: this context
  // bypasses it for the accessibility check, and the page is checked to carry it.
  const reportContext = await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP: true });
  const report = await reportContext.newPage();
  await report.goto(`file://${out}`);
  assert.match(fs.readFileSync(out, 'utf8'), /http-equiv="Content-Security-Policy" content="default-src 'none'/);
  const text = await report.locator('main').innerText();
  assert.match(text, /What readers asked/);
  assert.match(text, /What the docs could not answer/);
  assert.match(text, /data about (my )?readers/);
  await assertAccessible(report, 'the docent report page');
  if (SCREENSHOT) {
    await report.setViewportSize({ width: 1000, height: 900 });
    await report.screenshot({ path: path.join(path.dirname(SCREENSHOT), 'report.png'), fullPage: false });
  }
  await reportContext.close();
});
