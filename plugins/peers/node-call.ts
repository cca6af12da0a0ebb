/**
 * A call from this node to another node's API (dial-backs). Plain HTTP; the TLS-aware helper replaces it
 * where nodes serve HTTPS.
 */
import http from 'node:http';
import { urlHost } from '../../lib/net-addr/addr.ts';

export function nodeGet(ip: string, port: number, path: string, o: { localAddress?: string; timeoutMs: number }): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`http://${urlHost(ip)}:${port}${path}`, { localAddress: o.localAddress, timeout: o.timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text.length < 4096 ? (text += d) : undefined));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}
