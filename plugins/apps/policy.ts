/**
 * The signed network policy: blocked and vetted repositories, enterprise owners, blocked ports,
 * tampering-blocked nodes and an issue time, signed by a core-team id. Sources are files or http(s) URLs
 * holding `{"message": "<policy JSON>", "legacyid": "<core-team id>", "signature": "<base64 or 0x-hex>"}`.
 * The node keeps the last good copy on disk, never takes an older or unsigned one, and holds the gate
 * `apps-network-policy` open while it has one.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface NetworkPolicy {
  issuedAt: number;
  blockedRepositories: string[];
  vettedRepositories: string[];
  /** Enterprise node public key -> owner ids. */
  enterpriseOwners: Record<string, string[]>;
  blockedPorts: number[];
  tamperingBlockedNodes: string[];
}

export interface SignedPolicy {
  message: string;
  legacyid: string;
  signature: string;
}

export interface HeldPolicy {
  policy: NetworkPolicy;
  signed: SignedPolicy;
  source: string;
  receivedAt: number;
}

export const POLICY_GATE = 'apps-network-policy';

const strings = (v: unknown, what: string): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${what} must be an array of strings`);
  return v as string[];
};

/** Parse and check a signed policy; throws with the reason when it is not acceptable. */
export function readSigned(signed: unknown, isCoreTeam: (id: string) => boolean, verify: (m: string, id: string, s: string) => boolean): NetworkPolicy {
  const s = signed as SignedPolicy;
  if (!s || typeof s !== 'object' || typeof s.message !== 'string' || typeof s.legacyid !== 'string' || typeof s.signature !== 'string')
    throw new Error('not a signed policy: message, legacyid and signature are required strings');
  if (!isCoreTeam(s.legacyid)) throw new Error(`signer ${s.legacyid} is not a core-team id`);
  if (!verify(s.message, s.legacyid, s.signature)) throw new Error('the signature does not match the message and the signer');
  let p: any;
  try {
    p = JSON.parse(s.message);
  } catch {
    throw new Error('message is not JSON');
  }
  const issuedAt = typeof p.issuedAt === 'string' ? Date.parse(p.issuedAt) : p.issuedAt;
  if (!Number.isFinite(issuedAt)) throw new Error('issuedAt must be a time (ms since the epoch or ISO 8601)');
  const owners = p.enterpriseOwners ?? {};
  if (typeof owners !== 'object' || Array.isArray(owners)) throw new Error('enterpriseOwners must map node keys to owner ids');
  for (const [k, v] of Object.entries(owners)) strings(v, `enterpriseOwners.${k}`);
  const ports = p.blockedPorts ?? [];
  if (!Array.isArray(ports) || ports.some((x: unknown) => !Number.isInteger(x))) throw new Error('blockedPorts must be an array of integers');
  return {
    issuedAt,
    blockedRepositories: strings(p.blockedRepositories, 'blockedRepositories'),
    vettedRepositories: strings(p.vettedRepositories, 'vettedRepositories'),
    enterpriseOwners: owners,
    blockedPorts: ports,
    tamperingBlockedNodes: strings(p.tamperingBlockedNodes, 'tamperingBlockedNodes'),
  };
}

/** `registry/owner/repo:tag` -> `owner/repo` (Docker Hub's `library/` for single names). */
export function repositoryOf(repotag: string): string {
  let ref = repotag.split('@')[0];
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > slash) ref = ref.slice(0, colon);
  const parts = ref.split('/');
  if (parts.length > 1 && (parts[0].includes('.') || parts[0].includes(':') || parts[0] === 'localhost')) parts.shift();
  if (parts.length === 1) parts.unshift('library');
  return parts.join('/').toLowerCase();
}

export class PolicyHolder {
  held: HeldPolicy | null = null;
  lastError: string | null = null;
  /** What the last refresh made of each source: taken, not newer than the held policy, or why refused. */
  lastResults: { source: string; outcome: string; at: number }[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly o: {
      sources: string[];
      file: string;
      isCoreTeam: (id: string) => boolean;
      verify: (m: string, id: string, s: string) => boolean;
      onChange: (held: HeldPolicy | null) => void;
      now: () => number;
      log: { warn(o: object, m: string): void; info(o: object, m: string): void };
    },
  ) {}

  /** The copy kept on disk, checked again (a tampered file is not taken). */
  loadKept(): void {
    if (!fs.existsSync(this.o.file)) return;
    try {
      const kept = JSON.parse(fs.readFileSync(this.o.file, 'utf8'));
      const policy = readSigned(kept.signed, this.o.isCoreTeam, this.o.verify);
      this.held = { policy, signed: kept.signed, source: kept.source, receivedAt: kept.receivedAt };
      this.o.onChange(this.held);
    } catch (e) {
      this.o.log.warn({ err: (e as Error).message, file: this.o.file }, 'apps: the kept network policy is not valid; waiting for a source');
    }
  }

  async refresh(): Promise<void> {
    const errors: string[] = [];
    const results: { source: string; outcome: string; at: number }[] = [];
    for (const source of this.o.sources) {
      const at = this.o.now();
      try {
        const text = /^https?:\/\//.test(source) ? await fetchText(source) : await fs.promises.readFile(source, 'utf8');
        const signed = JSON.parse(text);
        const policy = readSigned(signed, this.o.isCoreTeam, this.o.verify);
        if (this.held && policy.issuedAt <= this.held.policy.issuedAt) {
          results.push({ source, outcome: policy.issuedAt === this.held.policy.issuedAt ? 'held' : 'older than the held policy; not taken', at });
          continue;
        }
        this.held = { policy, signed, source, receivedAt: this.o.now() };
        // The gate opens with `held` (before the copy is written): /apps/networkpolicy never says held while
        // the image-pulling routes still answer 503 (a test saw that window on a busy machine).
        this.o.onChange(this.held);
        const tmp = `${this.o.file}.tmp`;
        await fs.promises.mkdir(path.dirname(this.o.file), { recursive: true });
        await fs.promises.writeFile(tmp, JSON.stringify({ signed, source, receivedAt: this.held.receivedAt }));
        await fs.promises.rename(tmp, this.o.file);
        this.o.log.info({ source, issuedAt: policy.issuedAt, signer: signed.legacyid }, 'apps: network policy taken');
        results.push({ source, outcome: 'taken', at });
      } catch (e) {
        errors.push(`${source}: ${(e as Error).message}`);
        results.push({ source, outcome: `refused: ${(e as Error).message}`, at });
      }
    }
    this.lastResults = results;
    this.lastError = errors.length ? errors.join('; ') : null;
    if (errors.length) this.o.log.warn({ errors }, 'apps: network policy sources refused');
  }

  start(intervalMs: number): void {
    const loop = () => {
      this.timer = setTimeout(async () => {
        await this.refresh();
        if (this.timer) loop();
      }, intervalMs);
      this.timer.unref();
    };
    loop();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  isEnterprise(owner: string): boolean {
    return Object.values(this.held?.policy.enterpriseOwners ?? {}).some((ids) => ids.includes(owner));
  }

  /** Why the image may not run here, or null. */
  blocks(repotag: string): string | null {
    const repo = repositoryOf(repotag);
    for (const b of this.held?.policy.blockedRepositories ?? []) {
      const entry = b.toLowerCase();
      if (repo === entry || repo.startsWith(`${entry}/`)) return `repository ${repo} is blocked by the network policy (${b})`;
    }
    return null;
  }
}

async function fetchText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.text();
}
