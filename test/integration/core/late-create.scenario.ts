/**
 * Scenario of late-create.test.ts, run in a network namespace of its own (test/helpers/netns.ts).
 * node-2's gRPC listens on 127.0.0.3 (its NBD and its store stay reachable). Cutting that address
 * holds core's CreateReplica calls in the dropped link: core gives up after its request timeout,
 * and the io-engine carries them out once the link is back. Prints `RESULT <json>` last.
 */
import { watch } from 'node:fs';
import { join } from 'node:path';
import { cutAddress, reportResult } from '../../helpers/netns.js';
import { unusedPort } from '../../helpers/ports.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from './cluster.js';
import { checkConsistency } from './invariants.js';

const MiB = 1024 * 1024;
const GRPC_ADDRESS = '127.0.0.3';
const prefersNode2 = {
  node_topology: { explicit: { allowed_nodes: ['node-1', 'node-2', 'node-3'], preferred_nodes: ['node-2'] } },
};

const c = await TestCluster.start({ engines: 3, pools: false });
let cut = false;
try {
  const old = c.engine('node-2');
  await old.proc.kill('SIGKILL');
  await c.startEngine('node-2', { grpc: `${GRPC_ADDRESS}:${await unusedPort()}`, nbd: old.nbd });
  for (const e of c.engines) await c.createNodePool(e.node, 256 * MiB);

  // Every replica file node-2 creates from now on (the GC may remove one soon after).
  const made = new Set<string>();
  const watcher = watch(join(c.dir, 'node-2', 'pool', 'replicas'), (_, name) => {
    if (name?.endsWith('.img')) made.add(name);
  });
  cutAddress(GRPC_ADDRESS);
  cut = true;
  // Placed on node-1 and node-3 once node-2's create times out.
  const placed = await c.rest
    .createVolume(newVolumeId(), {
      size: 8 * MiB,
      replicas: 2,
      thin: true,
      policy: { self_heal: false },
      topology: prefersNode2,
    })
    .then(
      (v) =>
        Object.values(v.state.replica_topology)
          .map((r) => r.node)
          .sort(),
      (e: Error) => e.message,
    );
  // No third node: fails, and is rolled back.
  const refused = await c.rest
    .createVolume(newVolumeId(), { size: 8 * MiB, replicas: 3, thin: true, policy: { self_heal: false } })
    .then(
      () => 'created',
      (e: Error) => e.message,
    );
  // Once core's poll of node-2 has gone unanswered, placement tries node-2's pool last: no wait.
  await waitFor(() => c.cores[0].output.includes('"node":"node-2","err":"io-engine node-2: no answer'), {
    what: "core's poll of node-2 to go unanswered",
  });
  const avoidedId = newVolumeId();
  const avoided = await c.rest.createVolume(avoidedId, {
    size: 8 * MiB,
    replicas: 2,
    thin: true,
    policy: { self_heal: false },
    topology: prefersNode2,
  });
  cutAddress(GRPC_ADDRESS, false);
  cut = false;

  // The held creates reach node-2 once TCP retransmits them (its backoff grew while cut).
  const arrived = await waitFor(() => (made.size >= 2 ? true : null), {
    what: 'node-2 to carry out both held creates',
    timeoutMs: 90_000,
  }).catch(() => false);
  watcher.close();
  // What they made must not outlive the GC.
  const consistent = await waitFor(
    async () => ((await checkConsistency(c)).violations.length === 0 ? true : null),
    { what: 'no replica left on node-2 that no spec names', timeoutMs: 45_000 },
  ).catch(() => false);
  const violations = (await checkConsistency(c)).violations;
  const events = await c.events();
  reportResult({
    placed,
    refused,
    avoided: Object.values(avoided.state.replica_topology)
      .map((r) => r.node)
      .sort(),
    avoidedEvent: events.find((e) => e.includes('"Created"') && e.includes(avoidedId)),
    arrived,
    consistent,
    violations,
    orphaned: events.filter((e) => e.includes('"Orphaned"')),
    created: events.filter((e) => e.includes('"Created"') && e.includes('"volume"')),
  });
} finally {
  if (cut) cutAddress(GRPC_ADDRESS, false);
  await c.stop();
}
