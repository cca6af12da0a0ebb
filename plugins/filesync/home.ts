/**
 * The supervised Syncthing's home: generated once (`syncthing generate`), then the options the node decides
 * (listen address, discovery, relays, GUI address, no upgrades, no usage reports) written into config.xml
 * before every start, while Syncthing is not running (it rewrites the file itself when its config changes).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface HomeOptions {
  binary: string;
  home: string;
  guiPort: number;
  listenAddress: string;
  globalDiscovery: boolean;
  relays: boolean;
  /** How often Syncthing dials a configured device it is not connected to (its own default: 60 s). */
  reconnectSeconds: number;
  /** Folders to start receive-only (`g:` folders: this node is no primary until it is elected again). */
  receiveOnly?: () => Promise<string[]>;
}

export async function prepareHome(o: HomeOptions): Promise<void> {
  const file = path.join(o.home, 'config.xml');
  if (!fs.existsSync(file)) {
    await fs.promises.mkdir(o.home, { recursive: true, mode: 0o700 });
    await run(o.binary, ['generate', `--home=${o.home}`, '--no-default-folder'], { timeout: 60_000 });
  }
  let xml = await fs.promises.readFile(file, 'utf8');
  xml = setElement(xml, 'listenAddress', o.listenAddress);
  xml = setElement(xml, 'globalAnnounceEnabled', String(o.globalDiscovery));
  // Local discovery broadcasts on the LAN; peers are configured by the node (their addresses are known).
  xml = setElement(xml, 'localAnnounceEnabled', 'false');
  xml = setElement(xml, 'relaysEnabled', String(o.relays));
  xml = setElement(xml, 'natEnabled', String(o.globalDiscovery || o.relays));
  xml = setElement(xml, 'reconnectionIntervalS', String(o.reconnectSeconds));
  xml = setElement(xml, 'startBrowser', 'false');
  xml = setElement(xml, 'urAccepted', '-1');
  xml = setElement(xml, 'autoUpgradeIntervalH', '0');
  xml = setElement(xml, 'crashReportingEnabled', 'false');
  for (const id of (await o.receiveOnly?.()) ?? []) {
    const esc = id.replace(/[^a-zA-Z0-9_-]/g, '');
    xml = xml.replace(new RegExp(`(<folder id="${esc}"[^>]*\\btype=")sendreceive(")`), '$1receiveonly$2');
  }
  xml = xml.replace(/(<gui\b[^>]*>\s*<address>)[^<]*(<\/address>)/, `$1127.0.0.1:${o.guiPort}$2`);
  const tmp = `${file}.corenode-tmp`;
  await fs.promises.writeFile(tmp, xml, { mode: 0o600 });
  await fs.promises.rename(tmp, file);
}

/** Replace every `<tag>…</tag>` of the options with one element holding `value`. */
function setElement(xml: string, tag: string, value: string): string {
  const re = new RegExp(`\\s*<${tag}>[^<]*</${tag}>`, 'g');
  const esc = value.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  let first = true;
  const out = xml.replace(re, (m) => {
    if (!first) return '';
    first = false;
    return m.replace(/>[^<]*</, `>${esc}<`);
  });
  if (!first) return out;
  return out.replace('</options>', `    <${tag}>${esc}</${tag}>\n    </options>`);
}

/** The GUI API key from a config.xml, or null. */
export function apiKeyOf(xml: string): string | null {
  const m = /<gui\b[\s\S]*?<apikey>([^<]+)<\/apikey>/.exec(xml);
  return m ? m[1].trim() : null;
}
