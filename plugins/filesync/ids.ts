/** Folder and device ids are checked before they reach Syncthing (they go into its paths and queries). */
import { ApiError } from '../../core/plugin-api.ts';

const FOLDER = /^[a-zA-Z0-9_-]{1,128}$/;
/** Syncthing's device id: 8 groups of 7 base32 characters (the check letters included). */
const DEVICE = /^[A-Z2-7]{7}(-[A-Z2-7]{7}){7}$/;

export const isFolderId = (s: unknown): s is string => typeof s === 'string' && FOLDER.test(s);
export const isDeviceId = (s: unknown): s is string => typeof s === 'string' && DEVICE.test(s);

export function folderId(v: unknown, mandatory: boolean): string | undefined {
  if (v === undefined || v === '') {
    if (mandatory) throw new ApiError(400, 'ValidationError', 'folder parameter is mandatory');
    return undefined;
  }
  if (!isFolderId(v)) throw new ApiError(400, 'ValidationError', 'Invalid ID supplied');
  return v;
}

export function deviceId(v: unknown, mandatory: boolean): string | undefined {
  if (v === undefined || v === '') {
    if (mandatory) throw new ApiError(400, 'ValidationError', 'device parameter is mandatory');
    return undefined;
  }
  if (!isDeviceId(v)) throw new ApiError(400, 'ValidationError', 'Invalid ID supplied');
  return v;
}

/** A path inside a folder (scan `sub`, prio `file`): relative, no `..`, no NUL or backslash. */
export function relPath(v: string, what: string): string {
  if (v.includes('\0') || v.includes('\\') || v.startsWith('/') || v.split('/').some((p) => p === '..'))
    throw new ApiError(400, 'ValidationError', `${what} must be a path inside the folder`);
  return v;
}
