/**
 * Where the node's API is: the page's own origin at / of the API port, or, on the UI port, the API port
 * of the same host that the index names in `<meta name="corenode-api" content="http:16127">`.
 */
const meta = document.querySelector<HTMLMetaElement>('meta[name="corenode-api"]')?.content;

/** `http://host:16127` on the UI port; '' (same origin) at / of the API port. */
export const apiBase = (() => {
  const m = meta && /^(https?):(\d+)$/.exec(meta);
  return m ? `${m[1]}://${location.hostname}:${m[2]}` : '';
})();

export function wsUrl(path: string): string {
  if (apiBase) return apiBase.replace(/^http/, 'ws') + path;
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`;
}
