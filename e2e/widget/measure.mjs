// Widget measurements in headless Chromium (no criterion): run via `e2e/widget/run.sh --measure`.
//
// 1. gzip sizes of the built files (loader; widget js + wasm + css).
// 2. Bytes downloaded before the first answer on a ~100-page site (the Cargo book index served by
//    run.sh): a fresh browser opens the page, hovers and opens the launcher, asks one question in
//    offline mode (no proxy: the answer needs no network), and sums the encoded (gzip) transfer
//    sizes of every resource until the answer is on screen.
// 3. Hybrid search p50/p95 over 10k chunks × 384 dims, timed inside the page with performance.now()
//    (the page is cross-origin isolated, so timers have 5 µs resolution), using the bench build
//    of the widget (scripts/build-widget --bench → dist/widget-bench), with the vector and lexical
//    parts timed separately.
// 4. Query-rewrite latency: in the real widget against `docent serve` + the upstream double (which
//    answers the rewrite non-streamed), the time from question submit (performance mark
//    `docent:ask`) to search start (`docent:search`), with data-rewrite="always" vs "off", p50/p95
//    over DOCENT_MEASURE_REWRITE_RUNS questions each (default 20), plus the rewrite round trip
//    alone (`docent:rewrite-start` → `docent:rewrite-end`).
//
// 5. Streamed chunk → screen: in the real widget against `docent serve` + the upstream double
//    (a chunk every 15 ms), for every piece of the stream the widget reads (performance mark
//    `docent:chunk`), the time until the answer's DOM changes (a MutationObserver) and until the
//    next animation frame after that (requestAnimationFrame), and how many frames went by
//    between arrival and DOM update (0 = on screen in the first frame after it arrived).
//
// 6. A split index (big sites; not in the default list): for each question of
//    DOCENT_MEASURE_QUESTIONS (a file, one per line; default bench/split/pg-questions.txt), a fresh
//    browser asks it offline and the encoded bytes of index.bin and its shards are summed until
//    the answer is on screen; then every question again in one page, counting only the new shard
//    bytes of each. Run with the PostgreSQL manual:
//    DOCENT_MEASURE_ONLY=shards DOCENT_MEASURE_CORPUS=/usr/share/doc/postgresql-doc-15/html GZIP=1 \
//      e2e/widget/run.sh --measure
//    A prebuilt split index with vectors of the upstream double's model (`docent index … --split
//    always --embed openai --model double-bow --dims 384 --embed-base-url <the double>`) given as
//    DOCENT_MEASURE_INDEX=DIR/index.bin is measured hybrid: run.sh copies its shards and starts a
//    proxy that embeds each question with that model, and the vector shards count too.
//
// DOCENT_MEASURE_ONLY=sizes,search,rewrite,frame,shards (comma list) runs only those parts
// (default: all but shards).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../lib/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const SITE = process.env.DOCENT_E2E_SITE;
const QUESTION = process.env.DOCENT_MEASURE_QUESTION || 'How do I set the target directory for build artifacts?';
const CHUNKS = Number(process.env.DOCENT_MEASURE_CHUNKS || 10000);
const DIMS = Number(process.env.DOCENT_MEASURE_DIMS || 384);
const RUNS = Number(process.env.DOCENT_MEASURE_RUNS || 300);
const REWRITE_RUNS = Number(process.env.DOCENT_MEASURE_REWRITE_RUNS || 20);
const PROXY = process.env.DOCENT_E2E_PROXY;
const FRAME_RUNS = Number(process.env.DOCENT_MEASURE_FRAME_RUNS || 10);
const ONLY = new Set((process.env.DOCENT_MEASURE_ONLY || 'sizes,search,rewrite,frame').split(',').map((x) => x.trim()));
if (!SITE) throw new Error('run via e2e/widget/run.sh --measure');

