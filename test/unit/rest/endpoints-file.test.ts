import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readEndpoints, writeEndpoints } from '../../../src/lib/rest/endpoint.js';

describe("up's endpoints.json", () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-endpoints-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes made at once (two roles restarted together) all succeed and leave one whole file, 0600', async () => {
    const writes = Array.from({ length: 8 }, (_, i) =>
      writeEndpoints(dir, { store: 'etcd://127.0.0.1:2379', rest: `http://127.0.0.1:${8000 + i}` }),
    );
    await expect(Promise.all(writes)).resolves.toHaveLength(8);
    expect(readEndpoints(dir)?.rest).toMatch(/^http:\/\/127\.0\.0\.1:800\d$/);
    expect(statSync(join(dir, 'endpoints.json')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['endpoints.json']);
  });
});
