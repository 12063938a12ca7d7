/**
 * Scenario of data-partition.test.ts, run in a network namespace of its own (test/helpers/netns.ts).
 * node-1 serves NBD on 127.0.0.2 and gRPC on 127.0.0.1: cutting 127.0.0.2 cuts its data network
 * while core still reaches it. Prints `RESULT <json>` last.
 */
import { join } from 'node:path';
import { cutAddress, reportResult } from '../../helpers/netns.js';
import { unusedPort } from '../../helpers/ports.js';
import { waitFor } from '../../helpers/wait.js';
import { HaRig } from './fixture.js';
import { DurableWriter } from './writer.js';

const MiB = 1024 * 1024;
const DATA_ADDRESS = '127.0.0.2';

const rig = await HaRig.start({ engines: 3, pools: false });
const c = rig.cluster;
let cut = false;
try {
  const old = c.engine('node-1');
  await old.proc.kill('SIGKILL');
  await c.startEngine('node-1', { grpc: old.grpc, nbd: `${DATA_ADDRESS}:${await unusedPort()}` });
  for (const e of c.engines) await c.createNodePool(e.node, 256 * MiB);
  const vol = await rig.published('node-1', { size: 64 * MiB, replicas: 2 });
  const writer = new DurableWriter(join(await rig.stage(vol), 'data.bin'));
  writer.start();
  await waitFor(() => writer.acked >= 20 || writer.errors.length > 0, { what: 'the writer under way' });

  cutAddress(DATA_ADDRESS);
  cut = true;
  const ackedAtCut = writer.acked;
  // While node-1 stays cut off, the target must move to a node the application can reach.
  const moved = await waitFor(
    async () => {
      const v = await c.rest.getVolume(vol.id);
      return v.state.target && v.state.target.node !== 'node-1' ? v : null;
    },
    { what: 'the target to move off node-1', timeoutMs: 60_000 },
  ).catch(() => null);
  await waitFor(() => writer.acked >= ackedAtCut + 50 || writer.errors.length > 0, {
    what: 'writes to go on while node-1 is cut off',
    timeoutMs: 60_000,
  }).catch(() => {});
  const ackedWhileCut = writer.acked;
  cutAddress(DATA_ADDRESS, false);
  cut = false;

  await rig.healthy(vol.id, 2, 60_000).catch(() => {});
  await writer.stop();
  const final = await c.rest.getVolume(vol.id);
  const events = (await c.events()).filter((e) => e.includes(vol.id));
  reportResult({
    movedTo: moved?.state.target?.node ?? null,
    ackedAtCut,
    ackedWhileCut,
    errors: writer.errors,
    verify: await writer.verify(),
    finalStatus: final.state.status,
    finalChildren: (final.state.target?.children ?? []).map((ch) => ch.state),
    events,
  });
} finally {
  if (cut) cutAddress(DATA_ADDRESS, false);
  await rig.stop();
}