// Questions about the measured corpus (the Cargo book); cycled, each asked in a fresh conversation.
const REWRITE_QUESTIONS = [
  'How do I set the target directory for build artifacts?',
  'how do workspaces share a lock file',
  'Wie veröffentliche ich ein Crate auf crates.io?',
  'what does cargo vendor do',
  'How can I override a dependency with a local path?',
  'Which profile settings control debug info?',
];

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.round((s.length - 1) * p))] : NaN;
};

const gz = (file) => zlib.gzipSync(fs.readFileSync(file), { level: 9 }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

const dist = path.join(root, 'dist/widget');
const files = ['docent.js', 'docent-widget.js', 'docent-widget_bg.wasm', 'docent.css', 'cl100k_base.tiktoken'];
console.log('== gzip sizes (level 9) of dist/widget');
const sizes = {};
for (const f of files) {
  sizes[f] = gz(path.join(dist, f));
  console.log(`  ${f.padEnd(24)} ${String(fs.statSync(path.join(dist, f)).size).padStart(9)} B  ${kb(sizes[f]).padStart(10)} gz`);
}
const widgetTotal = sizes['docent-widget.js'] + sizes['docent-widget_bg.wasm'] + sizes['docent.css'];
console.log(`  loader                   ${kb(sizes['docent.js'])} gz (target ≤ 20 KB)`);
console.log(`  widget js+wasm+css       ${kb(widgetTotal)} gz (limit 250 KB)`);
if (process.env.DOCENT_E2E_INDEX) {
  console.log(`  index (${path.basename(process.env.DOCENT_MEASURE_CORPUS || 'corpus')}) ${kb(fs.statSync(process.env.DOCENT_E2E_INDEX).size)} raw, ${kb(gz(process.env.DOCENT_E2E_INDEX))} gz`);
}

const browser = await launchChromium(process.env.XARGS ? [process.env.XARGS] : []);
try {
  if (ONLY.has('sizes')) await firstAnswerBytes();
  if (ONLY.has('search')) await searchBenchmark();
  if (ONLY.has('rewrite')) await rewriteLatency();
  if (ONLY.has('frame')) await chunkToFrame();
  if (ONLY.has('shards')) await splitBytes();
  console.log(`\nmachine: ${process.arch}, Chromium ${browser.version()}, node ${process.version}, ${new Date().toISOString()}`);
} finally {
  await browser.close();
}

async function firstAnswerBytes() {
  // ---- bytes before the first answer
  const context = await browser.newContext();
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${SITE}/page`);
  const launcher = page.locator('[data-testid="docent-launcher"]');
  await launcher.hover();
  await launcher.click();
  const input = page.locator('[data-testid="docent-input"]');
  await input.fill(QUESTION);
  await input.press('Enter');
  await page.waitForFunction(() => {
    const sr = document.querySelector('[data-docent-host]').shadowRoot;
    return sr.querySelector('[data-testid="docent-feedback-up"]') || sr.querySelector('[data-testid="docent-error"]');
  }, null, { timeout: 60000 });
  const firstAnswerMs = Date.now() - t0;
  const error = await page.locator('[data-testid="docent-error"]').count();
  const entries = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => ({
    name: e.name, encoded: e.encodedBodySize, transfer: e.transferSize, decoded: e.decodedBodySize,
  })));
  const nav = await page.evaluate(() => performance.getEntriesByType('navigation')[0].encodedBodySize);
  const pick = (suffix) => entries.filter((e) => new URL(e.name).pathname.endsWith(suffix)).reduce((a, e) => a + e.encoded, 0);
  const parts = {
    'docent.js (loader)': pick('/docent.js'),
    'docent-widget.js': pick('/docent-widget.js'),
    'docent-widget_bg.wasm': pick('.wasm'),
    'docent.css': pick('.css'),
    'index.bin': pick('index.bin'),
    'index shards': entries.filter((e) => /-[ptv]-[0-9a-f]{8}\.bin$/.test(new URL(e.name).pathname)).reduce((a, e) => a + e.encoded, 0),
    'cl100k_base.tiktoken': pick('.tiktoken'),
  };
  const total = Object.values(parts).reduce((a, b) => a + b, 0);
  console.log(`\n== bytes downloaded before the first answer (gzip transfer, offline answer${error ? ', ANSWER FAILED' : ''})`);
  for (const [k, v] of Object.entries(parts)) console.log(`  ${k.padEnd(24)} ${kb(v).padStart(10)}`);
  console.log(`  total (loader+widget+index) ${kb(total)} (target ≤ 900 KB); host page ${kb(nav)}; first answer after ${firstAnswerMs} ms`);
  const chunkCount = Number(process.env.DOCENT_MEASURE_CHUNK_COUNT || 0);
  if (chunkCount && (process.env.DOCENT_MEASURE_EMBED || 'none') === 'none') {
    // Binary vectors (docent index's default) + one f32 scale per chunk; sign bits barely compress.
    const vec = chunkCount * (DIMS / 8 + 4);
    console.log(`  + ${DIMS}-d binary vectors for ${chunkCount} chunks (not in this lexical index): ~${kb(vec)} → total with vectors ~${kb(total + vec)}`);
  }
  await context.close();
}

async function searchBenchmark() {
  // ---- search benchmark
  const bctx = await browser.newContext();
  const bpage = await bctx.newPage();
  await bpage.goto(`${SITE}/docs/install.html`);
  const isolated = await bpage.evaluate(() => self.crossOriginIsolated);
  const result = await bpage.evaluate(async ([chunks, dims, runs]) => {
    const mod = await import('/bench/docent-widget.js');
    await mod.default({ module_or_path: '/bench/docent-widget_bg.wasm' });
    mod.search_benchmark(1000, dims, 50); // warm-up
    return JSON.parse(mod.search_benchmark(chunks, dims, runs));
  }, [CHUNKS, DIMS, RUNS]);
  console.log(`\n== hybrid search in headless Chromium (${result.chunks} chunks × ${result.dims} dims, ${result.runs} queries, timer ${isolated ? '5 µs (cross-origin isolated)' : '100 µs'})`);
  console.log(`  p50 ${result.p50_ms.toFixed(3)} ms   p95 ${result.p95_ms.toFixed(3)} ms   mean ${result.mean_ms.toFixed(3)} ms   (target p50 ≤ 1 ms)`);
  for (const [mode, r] of Object.entries(result.modes || {})) {
    console.log(`  ${mode.padEnd(8)} p50 ${r.p50_ms.toFixed(3)} ms   p95 ${r.p95_ms.toFixed(3)} ms`);
  }
  if (result.kernel_p50_ms !== undefined) console.log(`  int8 scan alone (dot products of one query with ${result.chunks} vectors) p50 ${result.kernel_p50_ms.toFixed(3)} ms`);
  if (result.load_ms) console.log(`  loading the synthetic index (checksum, validation, unpacking): ${Object.entries(result.load_ms).map(([q, ms]) => `${q} ${ms.toFixed(1)} ms`).join(', ')}`);
  console.log(`  synthetic index ${kb(result.index_bytes)}, built and loaded in ${result.build_ms.toFixed(0)} ms; BM25 index derived from its text in ${(result.lexical_build_ms ?? NaN).toFixed(0)} ms (once per page load, right after loading); first search on it ${(result.first_search_ms ?? NaN).toFixed(3)} ms (not in the percentiles)`);
  await bctx.close();
}

async function rewriteLatency() {
  // ---- query rewrite: submit → search start, rewrite on vs off
  if (!PROXY) throw new Error('DOCENT_E2E_PROXY is not set (run via e2e/widget/run.sh --measure)');
  console.log(`\n== query rewrite latency (widget → docent serve → upstream double, non-streamed rewrite; ${REWRITE_RUNS} questions per mode)`);
  const stats = {};
  for (const mode of ['off', 'always']) {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${SITE}/page?proxy=${encodeURIComponent(PROXY)}&rewrite=${mode}`);
    const launcher = page.locator('[data-testid="docent-launcher"]');
    await launcher.click();
    const input = page.locator('[data-testid="docent-input"]');
    const ask = async (q) => {
      await page.evaluate(() => performance.clearMarks());
      await input.fill(q);
      await input.press('Enter');
      await page.waitForFunction(() => {
        const sr = document.querySelector('[data-docent-host]').shadowRoot;
        return sr.querySelector('[data-testid="docent-feedback-up"]') || sr.querySelector('[data-testid="docent-error"]')
          || sr.querySelector('[data-testid="docent-not-covered"]');
      }, null, { timeout: 60000 });
      const failed = await page.locator('[data-testid="docent-error"]').count();
      if (failed) throw new Error(`rewrite=${mode}: the question failed: ${await page.locator('[data-testid="docent-error"]').first().innerText()}`);
      const m = await page.evaluate(() => {
        const at = (n) => { const e = performance.getEntriesByName(n, 'mark'); return e.length ? e[e.length - 1].startTime : null; };
        return { ask: at('docent:ask'), search: at('docent:search'), rs: at('docent:rewrite-start'), re: at('docent:rewrite-end') };
      });
      await page.locator('[data-testid="docent-new"]').click();
      if (m.ask == null || m.search == null) throw new Error(`rewrite=${mode}: performance marks missing (${JSON.stringify(m)}); is dist/widget current?`);
      return m;
    };
    await ask(REWRITE_QUESTIONS[0]); // warm-up: downloads and checks the index
    const toSearch = [];
    const roundTrip = [];
    for (let i = 0; i < REWRITE_RUNS; i++) {
      const m = await ask(REWRITE_QUESTIONS[i % REWRITE_QUESTIONS.length]);
      toSearch.push(m.search - m.ask);
      if (m.rs != null && m.re != null) roundTrip.push(m.re - m.rs);
    }
    if (mode === 'always' && roundTrip.length !== REWRITE_RUNS) throw new Error(`rewrite=always: only ${roundTrip.length} of ${REWRITE_RUNS} questions were rewritten`);
    if (mode === 'off' && roundTrip.length) throw new Error('rewrite=off: a rewrite request was made');
    stats[mode] = { toSearch, roundTrip };
    console.log(`  rewrite=${mode.padEnd(6)} submit → search start  p50 ${pct(toSearch, 0.5).toFixed(1)} ms   p95 ${pct(toSearch, 0.95).toFixed(1)} ms`
      + (roundTrip.length ? `   (rewrite round trip p50 ${pct(roundTrip, 0.5).toFixed(1)} ms, p95 ${pct(roundTrip, 0.95).toFixed(1)} ms)` : ''));
    await ctx.close();
  }
  const d50 = pct(stats.always.toSearch, 0.5) - pct(stats.off.toSearch, 0.5);
  const d95 = pct(stats.always.toSearch, 0.95) - pct(stats.off.toSearch, 0.95);
  console.log(`  cost of the rewrite: +${d50.toFixed(1)} ms at p50, +${d95.toFixed(1)} ms at p95 before search starts (upstream double: no model latency; add the chat model's own non-streamed latency for a real deployment)`);
}

