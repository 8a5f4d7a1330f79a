// A static file server for built sites (127.0.0.1 only), the way static hosts serve them:
// `/a/b` → a/b, a/b.html or a/b/index.html; unknown paths → 404.html with status 404.
//
//   node e2e/sites/serve.mjs <folder> <port>
//
// Prints "listening <url>" once ready.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const [root, port] = [path.resolve(process.argv[2] ?? '.'), Number(process.argv[3] ?? 0)];
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml',
  '.bin': 'application/octet-stream', '.tiktoken': 'text/plain; charset=utf-8', '.png': 'image/png', '.woff2': 'font/woff2',
};

function resolve(urlPath) {
  let rel;
  try {
    rel = decodeURIComponent(urlPath.split('?')[0]);
  } catch {
    return null;
  }
  const base = path.join(root, path.normalize(rel).replace(/^(\.\.[/\\])+/, ''));
  if (!base.startsWith(root)) return null;
  const candidates = rel.endsWith('/') ? [path.join(base, 'index.html')] : [base, `${base}.html`, path.join(base, 'index.html')];
  return candidates.find((f) => fs.existsSync(f) && fs.statSync(f).isFile()) ?? null;
}

const server = http.createServer((req, res) => {
  const file = resolve(req.url || '/');
  const status = file ? 200 : 404;
  const body = file ?? path.join(root, '404.html');
  res.writeHead(status, { 'Content-Type': TYPES[path.extname(body)] ?? 'application/octet-stream' });
  if (fs.existsSync(body)) fs.createReadStream(body).pipe(res);
  else res.end('not found');
});
// Idle connections are never closed by the server: the tests' synchronous `docent inspect` runs
// block Node's event loop, so the client's own keep-alive timer could not retire a socket before
// this server's 5 s timeout closed it, and the next fetch on that socket failed ("fetch failed",
// intermittently on a loaded machine). The client closes idle sockets itself.
server.keepAliveTimeout = 0;
server.listen(port, '127.0.0.1', () => console.log(`listening http://127.0.0.1:${server.address().port}`));
