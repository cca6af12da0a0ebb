/**
 * One self-signed certificate per testbed, made with the `openssl` CLI, for the nodes that serve HTTPS:
 * its names are every address a node may be reached at (the hosts' public and private addresses,
 * 127.0.0.1 where the runner reaches them, localhost). A client trusts it by taking the certificate as its
 * only CA (`ca`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface Cert {
  cert: string;
  key: string;
  /** The certificate itself (PEM), a client's `ca`. */
  pem: string;
}

export function makeCert(dir: string, ips: string[]): Cert {
  const cert = path.join(dir, 'tls-cert.pem');
  const key = path.join(dir, 'tls-key.pem');
  const names = ['DNS:localhost', ...[...new Set(['127.0.0.1', '::1', ...ips])].map((a) => `IP:${a}`)].join(',');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30', '-subj', '/CN=corenode testbed', '-addext', `subjectAltName=${names}`, '-keyout', key, '-out', cert],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return { cert, key, pem: fs.readFileSync(cert, 'utf8') };
}
