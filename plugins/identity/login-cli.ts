/**
 * `npm run login -- --wif <key> | --eth-key <hex> [--node <url>] [--emergency]`, compiled into dist/ and run
 * from there as the other entry points are (scripts/launch.mjs): through tsx, which compiles the TypeScript
 * at every start, a run that stops at a bad key cost 1.8-2.0 s of CPU, from dist/ 0.6-0.8 s (measured three
 * times each on a busy 2-vCPU VM).
 *
 * Logs in to a node with a wallet key: asks for a login phrase, signs it (Bitcoin message signature for a
 * WIF key, personal-sign for an ethereum key), posts it to /id/verifylogin and prints the `legacyidauth`
 * header to paste into curl. A key given as `-` is read from stdin (keeps it out of the shell history).
 */
import { parseArgs } from 'node:util';
import bitcoinMessage from 'bitcoinjs-message';
import { SigningKey, Wallet } from 'ethers';
import { base58Decode, p2pkhAddress, sha256 } from './ids.ts';

const USAGE = 'usage: npm run login -- (--wif <key> | --eth-key <hex>) [--node http://127.0.0.1:16127] [--emergency]';

interface Signer {
  legacyid: string;
  sign(message: string): Promise<string>;
}

/** A WIF private key (mainnet 0x80 or testnet 0xef, with or without the compressed-key flag). */
function wifSigner(wif: string): Signer {
  const raw = base58Decode(wif.trim());
  if (!raw || (raw.length !== 37 && raw.length !== 38) || (raw[0] !== 0x80 && raw[0] !== 0xef))
    throw new Error('not a WIF private key (base58, starting with 5, K, L, 9 or c)');
  if (!sha256(sha256(raw.subarray(0, -4))).subarray(0, 4).equals(raw.subarray(-4))) throw new Error('the WIF key has a bad checksum (a typo?)');
  const compressed = raw.length === 38;
  if (compressed && raw[33] !== 1) throw new Error('not a WIF private key (bad compression flag)');
  const key = Buffer.from(raw.subarray(1, 33));
  const sk = new SigningKey('0x' + key.toString('hex'));
  const pub = Buffer.from((compressed ? sk.compressedPublicKey : sk.publicKey).slice(2), 'hex');
  return { legacyid: p2pkhAddress(pub), sign: async (m) => bitcoinMessage.sign(m, key, compressed).toString('base64') };
}

function ethSigner(hex: string): Signer {
  const h = hex.trim();
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(h)) throw new Error('an ethereum private key is 64 hex digits (optionally 0x first)');
  const w = new Wallet(h.startsWith('0x') ? h : '0x' + h);
  return { legacyid: w.address, sign: (m) => w.signMessage(m) };
}

async function readStdin(): Promise<string> {
  let s = '';
  for await (const chunk of process.stdin) s += chunk;
  return s.trim();
}

async function call(url: string, init?: RequestInit): Promise<any> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new Error(`cannot reach ${url}: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`);
  }
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${url} answered HTTP ${res.status} without JSON: ${text.slice(0, 200)}`);
  }
  if (json.status !== 'success') throw new Error(`${url}: ${json.data?.message ?? text}`);
  return json.data;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      wif: { type: 'string' },
      'eth-key': { type: 'string' },
      node: { type: 'string', default: 'http://127.0.0.1:16127' },
      emergency: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || (!values.wif === !values['eth-key'])) throw new Error(USAGE);
  const secret = values.wif ?? values['eth-key']!;
  const key = secret === '-' ? await readStdin() : secret;
  const signer = values.wif ? wifSigner(key) : ethSigner(key);
  const node = values.node!.replace(/\/+$/, '');

  const loginPhrase: string = await call(`${node}/id/${values.emergency ? 'emergencyphrase' : 'loginphrase'}`);
  const signature = await signer.sign(loginPhrase);
  const result = await call(`${node}/id/verifylogin`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: JSON.stringify({ legacyid: signer.legacyid, loginPhrase, signature }),
  });
  // URLSearchParams encodes the signature's + / = (a raw + would reach the node as a space).
  const header = new URLSearchParams({ legacyid: signer.legacyid, signature, loginPhrase }).toString();
  process.stdout.write(
    [
      `Logged in to ${node} as ${signer.legacyid} (${result.privilege}), session valid until ${result.expireAt}.`,
      '',
      'legacyidauth header:',
      header,
      '',
      'Example:',
      `curl -s -H 'legacyidauth: ${header}' ${node}/id/loggedsessions`,
      '',
    ].join('\n'),
  );
}

main().catch((e) => {
  process.stderr.write(`login: ${(e as Error).message}\n`);
  process.exit(1);
});
