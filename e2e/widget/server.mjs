// A small static server for the widget e2e tests and measurements (127.0.0.1 only).
//
//   /docent/<file>   the built widget (DOCENT_WIDGET_DIR, default dist/widget) and the index
//                    (DOCENT_E2E_INDEX → /docent/index.bin; DOCENT_E2E_SCOPED_INDEX, an index
//                    with a namespace, → /docent/scoped.bin)
//   /split/<file>    a split index (DOCENT_E2E_SPLIT_DIR: the entry index.bin and its shards)
//   /vsplit/<file>   a split index with vectors by cluster (DOCENT_E2E_VSPLIT_DIR)
//   /split-bad/<file> the same, with every shard's last byte flipped (a stale or mixed deploy)
//   /hostile/<file>  the index of e2e/widget/hostile's pages (DOCENT_E2E_HOSTILE_DIR)
//   /demo/<path>     the offline demo site (DOCENT_E2E_DEMO, `docent demo --offline` output)
//   /page?...        a test page with the widget; query: proxy, inline=1, theme, starters,
//                    launcher, title, index (default /docent/index.bin)
//   /<path>          files from e2e/widget/site (the docs pages the index was built from)
//
// Prints "listening <url>" once ready. With COI=1 it sends COOP/COEP headers (cross-origin
// isolation gives performance.now() 5 µs resolution for measurements).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const widgetDir = path.resolve(process.env.DOCENT_WIDGET_DIR || path.join(root, 'dist/widget'));
const siteDir = path.join(here, 'site');
const indexFile = process.env.DOCENT_E2E_INDEX ? path.resolve(process.env.DOCENT_E2E_INDEX) : null;
const scopedIndexFile = process.env.DOCENT_E2E_SCOPED_INDEX ? path.resolve(process.env.DOCENT_E2E_SCOPED_INDEX) : null;
const splitDir = process.env.DOCENT_E2E_SPLIT_DIR ? path.resolve(process.env.DOCENT_E2E_SPLIT_DIR) : null;
const vsplitDir = process.env.DOCENT_E2E_VSPLIT_DIR ? path.resolve(process.env.DOCENT_E2E_VSPLIT_DIR) : null;
const hostileDir = process.env.DOCENT_E2E_HOSTILE_DIR ? path.resolve(process.env.DOCENT_E2E_HOSTILE_DIR) : null;
const demoDir = process.env.DOCENT_E2E_DEMO ? path.resolve(process.env.DOCENT_E2E_DEMO) : null;
const port = Number(process.env.PORT || 0);
const coi = process.env.COI === '1';
const gzip = process.env.GZIP === '1';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json',
  '.bin': 'application/octet-stream', '.tiktoken': 'text/plain; charset=utf-8', '.png': 'image/png',
};

function escapeAttr(s) {
  return String(s).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

function page(q) {
  const attrs = {
    'data-index': q.get('index') || '/docent/index.bin',
    'data-title': q.get('title') || 'Ask the Frobnicator docs',
  };
  for (const k of ['proxy', 'theme', 'starters', 'launcher', 'shortcut', 'rewrite', 'namespace', 'config',
    'support', 'support-label']) {
    if (q.get(k) != null) attrs['data-' + k] = q.get(k);
  }
  const attrText = Object.entries(attrs).map(([k, v]) => `${k}="${escapeAttr(v)}"`).join(' ');
  const inline = q.get('inline') === '1'
    ? `<docent-chat ${attrText.replace(/data-/g, '')}></docent-chat>` : '';
  const script = q.get('inline') === '1'
    ? '<script type="module" src="/docent/docent.js" data-launcher="none"></script>'
    : `<script type="module" src="/docent/docent.js" ${attrText}></script>`;
  return `<!doctype html><html lang="en" class="${escapeAttr(q.get('htmlclass') || '')}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Frobnicator docs</title>
<style>body{font:16px/1.5 sans-serif;max-width:720px;margin:40px auto} button.host-btn{all:unset} *{color:red!important}</style>
</head><body><main><h1>Frobnicator documentation</h1><p>Test page for the docent widget.</p>
<p><a href="/docs/install.html">Install</a> · <a href="/docs/config.html">Configure</a></p>
<input id="host-input" aria-label="host page input">${inline}</main>${script}</body></html>`;
}

function send(res, status, body, type, req) {
  const headers = { 'content-type': type, 'cache-control': 'no-cache' };
  if (gzip && req && /\bgzip\b/.test(req.headers['accept-encoding'] || '')) {
    body = zlib.gzipSync(body, { level: 9 });
    headers['content-encoding'] = 'gzip';
  }
  if (coi) {
    headers['cross-origin-opener-policy'] = 'same-origin';
    headers['cross-origin-embedder-policy'] = 'require-corp';
    headers['cross-origin-resource-policy'] = 'same-origin';
  }
  res.writeHead(status, headers);
  res.end(body);
}

function serveFile(res, file, req) {
  fs.readFile(file, (err, data) => {
    if (err) return send(res, 404, `not found: ${path.basename(file)}`, 'text/plain');
    send(res, 200, data, TYPES[path.extname(file)] || 'application/octet-stream', req);
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const p = decodeURIComponent(url.pathname);
  if (p.includes('..')) return send(res, 400, 'bad path', 'text/plain');
  if (p === '/page') return send(res, 200, page(url.searchParams), TYPES['.html'], req);
  if (p === '/docent/index.bin' && indexFile) return serveFile(res, indexFile, req);
  // A split index's shards sit next to its entry.
  if (indexFile && /^\/docent\/[^/]+-[ptv]-[0-9a-f]{8}\.bin$/.test(p)) {
    return serveFile(res, path.join(path.dirname(indexFile), p.slice('/docent/'.length)), req);
  }
  if (p === '/docent/scoped.bin' && scopedIndexFile) return serveFile(res, scopedIndexFile, req);
  if (p.startsWith('/split/') && splitDir) return serveFile(res, path.join(splitDir, p.slice('/split/'.length)), req);
  if (p.startsWith('/vsplit/') && vsplitDir) return serveFile(res, path.join(vsplitDir, p.slice('/vsplit/'.length)), req);
  if (p.startsWith('/hostile/') && hostileDir) return serveFile(res, path.join(hostileDir, p.slice('/hostile/'.length)), req);
  if (p.startsWith('/split-bad/') && splitDir) {
    const name = p.slice('/split-bad/'.length);
    if (!/^index-[pt]-/.test(name)) return serveFile(res, path.join(splitDir, name), req);
    return fs.readFile(path.join(splitDir, name), (err, data) => {
      if (err) return send(res, 404, 'not found', 'text/plain');
      data[data.length - 1] ^= 0xff;
      send(res, 200, data, TYPES['.bin'], req);
    });
  }
  if (p.startsWith('/demo/') && demoDir) {
    const rel = p.slice('/demo/'.length);
    return serveFile(res, path.join(demoDir, rel === '' || rel.endsWith('/') ? rel + 'index.html' : rel), req);
  }
  if (p.startsWith('/docent/')) return serveFile(res, path.join(widgetDir, p.slice('/docent/'.length)), req);
  if (p.startsWith('/bench/')) return serveFile(res, path.join(root, 'dist/widget-bench', p.slice('/bench/'.length)), req);
  if (p === '/' || p === '') return send(res, 200, page(url.searchParams), TYPES['.html'], req);
  return serveFile(res, path.join(siteDir, p), req);
});

server.listen(port, '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
