import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/lib/errors.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { TxnOp } from '../../../src/lib/store/types.js';
import { createdVolumeSpec } from '../../helpers/specs.js';
import { STORCTL_BIN } from '../../helpers/storctl.js';

const space = { clusterId: 'closed-output', namespace: 'default' };

/**
 * `storctl get volumes | head`: the reader takes the first bytes and goes away. The command must
 * end at once and quietly, as etcdctl or kubectl (ended by SIGPIPE) do, not wait forever for a
 * 'drain' that cannot come.
 */
describe('a command whose output reader goes away', () => {
  let dir: string;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-closed-output-'));
    url = `sqlite:${join(dir, 'store.db')}`;
    const store = await openStore(url);
    // Far more than a pipe holds (64 KiB), so the command is still writing when the reader leaves.
    for (let batch = 0; batch < 20; batch++) {
      const ops: TxnOp[] = [];
      for (let i = 0; i < 100; i++) {
        const uuid = randomUUID();
        ops.push({
          type: 'put',
          key: objectKey(space, 'VolumeSpec', uuid),
          value: JSON.stringify(createdVolumeSpec(uuid)),
        });
      }
      await store.txn({ compare: [], success: ops });
    }
    await store.close();
  });
  // A command that hangs (the defect this guards against) is stopped when its test gives up.
  const started: ChildProcess[] = [];
  afterEach(() => {
    for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Run storctl, close its stdout after the first chunk, and answer how it ended. */
  async function readFirstChunkAndLeave(args: string[]) {
    const child = spawn(
      process.execPath,
      [STORCTL_BIN, ...args, '--store', url, '--cluster-id', space.clusterId],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    started.push(child);
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = once(child, 'exit');
    const [first] = (await once(child.stdout, 'data')) as [Buffer];
    child.stdout.destroy();
    const [code, signal] = (await exited) as [number | null, string | null];
    return { first: first.toString(), code, signal, stderr };
  }

  it.each([
    ['get volumes -o json', ['get', 'volumes', '-o', 'json'], '['],
    ['get volumes -o yaml', ['get', 'volumes', '-o', 'yaml'], '- spec:'],
    ['get volumes (table)', ['get', 'volumes'], 'ID'],
    ['store dump', ['store', 'dump'], '{'],
  ])(
    '%s ends with 141 and no error text',
    async (_name, args, start) => {
      const r = await readFirstChunkAndLeave(args);
      expect(r.first.trimStart().startsWith(start)).toBe(true);
      expect(r.signal).toBeNull();
      expect(r.code).toBe(ExitCode.outputClosed);
      // The table's "core is not reachable" note is printed before the rows; nothing after it.
      expect(r.stderr).not.toMatch(/error|EPIPE/i);
    },
    30_000,
  );
});
