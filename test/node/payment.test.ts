/**
 * The payment relay: a random payment request id valid 1 h, a waiting page's websocket that receives the
 * transaction id `verifypayment` relays (nothing is checked on chain), late pages, bad input and the 10 KB
 * body bound.
 */
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { TestClock } from '../support/node.ts';
import { err, ok, startOpsNode } from './support.ts';

function waitOnSocket(url: string): Promise<{ code: number; message: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    let message: any;
    ws.on('message', (d) => (message = JSON.parse(String(d))));
    ws.on('close', (code) => resolve({ code, message }));
    ws.on('error', reject);
  });
}
const opened = (url: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });

describe('payment relay', function () {
  this.timeout(60_000);
  const clock = new TestClock();
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let ws: string;
  before(async () => {
    node = await startOpsNode({ clock });
    ws = node.url.replace('http', 'ws');
  });
  after(() => node?.close());

  it('hands out random payment request ids', async () => {
    const a = ok(await node.get('/payment/paymentrequest'));
    const b = ok(await node.get('/payment/paymentrequest'));
    assert.match(a.paymentId, /^\d{13}_[0-9a-f]{32}$/);
    assert.notEqual(a.paymentId, b.paymentId);
    assert.equal(a.paymentId.slice(0, 13), String(clock.now()));
  });

  it('relays the transaction id to the page waiting on the request, and to a page that comes later', async () => {
    const { paymentId } = ok(await node.get('/payment/paymentrequest'));
    const socket = await opened(`${ws}/ws/payment/${paymentId}`);
    const got = new Promise<{ code: number; message: any }>((resolve) => {
      let message: any;
      socket.on('message', (d) => (message = JSON.parse(String(d))));
      socket.on('close', (code) => resolve({ code, message }));
    });
    const body = { transaction_id: 'ab'.repeat(32), coin: 'LTC', amount: '1.5', from_address: 'Lfrom1234567890', to_address: 'Lto12345678901' };
    const answer = ok(await node.post(`/payment/verifypayment?paymentid=${paymentId}`, body));
    assert.deepEqual(answer, { message: 'Payment relayed', paymentId, delivered: 1 });
    const { code, message } = await got;
    assert.equal(code, 4012);
    assert.equal(message.status, 'success');
    assert.deepEqual({ ...message.data, receivedAt: 0 }, { paymentId, txid: 'ab'.repeat(32), coin: 'LTC', amount: 1.5, from_address: 'Lfrom1234567890', to_address: 'Lto12345678901', receivedAt: 0 });
    const late = await waitOnSocket(`${ws}/ws/payment/${paymentId}`);
    assert.equal(late.code, 4012);
    assert.equal(late.message.data.txid, 'ab'.repeat(32));
    const again = err(await node.post('/payment/verifypayment', { paymentid: paymentId, txid: 'cd'.repeat(32), coin: 'LTC' }));
    assert.equal(again.name, 'AlreadyPaid');
  });

  it('refuses unknown and expired requests, and bad fields, with clear messages', async () => {
    const { paymentId } = ok(await node.get('/payment/paymentrequest'));
    const cases: [unknown, string, RegExp][] = [
      [{ txid: 'ab'.repeat(32), coin: 'LTC' }, '', /paymentid is required/],
      [{ paymentid: '123_abc', txid: 'ab'.repeat(32), coin: 'LTC' }, '', /No active payment request/],
      [{ paymentid: paymentId, coin: 'LTC' }, '', /transaction_id is required/],
      [{ paymentid: paymentId, txid: 'ab'.repeat(32) }, '', /coin is required/],
      [{ paymentid: paymentId, txid: 'ab cd;rm -rf', coin: 'LTC' }, '', /characters no transaction id has/],
      [{ paymentid: paymentId, txid: 'ab'.repeat(32), coin: 'LTC', amount: -1 }, '', /amount must be a number above 0/],
      [{ paymentid: paymentId, txid: 'ab'.repeat(32), coin: 'LTC', from_address: 'short' }, '', /from_address must be a string of 10 to 500/],
      // A body that is not an object is refused by the host for every route whose input reads the body.
      [[1, 2], '', /The request body must be a JSON object of named parameters/],
    ];
    for (const [body, , re] of cases) assert.match(err(await node.post('/payment/verifypayment', body)).message, re, JSON.stringify(body));
    clock.advance(60 * 60 * 1000 + 1);
    assert.equal(err(await node.post('/payment/verifypayment', { paymentid: paymentId, txid: 'ab'.repeat(32), coin: 'LTC' })).name, 'PaymentRequestNotFound');
    const closed = await waitOnSocket(`${ws}/ws/payment/${paymentId}`);
    assert.deepEqual([closed.code, closed.message.data.name], [4013, 'PaymentRequestNotFound']);
    const junk = await waitOnSocket(`${ws}/ws/payment/..%2F..%2Fetc`);
    assert.equal(junk.code, 4013);
  });

  it('refuses a body over 10 KB with 413', async () => {
    const a = await node.post('/payment/verifypayment', { paymentid: 'x', pad: 'x'.repeat(11 * 1024) });
    assert.equal(a.status, 413);
  });
});
