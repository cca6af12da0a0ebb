/** Self-signed certificates made by the `openssl` CLI, as an operator makes one for a node. */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A self-signed P-256 certificate and key in `dir` (`<name>-cert.pem`, `<name>-key.pem`), for the common
 * name `cn` and the subject alternative names `san` (default 127.0.0.1 and localhost).
 */
export function selfSigned(dir: string, o: { name?: string; cn?: string; san?: string } = {}): { cert: string; key: string } {
  const name = o.name ?? 'node';
  const cert = path.join(dir, `${name}-cert.pem`);
  const key = path.join(dir, `${name}-key.pem`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${o.cn ?? 'localhost'}`,
      '-addext', `subjectAltName=${o.san ?? 'IP:127.0.0.1,DNS:localhost'}`, '-keyout', key, '-out', cert],
    { stdio: 'ignore' },
  );
  return { cert, key };
}
