// The built-in static server for static projects: `node static-server.mjs <root> <port>`. Plain JS because
// the supervisor runs it with the bare node binary. Serves files under <root> only; unknown paths without
// an extension fall back to index.html (single-page apps).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const root = fs.realpathSync(path.resolve(process.argv[2] ?? '.'));
const port = Number(process.argv[3] ?? 80);
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.ico': 'image/x-icon', '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2', '.woff': 'font/woff', '.wasm': 'application/wasm', '.map': 'application/json',
};

function inside(file) {
  return file === root || file.startsWith(root + path.sep);
}

function resolve(urlPath) {
  let rel;
  try {
    rel = decodeURIComponent(urlPath.split('?')[0]);
  } catch {
    return null;
  }
  if (rel.includes('\0')) return null;
  let file = path.resolve(root, '.' + path.posix.normalize('/' + rel));
  try {
    file = fs.realpathSync(file);
    if (!inside(file)) return null;
    if (fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    return fs.statSync(file).isFile() ? file : null;
  } catch {
    if (path.extname(rel)) return null;
    const index = path.join(root, 'index.html');
    return fs.existsSync(index) ? index : null;
  }
}

http
  .createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const file = resolve(req.url ?? '/');
    if (!file) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream', 'Content-Length': fs.statSync(file).size });
    if (req.method === 'HEAD') res.end();
    else fs.createReadStream(file).pipe(res);
  })
  .listen(port, () => process.stdout.write(`static server: ${root} on port ${port}\n`));

for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
