/**
 * Log in with a wallet, three ways, all on the identity plugin's routes: (a) copy the phrase (or scan its
 * QR code), sign it in any wallet and paste the signature; (b) an Ethereum wallet in the browser signs it
 * with `personal_sign`; (c) a wallet app opened by a `core:` deep link signs it and posts the signature to
 * `/id/verifylogin` itself. For every way the page first opens `/ws/id/<phrase>` (the node lets only the
 * first socket on a phrase wait on it, so it is opened before the phrase is shown), and logs in when the
 * node pushes the login's answer there, whoever sent the signature.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { apiBase, call, wsUrl } from '../api.ts';
import { QrCode } from '../parts/qr.tsx';
import { HOME } from '../pages.ts';
import { navigate } from '../router.ts';
import { session } from '../session.ts';

interface LoginAnswer {
  legacyid: string;
  loginPhrase: string;
  signature: string;
  privilege?: string;
}

/** What an injected Ethereum provider offers (EIP-1193). */
interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

const hex = (s: string) => '0x' + Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, '0')).join('');

function done(a: LoginAnswer) {
  session.start(a);
  navigate(HOME);
}

export default function LoginPage() {
  const [phrase, setPhrase] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const [attempt, setAttempt] = useState(0);
  const [emergency, setEmergency] = useState(false);
  const ws = useRef<WebSocket | null>(null);

  useEffect(() => {
    let closed = false;
    setPhrase(null);
    setError(null);
    call<string>(emergency ? '/id/emergencyphrase' : '/id/loginphrase', { anonymous: true }).then(
      (p) => {
        if (closed) return;
        // The socket first, the phrase after: nobody else can wait on it before this page does.
        const sock = new WebSocket(wsUrl(`/ws/id/${encodeURIComponent(p)}`));
        ws.current = sock;
        sock.onmessage = (e) => {
          try {
            const env = JSON.parse(String(e.data));
            if (env.status === 'success') done(env.data as LoginAnswer);
            else setError(env.data?.message ?? 'The login was refused');
          } catch {
            setError('The node sent something that is not a login answer');
          }
        };
        sock.onopen = () => !closed && setPhrase(p);
        sock.onerror = () => !closed && setPhrase(p); // show it all the same: ways (a) and (b) answer over HTTP
      },
      (e) => !closed && setError((e as Error).message),
    );
    return () => {
      closed = true;
      ws.current?.close();
      ws.current = null;
    };
  }, [attempt, emergency]);

  return (
    <>
      <h1>Log in</h1>
      {error && (
        <div role="alert" class="card bad">
          <p>{error}</p>
          <div class="buttons">
            <button type="button" onClick={() => setAttempt((n) => n + 1)}>
              New phrase
            </button>
            {!emergency && (
              <button type="button" onClick={() => setEmergency(true)}>
                Emergency phrase (operator and core team)
              </button>
            )}
          </div>
        </div>
      )}
      {!phrase ? (
        !error && <p class="muted">Asking the node for a login phrase…</p>
      ) : (
        <div class="grid">
          <PhraseAndSignature phrase={phrase} onStatus={setStatus} onError={setError} />
          <div>
            <BrowserWallet phrase={phrase} onStatus={setStatus} onError={setError} />
            <WalletApp phrase={phrase} />
          </div>
        </div>
      )}
      <p role="status" class="muted">
        {status}
      </p>
    </>
  );
}

interface WayProps {
  phrase: string;
  onStatus: (s: string) => void;
  onError: (s: string) => void;
}

/** (a) The phrase to copy or scan, and a form for the address and the pasted signature. */
function PhraseAndSignature({ phrase, onStatus, onError }: WayProps) {
  const [legacyid, setId] = useState('');
  const [signature, setSig] = useState('');
  const [busy, setBusy] = useState(false);
  async function copy() {
    try {
      await navigator.clipboard.writeText(phrase);
      onStatus('Login phrase copied');
    } catch {
      // no clipboard API (a plain http page of another host): select the text for Ctrl+C
      const el = document.getElementById('login-phrase') as HTMLInputElement | null;
      el?.select();
      onStatus('Select and copy the phrase (Ctrl+C)');
    }
  }
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    try {
      done(await call<LoginAnswer>('/id/verifylogin', { body: { legacyid: legacyid.trim(), loginPhrase: phrase, signature: signature.trim() }, anonymous: true }));
    } catch (err) {
      onError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card" aria-labelledby="way-a">
      <h2 id="way-a">Sign the phrase in your wallet</h2>
      <label for="login-phrase">Login phrase</label>
      <input id="login-phrase" class="phrase" readOnly value={phrase} />
      <div class="buttons">
        <button type="button" onClick={copy}>
          Copy phrase
        </button>
      </div>
      <QrCode text={phrase} label="QR code of the login phrase" />
      <form onSubmit={submit}>
        <label for="login-id">Your address (legacyid)</label>
        <input id="login-id" required autocomplete="off" spellcheck={false} value={legacyid} onInput={(e) => setId((e.target as HTMLInputElement).value)} />
        <label for="login-signature">Signature of the phrase</label>
        <textarea id="login-signature" required rows={3} spellcheck={false} value={signature} onInput={(e) => setSig((e.target as HTMLTextAreaElement).value)} />
        <div class="buttons">
          <button class="primary" type="submit" disabled={busy}>
            Log in with signature
          </button>
        </div>
      </form>
    </section>
  );
}

/** (b) An Ethereum wallet injected into the page (window.ethereum) signs with personal_sign. */
function BrowserWallet({ phrase, onStatus, onError }: WayProps) {
  const provider = (window as unknown as { ethereum?: Eip1193 }).ethereum;
  const [busy, setBusy] = useState(false);
  async function sign() {
    if (!provider) return;
    setBusy(true);
    try {
      onStatus('Waiting for the browser wallet…');
      const [address] = (await provider.request({ method: 'eth_requestAccounts' })) as string[];
      const signature = (await provider.request({ method: 'personal_sign', params: [hex(phrase), address] })) as string;
      done(await call<LoginAnswer>('/id/verifylogin', { body: { legacyid: address, loginPhrase: phrase, signature }, anonymous: true }));
    } catch (err) {
      onError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card" aria-labelledby="way-b">
      <h2 id="way-b">Browser wallet</h2>
      {provider ? (
        <button type="button" class="primary" disabled={busy} onClick={sign}>
          Sign with browser wallet
        </button>
      ) : (
        <p class="muted">No Ethereum wallet is installed in this browser (MetaMask or similar).</p>
      )}
    </section>
  );
}

/** (c) A wallet app opened by a deep link; it posts the signature to the callback, the socket brings the login. */
function WalletApp({ phrase }: { phrase: string }) {
  const origin = apiBase || location.origin;
  const icon = `${location.origin}/ui/assets/icon.svg`;
  const link = `core:?action=sign&message=${encodeURIComponent(phrase)}&icon=${encodeURIComponent(icon)}&callback=${encodeURIComponent(`${origin}/id/verifylogin`)}`;
  return (
    <section class="card" aria-labelledby="way-c">
      <h2 id="way-c">Wallet app</h2>
      <p>Opens your wallet app to sign the phrase; this page logs in as soon as the wallet has sent the signature.</p>
      <a class="button primary" id="wallet-link" href={link}>
        Open wallet app
      </a>
      <p class="muted" aria-live="polite">
        Waiting for the wallet…
      </p>
    </section>
  );
}
