/**
 * The deployment trigger's configuration as `npm run deployer` builds it (profiles/deployer.yaml plus the
 * environment), with the deployer's own section validated at once, so tests see its refusals synchronously.
 */
import path from 'node:path';
import { REPO_ROOT, loadConfig, type NodeConfig } from '../../core/config.ts';
import { Host, type HostOptions } from '../../core/host.ts';
import { validatePluginConfig } from '../../core/plugins/set.ts';
import deployer from '../../plugins/deployer/index.ts';
import { repoManifestCache } from './node.ts';

export const PROFILE = path.join(REPO_ROOT, 'profiles', 'deployer.yaml');

export function deployerConfigFromEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): NodeConfig {
  const config = loadConfig(env, cwd, { file: PROFILE });
  // Checked the way the host checks it at setup; the host then finds the section already complete.
  config.deployer = validatePluginConfig(deployer, config, env);
  return config;
}

/** A deployer host in this process, taking the shipped manifests from the tests' cache as a test node does. */
export function createDeployerHost(opts: HostOptions): Host {
  return new Host({ ...opts, manifestCache: opts.manifestCache ?? repoManifestCache() });
}

/** Start errors as the CLI prints them (the messages name the env variable already). */
export function describeStartError(e: unknown): Error {
  return new Error((e as Error).message ?? String(e));
}
