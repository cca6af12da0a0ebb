/** Asserts on the node API's envelope: the data of a success, the error data of a refusal, both at HTTP 200. */
import assert from 'node:assert/strict';

interface Answerish {
  status: number;
  json: any;
  text: string;
}

/** The envelope's data of a successful answer (fails the test with the answer's text otherwise). */
export function ok(answer: Answerish): any {
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json?.status, 'success', answer.text);
  return answer.json.data;
}

/** The envelope's error data (`{code, name, message}`), at wire status `wire` when given (413, 503, ...). */
export function err(answer: Answerish, wire?: number): { code: number | string; name: string; message: string } {
  if (wire !== undefined) assert.equal(answer.status, wire, answer.text);
  assert.equal(answer.json?.status, 'error', answer.text);
  return answer.json.data;
}

/** The error data of a refusal answered in the envelope at HTTP 200 (a handled error, no wire status). */
export const refused = (answer: Answerish) => err(answer, 200);
