/**
 * The payment relay (spec: Other routes): a page asks a payment request id, waits on
 * `/ws/payment/<paymentId>`, and the wallet posts the transaction id it paid with to `verifypayment`, which
 * relays it to the waiting sockets. Nothing is checked on chain (the spec says so); the node keeps the
 * requests 1 h and the relayed payments 7 days (facts §2.6), so a page that connects late still gets it.
 */
import { randomBytes } from 'node:crypto';
import { ApiError, websocket, type Clock, type Collection, type HandlerInput, type Socket } from '../../core/plugin-api.ts';

const REQUEST_MS = 60 * 60 * 1000;
const PAYMENT_MS = 7 * 24 * 60 * 60 * 1000;
const WAIT_MS = 65 * 60 * 1000;
const CLOSE_PAID = 4012;
const CLOSE_TIMEOUT = 4016;
const CLOSE_ERROR = 4013;
const ID = /^\d{13}_[0-9a-f]{32}$/;
const MAX_WAITING = 1000;

interface Payment {
  paymentId: string;
  txid: string;
  coin: string;
  chain?: string;
  explorer?: string;
  amount?: number;
  from_address?: string;
  to_address?: string;
  receivedAt: number;
}

const envelope = (data: unknown) => JSON.stringify({ status: 'success', data });
const error = (code: number, name: string, message: string) => JSON.stringify({ status: 'error', data: { code, name, message } });

function finish(ws: Socket, text: string, code: number) {
  try {
    ws.send(text, () => ws.close(code));
  } catch {
    ws.terminate();
  }
}

function text(v: unknown, field: string, min: number, max: number, optional = false): string | undefined {
  if (v === undefined || v === null || v === '') {
    if (optional) return undefined;
    throw new ApiError(400, 'BadRequest', `${field} is required`);
  }
  if (typeof v !== 'string' || v.length < min || v.length > max) throw new ApiError(400, 'BadRequest', `${field} must be a string of ${min} to ${max} characters`);
  return v;
}

export function paymentHandlers(clock: Clock, requests: Collection, payments: Collection) {
  const waiting = new Map<string, Set<Socket>>();
  let count = 0;
  void requests.ensureIndex({ fieldName: 'paymentId', unique: true });
  void payments.ensureIndex({ fieldName: 'paymentId', unique: true });

  async function active(paymentId: string): Promise<boolean> {
    const r = await requests.findOne({ paymentId });
    return !!r && r.expireAt > clock.now();
  }
  async function paid(paymentId: string): Promise<Payment | null> {
    const p = (await payments.findOne({ paymentId }, { _id: 0 })) as (Payment & { expireAt: number }) | null;
    if (!p || p.expireAt <= clock.now()) return null;
    const { expireAt: _drop, ...rest } = p;
    return rest;
  }

  return {
    async paymentrequest() {
      const now = clock.now();
      const paymentId = `${now}_${randomBytes(16).toString('hex')}`;
      await requests.insert({ paymentId, createdAt: now, expireAt: now + REQUEST_MS });
      await requests.remove({ expireAt: { $lte: now } }, { multi: true });
      return { paymentId };
    },

    async verifypayment({ query, body }: HandlerInput) {
      const b = (body && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
      const paymentId = text(query.paymentid ?? b.paymentid, 'paymentid', 1, 128)!;
      if (!ID.test(paymentId) || !(await active(paymentId))) throw new ApiError(404, 'PaymentRequestNotFound', 'No active payment request has this paymentid (they are valid 1 hour)');
      const txid = text(b.transaction_id ?? b.txid, 'transaction_id', 8, 200)!;
      if (!/^[A-Za-z0-9_-]+$/.test(txid)) throw new ApiError(400, 'BadRequest', 'transaction_id holds characters no transaction id has');
      const coin = text(b.coin, 'coin', 1, 20)!;
      const amountRaw = b.amount;
      const amount = amountRaw === undefined || amountRaw === '' ? undefined : Number(amountRaw);
      if (amount !== undefined && !(Number.isFinite(amount) && amount > 0)) throw new ApiError(400, 'BadRequest', 'amount must be a number above 0');
      const payment: Payment = {
        paymentId,
        txid,
        coin,
        chain: text(b.chain, 'chain', 1, 40, true),
        explorer: text(b.explorer, 'explorer', 1, 500, true),
        amount,
        from_address: text(b.from_address, 'from_address', 10, 500, true),
        to_address: text(b.to_address, 'to_address', 10, 500, true),
        receivedAt: clock.now(),
      };
      for (const k of Object.keys(payment) as (keyof Payment)[]) if (payment[k] === undefined) delete payment[k];
      if (await paid(paymentId)) throw new ApiError(409, 'AlreadyPaid', 'A payment was already relayed for this payment request');
      await payments.insert({ ...payment, expireAt: clock.now() + PAYMENT_MS });
      const sockets = waiting.get(paymentId);
      waiting.delete(paymentId);
      for (const ws of sockets ?? []) finish(ws, envelope(payment), CLOSE_PAID);
      return { message: 'Payment relayed', paymentId, delivered: sockets?.size ?? 0 };
    },

    wspayment: websocket(async ({ params }, ws) => {
      const paymentId = String(params.paymentid ?? '');
      try {
        if (!ID.test(paymentId)) return finish(ws, error(404, 'PaymentRequestNotFound', 'No payment request has this id'), CLOSE_ERROR);
        const done = await paid(paymentId);
        if (done) return finish(ws, envelope(done), CLOSE_PAID);
        if (!(await active(paymentId))) return finish(ws, error(404, 'PaymentRequestNotFound', 'No active payment request has this id (they are valid 1 hour)'), CLOSE_ERROR);
      } catch {
        return finish(ws, error(500, 'StoreError', 'The payment store cannot be read'), CLOSE_ERROR);
      }
      if (count >= MAX_WAITING) return finish(ws, error(429, 'TooManySockets', 'Too many payment pages are waiting on this node'), 1013);
      const set = waiting.get(paymentId) ?? new Set<Socket>();
      set.add(ws);
      waiting.set(paymentId, set);
      count++;
      const timer = setTimeout(() => finish(ws, error(408, 'PaymentTimeout', 'No payment arrived within 65 minutes'), CLOSE_TIMEOUT), WAIT_MS);
      ws.once('close', () => {
        clearTimeout(timer);
        count--;
        const s = waiting.get(paymentId);
        s?.delete(ws);
        if (s && !s.size) waiting.delete(paymentId);
      });
    }),

    dispose() {
      for (const set of waiting.values()) for (const ws of set) ws.close(1001, 'node stopping');
      waiting.clear();
    },
  };
}
