/**
 * A network namespace of a test's own for firewall tests (nft rules there never touch the machine's):
 * `inNs` runs a command in it, `probe` connects to a port inside it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export function fwNamespace(stem: string) {
  const ns = `${stem}-${randomBytes(3).toString('hex')}`;
  const inNs = (...args: string[]) => execFileSync('ip', ['netns', 'exec', ns, ...args], { encoding: 'utf8', stdio: 'pipe' });
  return {
    ns,
    inNs,
    /** Make the namespace; false where nft or namespaces are missing (the test then skips). */
    create(): boolean {
      try {
        execFileSync('nft', ['--version'], { stdio: 'ignore' });
        execFileSync('ip', ['netns', 'add', ns], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    },
    /** Connect to 127.0.0.1:port inside the namespace: 'open', 'blocked' (no answer within 1.5 s) or the error code. */
    probe(port: number): string {
      const js = `const s=require('net').connect(${port},'127.0.0.1');s.setTimeout(1500,()=>{console.log('blocked');process.exit(0)});s.on('connect',()=>{console.log('open');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})`;
      return inNs(process.execPath, '-e', js).trim();
    },
  };
}
