/** Shared start-up for the services: start, listen, reload on SIGHUP, stop cleanly on SIGINT/SIGTERM. */
import type { Host } from '../host.ts';

export async function run(host: Host, port: number, hostname: string, name: string): Promise<void> {
  const t0 = performance.now();
  // Listen first: while plugins set up, callers get 503 Booting (spec) rather than a refused connection.
  const bound = await host.listen(port, hostname);
  await host.start();
  host.log.info({ port: bound, host: hostname, routes: host.routes.length, startMs: Math.round(performance.now() - t0) }, `${name} listening`);
  process.on('SIGHUP', () => void host.reload());
  // A plugin's forgotten promise must not take the whole node down; it is logged with its cause.
  process.on('unhandledRejection', (err) => host.log.error({ err }, 'unhandled promise rejection'));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    host.log.info({ signal }, `${name} stopping`);
    await host.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

export function fatal(err: unknown): never {
  process.stderr.write(`corenode: ${(err as Error).message ?? err}\n`);
  process.exit(1);
}
