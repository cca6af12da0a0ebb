/**
 * An image written straight into a docker-registry's storage folder (its `filesystem` driver's layout), as
 * `docker push` would leave it, without a dockerd: one uncompressed layer (a tar of a root folder), its
 * config and a schema 2 manifest under `<repo>:<tag>`. The registry serves it as any pushed image, and a
 * dockerd pulls it as one.
 *
 * Why not `docker import` then `docker push`: the push gzips the layer in dockerd, 6.2 s of CPU for the
 * node image (about 100 MB, mostly the node binary) on this 2-core machine, once per test Docker, and
 * its import stored another copy first (1.8 s); tarring it here takes about 0.3 s. A pull of an
 * uncompressed layer also skips the gunzip.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
const CONFIG = 'application/vnd.docker.container.image.v1+json';
/** An uncompressed layer: a pull takes it as it is (dockerd detects the compression of what it gets). */
const LAYER = 'application/vnd.docker.image.rootfs.diff.tar';

const sha256 = (data: Buffer) => `sha256:${crypto.createHash('sha256').update(data).digest('hex')}`;

async function fileDigest(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}`;
}

/** The registry's folder of a blob (`blobs/sha256/ab/abcd…/data`). */
const blobDir = (v2: string, digest: string) => {
  const hex = digest.slice('sha256:'.length);
  return path.join(v2, 'blobs', 'sha256', hex.slice(0, 2), hex);
};

function link(file: string, digest: string) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, digest);
}

/**
 * Write `rootfs` as the image `<repo>:<tag>` into the storage folder of a registry (the
 * `storage.filesystem.rootdirectory` of its config); `cmd` is the image's CMD.
 */
export async function writeImage(registryRoot: string, repo: string, tag: string, rootfs: string, cmd: string[]): Promise<void> {
  const v2 = path.join(registryRoot, 'docker', 'registry', 'v2');
  fs.mkdirSync(v2, { recursive: true });
  // The layer: a tar of the folder made with the system tar, written into the blob store under a temporary
  // name, then moved under its digest (the digest of an uncompressed layer is also its diff id).
  const tmp = path.join(v2, `layer-${process.pid}-${Date.now()}.tar`);
  await run('tar', ['-C', rootfs, '-cf', tmp, '.']);
  const layer = await fileDigest(tmp);
  const layerSize = fs.statSync(tmp).size;
  fs.mkdirSync(blobDir(v2, layer), { recursive: true });
  fs.renameSync(tmp, path.join(blobDir(v2, layer), 'data'));

  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: new Date().toISOString(),
      config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: cmd },
      rootfs: { type: 'layers', diff_ids: [layer] },
      history: [{ created: new Date().toISOString(), created_by: 'corenode test: test/support/registry-store.ts' }],
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST,
      config: { mediaType: CONFIG, size: config.length, digest: sha256(config) },
      layers: [{ mediaType: LAYER, size: layerSize, digest: layer }],
    }),
  );
  for (const blob of [config, manifest]) {
    fs.mkdirSync(blobDir(v2, sha256(blob)), { recursive: true });
    fs.writeFileSync(path.join(blobDir(v2, sha256(blob)), 'data'), blob);
  }
  // The repository's links: which blobs it holds, its manifest revisions and its tag.
  const r = path.join(v2, 'repositories', repo);
  for (const d of [layer, sha256(config)]) link(path.join(r, '_layers', 'sha256', d.slice(7), 'link'), d);
  const m = sha256(manifest);
  link(path.join(r, '_manifests', 'revisions', 'sha256', m.slice(7), 'link'), m);
  link(path.join(r, '_manifests', 'tags', tag, 'current', 'link'), m);
  link(path.join(r, '_manifests', 'tags', tag, 'index', 'sha256', m.slice(7), 'link'), m);
}
