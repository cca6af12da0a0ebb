/** What a check refused with: the message of the 400 ValidationError `fn` throws (fails when it does not). */
import assert from 'node:assert/strict';
import { ApiError } from '../../core/plugin-api.ts';

export function validationRefusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    assert.deepEqual([e.code, e.name], [400, 'ValidationError']);
    return e.message;
  }
  assert.fail('not refused');
}
