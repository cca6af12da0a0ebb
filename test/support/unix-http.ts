/** A GET on an HTTP server listening on a unix socket (a test node's API in another namespace), its body parsed as JSON when it is. */
import http from 'node:http';

export function getOnSocket(socketPath: string, p: string, headers: Record<string, string> = {}): Promise<{ status: number; json: any; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: p, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode!, json, text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