async function chunkToFrame() {
  // ---- streamed chunk → DOM → frame
  if (!PROXY) throw new Error('DOCENT_E2E_PROXY is not set (run via e2e/widget/run.sh --measure)');
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${SITE}/page?proxy=${encodeURIComponent(PROXY)}&rewrite=off`);
  await page.locator('[data-testid="docent-launcher"]').click();
  const input = page.locator('[data-testid="docent-input"]');
  const dom = [];
  const frames = [];
  const reads = [];
  for (let i = 0; i < FRAME_RUNS + 1; i++) {
    await page.evaluate(() => {
      // Frame callbacks and answer mutations, timestamped on the page's clock.
      window.__frames = [];
      window.__dom = [];
      window.__tick = true;
      const tick = () => { window.__frames.push(performance.now()); if (window.__tick) requestAnimationFrame(tick); };
      requestAnimationFrame(tick);
      const sr = document.querySelector('[data-docent-host]').shadowRoot;
      window.__mo = new MutationObserver((records) => {
        const now = performance.now();
        if (records.some((r) => (r.target.nodeType === 1 ? r.target : r.target.parentElement)?.closest?.('[data-testid="docent-answer"]'))) window.__dom.push(now);
      });
      window.__mo.observe(sr, { subtree: true, childList: true, characterData: true });
    });
    await input.fill(REWRITE_QUESTIONS[i % REWRITE_QUESTIONS.length]);
    await input.press('Enter');
    await page.waitForFunction(() => {
      const sr = document.querySelector('[data-docent-host]').shadowRoot;
      return sr.querySelector('[data-testid="docent-feedback-up"]') || sr.querySelector('[data-testid="docent-error"]') || sr.querySelector('[data-testid="docent-not-covered"]');
    }, null, { timeout: 60000 });
    if (await page.locator('[data-testid="docent-error"]').count()) throw new Error(`frame: the question failed: ${await page.locator('[data-testid="docent-error"]').first().innerText()}`);
    const m = await page.evaluate(() => {
      window.__tick = false;
      window.__mo.disconnect();
      return { chunks: performance.getEntriesByName('docent:chunk', 'mark').map((e) => e.startTime), dom: window.__dom, frames: window.__frames };
    });
    await page.locator('[data-testid="docent-new"]').click();
    if (i === 0) continue; // warm-up: downloads and checks the index
    if (!m.chunks.length) throw new Error('frame: no docent:chunk marks; is dist/widget current?');
    // Each read that changed the answer: the first mutation after it, before the next read.
    for (let k = 0; k < m.chunks.length; k++) {
      const t = m.chunks[k];
      const next = k + 1 < m.chunks.length ? m.chunks[k + 1] : Infinity;
      const d = m.dom.find((x) => x >= t);
      if (d === undefined || d >= next) continue;
      const f = m.frames.find((x) => x >= d);
      if (f === undefined) continue;
      reads.push(m.frames.filter((x) => x > t && x < d).length);
      dom.push(d - t);
      frames.push(f - t);
    }
  }
  await ctx.close();
  const missed = reads.filter((n) => n > 0).length;
  console.log(`\n== streamed chunk → screen (widget → docent serve → upstream double, a chunk every 15 ms; ${FRAME_RUNS} answers, ${dom.length} reads that changed the answer)`);
  console.log(`  arrival → answer DOM updated   p50 ${pct(dom, 0.5).toFixed(2)} ms   p99 ${pct(dom, 0.99).toFixed(2)} ms   max ${Math.max(...dom).toFixed(2)} ms`);
  console.log(`  arrival → next frame callback  p50 ${pct(frames, 0.5).toFixed(2)} ms   p99 ${pct(frames, 0.99).toFixed(2)} ms   max ${Math.max(...frames).toFixed(2)} ms`);
  console.log(`  frames that went by between arrival and DOM update: 0 for ${dom.length - missed} of ${dom.length} reads (target: every chunk on screen in the first frame after it arrives)`);
}

async function splitBytes() {
  const file = process.env.DOCENT_MEASURE_QUESTIONS || path.join(root, 'bench/split/pg-questions.txt');
  const questions = fs.readFileSync(file, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
  const isIndex = (u) => /\/docent\/(index\.bin|[^/]+-[ptv]-[0-9a-f]{8}\.bin)$/.test(new URL(u).pathname);
  // With vectors, a proxy embeds each question with the index's model (run.sh starts it).
  const pageUrl = process.env.DOCENT_E2E_VEC ? `${SITE}/page?proxy=${encodeURIComponent(process.env.DOCENT_E2E_VEC)}` : `${SITE}/page`;
  const indexBytes = (page) => page.evaluate(() => performance.getEntriesByType('resource')
    .map((e) => ({ name: e.name, encoded: e.encodedBodySize })));
  async function answer(page, q) {
    const input = page.locator('[data-testid="docent-input"]');
    const before = await page.evaluate(() => document.querySelector('[data-docent-host]').shadowRoot
      .querySelectorAll('[data-testid="docent-turn"]').length);
    const t0 = Date.now();
    await input.fill(q);
    await input.press('Enter');
    await page.waitForFunction((n) => {
      const turns = document.querySelector('[data-docent-host]').shadowRoot.querySelectorAll('[data-testid="docent-turn"]');
      const t = turns[n];
      return t && (t.querySelector('[data-testid="docent-feedback-up"]') || t.querySelector('[data-testid="docent-error"]'));
    }, before, { timeout: 60000 });
    return Date.now() - t0;
  }
  console.log(`\n== split index: index bytes per question (gzip transfer, ${process.env.DOCENT_E2E_VEC ? 'hybrid: questions embedded by a proxy' : 'offline answers'}, ${questions.length} questions)`);
  const cold = [];
  const coldMs = [];
  for (const q of questions) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(pageUrl);
    await page.locator('[data-testid="docent-launcher"]').click();
    coldMs.push(await answer(page, q));
    const fetched = (await indexBytes(page)).filter((e) => isIndex(e.name));
    const bytes = fetched.reduce((a, e) => a + e.encoded, 0);
    if (!cold.length) {
      // What the first question's bytes are: the entry, then each kind of shard.
      const kind = (e) => (/-([ptv])-[0-9a-f]{8}\.bin$/.exec(new URL(e.name).pathname) || [, 'entry'])[1];
      const by = {};
      for (const e of fetched) by[kind(e)] = (by[kind(e)] || { n: 0, b: 0 }), by[kind(e)].n++, by[kind(e)].b += e.encoded;
      const names = { entry: 'entry', p: 'postings', v: 'vectors', t: 'texts' };
      console.log(`  first question by file kind: ${Object.entries(by).map(([k, v]) => `${names[k]} ${kb(v.b)} (${v.n} files)`).join(', ')}`);
    }
    cold.push(bytes);
    await context.close();
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(pageUrl);
  await page.locator('[data-testid="docent-launcher"]').click();
  const later = [];
  const laterMs = [];
  const foundMs = [];
  const fetchUntilSearch = [];
  const searchOnly = [];
  let seen = 0;
  for (const [i, q] of questions.entries()) {
    const ms = await answer(page, q);
    const total = (await indexBytes(page)).filter((e) => isIndex(e.name)).reduce((a, e) => a + e.encoded, 0);
    if (i > 0) {
      later.push(total - seen);
      laterMs.push(ms);
      // Submit → search done and every shard it needed fetched (performance marks).
      const [found, fetchMs, searchMs] = await page.evaluate(() => {
        const last = (n) => performance.getEntriesByName(n).at(-1)?.startTime;
        return [last('docent:found') - last('docent:ask'), last('docent:search') - last('docent:ask'), last('docent:found') - last('docent:search')];
      });
      foundMs.push(found);
      fetchUntilSearch.push(fetchMs);
      searchOnly.push(searchMs);
    }
    seen = total;
  }
  await context.close();
  console.log(`  first question, cold:      ${kb(cold[0])}`);
  console.log(`  any question, cold:        median ${kb(pct(cold, 0.5))}, max ${kb(Math.max(...cold))}`);
  console.log(`  each later question (new): median ${kb(pct(later, 0.5))}, max ${kb(Math.max(...later))}`);
  console.log(`  question → answer on screen: cold median ${pct(coldMs, 0.5)} ms (index fetch included), later median ${pct(laterMs, 0.5)} ms`);
  console.log(`  question → search done and its shards fetched (later questions): median ${pct(foundMs, 0.5).toFixed(1)} ms, p95 ${pct(foundMs, 0.95).toFixed(1)} ms`);
  console.log(`    of which: submit → (embedding,) shards fetched: median ${pct(fetchUntilSearch, 0.5).toFixed(1)} ms; search and text shards: median ${pct(searchOnly, 0.5).toFixed(1)} ms`);
}
