/**
 * The operator's file share (spec: File sharing, level Admin): list and download under the share root.
 * Upload, share, rename, delete and the share-token link are deleted by the spec and not routed.
 */
import fs from 'node:fs';
import type { Handler } from '../../core/plugin-api.ts';
import { sendFile } from './download.ts';
import { parseRelPath, Root, withDir } from './safe-path.ts';
import { listInfo } from './tree.ts';

export function shareHandlers(shareDir: string): Record<string, Handler> {
  const root = new Root(shareDir);
  fs.mkdirSync(shareDir, { recursive: true, mode: 0o750 });
  return {
    sharegetfolder: async (i) => withDir(root.walk(parseRelPath(i.values.folder, 'folder', { allowRoot: true })), (dir) => listInfo(dir)),
    sharegetfile: async (i) => {
      const { dir, name } = await root.parentOf(parseRelPath(i.values.file, 'file'));
      return withDir(dir, () => sendFile(dir, name, i.headers.range));
    },
  };
}
