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

    // Fields, lengths and forms are checked by the manifest's input; paymentid from the query or the body.
    async verifypayment({ values: b }: HandlerInput) {
      const paymentId = b.paymentid as string;
      if (!ID.test(paymentId) || !(await active(paymentId))) throw new ApiError(404, 'PaymentRequestNotFound', 'No active payment request has this paymentid (they are valid 1 hour)');
      const txid = (b.transaction_id ?? b.txid) as string | undefined;
      if (!txid) throw new ApiError(400, 'BadRequest', 'transaction_id is required');
      const payment: Payment = {
        paymentId,
        txid,
        coin: b.coin,
        chain: b.chain,
        explorer: b.explorer,
        amount: b.amount,
        from_address: b.from_address,
        to_address: b.to_address,
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

    wspayment: websocket(async ({ values }, ws) => {
      const paymentId = String(values.paymentid ?? '');
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
