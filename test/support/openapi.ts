/** An OpenAPI document checked against the official 3.1 schema, plus what the schema cannot see. */
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';

export async function assertValidOpenApi(doc: any): Promise<void> {
  const v = new Validator();
  const res = await v.validate(doc);
  assert.equal(res.valid, true, JSON.stringify(res.errors, null, 1)?.slice(0, 3000));
  assert.equal(v.version, '3.1');
  // What the schema cannot see: unique operation ids, and every {param} of a path declared once.
  const ids = new Set<string>();
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    for (const op of Object.values<any>(item)) {
      assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} is used twice`);
      ids.add(op.operationId);
      const inPath = [...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = op.parameters.filter((x: any) => x.in === 'path').map((x: any) => x.name).sort();
      assert.deepEqual(declared, inPath, `${p} parameters`);
    }
  }
}
