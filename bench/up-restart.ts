/**
 * `storctl up` stopped (SIGINT) and started again with N published 3-replica volumes: seconds from
 * the restarted `up`'s ready line until every volume is Online at the target URI it had, and how
 * many rebuilds that took (bar: 0 rebuilds, all Online within 10 s). The peer is the first start:
 * seconds from `up` ready until the same N volumes were created and published. Prints JSON. Run
 * after `npm run build`:
 *   npx tsx bench/up-restart.ts [volumes]
 */
import { rmSync } from 'node:fs';
import { RestClient } from '../src/lib/rest/client.js';
import { UpHome } from '../test/e2e/core/up-fixture.js';
import type { StorctlProcess } from '../test/helpers/storctl.js';
import { waitFor } from '../test/helpers/wait.js';

const volumes = Number(process.argv[2] ?? 10);
const cluster = new UpHome();
const endpoints = () => cluster.endpoints();

async function start(): Promise<{ proc: StorctlProcess; readyAt: number }> {
  const proc = await cluster.start();
  return { proc, readyAt: performance.now() };
}

async function main() {
  let up = await start();
  let rest = new RestClient(endpoints().rest);
  const uris = new Map<string, string>();
  for (let i = 0; i < volumes; i++) {
    const id = crypto.randomUUID();
    await rest.createVolume(id, { size: 64 << 20, replicas: 3, thin: true, policy: { self_heal: true } });
    const v = await rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: `node-${(i % 3) + 1}`,
    });
    uris.set(id, v.state.target!.deviceUri);
  }
  const firstCreateSecs = (performance.now() - up.readyAt) / 1000;
  await rest.close();
  const stopStart = performance.now();
  await up.proc.kill('SIGINT');
  const stopSecs = (performance.now() - stopStart) / 1000;

  up = await start();
  rest = new RestClient(endpoints().rest);
  try {
    await waitFor(
      async () => {
        const vols = await rest.listVolumes();
        return (
          vols.length === volumes &&
          vols.every(
            (v) => v.state.status === 'Online' && v.state.target?.deviceUri === uris.get(v.spec.uuid),
          )
        );
      },
      { what: 'every volume Online at its old URI', timeoutMs: 120_000, intervalMs: 20 },
    );
    const onlineSecs = (performance.now() - up.readyAt) / 1000;
    let rebuilds = 0;
    for (const id of uris.keys())
      rebuilds += (await rest.call<{ records: unknown[] }>('GET', `/volumes/${id}/rebuild-history`)).records
        .length;
    console.log(
      JSON.stringify(
        {
          command: `npx tsx bench/up-restart.ts ${volumes}`,
          volumes,
          replicas: 3,
          stop_s: Math.round(stopSecs * 10) / 10,
          restart_ready_to_all_online_s: Math.round(onlineSecs * 100) / 100,
          first_start_ready_to_all_published_s: Math.round(firstCreateSecs * 100) / 100,
          rebuilds,
          same_uris: true,
          bar: { rebuilds: 0, online_within_s: 10, met: rebuilds === 0 && onlineSecs < 10 },
        },
        null,
        2,
      ),
    );
  } finally {
    await rest.close();
    await up.proc.kill('SIGINT');
    rmSync(cluster.home, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
