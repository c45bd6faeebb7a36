// A small static server for the browser tests and the web benchmark: serves folders
// at URL prefixes and single files (the models), answers Range requests, optionally
// sends COOP/COEP (cross-origin isolation, for threads), logs every request, and can
// cut a model download short once (to test resuming).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const kTypes = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.gguf': 'application/octet-stream',
  '.png': 'image/png',
};

// routes: [{ prefix: '/', dir }] and files: { '/models/x.gguf': '/path/x.gguf' }.
export async function startServer({ routes = [], files = {}, isolate = false } = {}) {
  const log = []; // { method, path, range, status }
  let cutNext = null; // { path, afterBytes }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const entry = { method: req.method, path: url.pathname, range: req.headers.range ?? null, status: 0 };
    log.push(entry);
    if (isolate) {
      res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
      res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
    }
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    res.setHeader('Cache-Control', 'no-store');
    let file = files[url.pathname];
    if (!file) {
      for (const r of routes) {
        if (!url.pathname.startsWith(r.prefix)) continue;
        const rel = decodeURIComponent(url.pathname.slice(r.prefix.length)) || 'index.html';
        const full = path.resolve(r.dir, rel);
        if (full.startsWith(path.resolve(r.dir)) && fs.existsSync(full) && fs.statSync(full).isFile()) {
          file = full;
          break;
        }
      }
    }
    if (!file) {
      entry.status = 404;
      res.writeHead(404).end('not found');
      return;
    }
    const size = fs.statSync(file).size;
    let start = 0;
    let end = size - 1;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    res.setHeader('Content-Type', kTypes[path.extname(file)] ?? 'application/octet-stream');
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('ETag', `"${size}-${Math.floor(fs.statSync(file).mtimeMs)}"`);
    if (m) {
      start = Number(m[1]);
      end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
      if (start >= size) {
        entry.status = 416;
        res.writeHead(416, { 'Content-Range': `bytes */${size}` }).end();
        return;
      }
      entry.status = 206;
      res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': end - start + 1 });
    } else {
      entry.status = 200;
      res.writeHead(200, { 'Content-Length': size });
    }
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    const stream = fs.createReadStream(file, { start, end });
    if (cutNext && cutNext.path === url.pathname) {
      const limit = cutNext.afterBytes;
      cutNext = null;
      let sent = 0;
      entry.cut = true;
      stream.on('data', (chunk) => {
        sent += chunk.length;
        if (sent >= limit) {
          stream.destroy();
          res.destroy(); // the connection drops mid-body
        }
      });
    }
    stream.pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    cutNextDownload(p, afterBytes) {
      cutNext = { path: p, afterBytes };
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(resolve);
    }),
  };
}
