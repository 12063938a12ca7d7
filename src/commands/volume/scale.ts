import { setTimeout as sleep } from 'node:timers/promises';
import { Args, Flags } from '@oclif/core';
import { durationFlag, formatDuration, positionalOrFlag } from '../../lib/cli-args.js';
import { ExitCode, StorctlError, TimeoutError, UsageError } from '../../lib/errors.js';
import { rebuildProgress, uuidArg, volumeListing } from '../../lib/rest/cli.js';
import { RestError } from '../../lib/rest/errors.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeScale extends RestCommand {
  static override description =
    'change the replica count of a volume by one; a new replica of a published volume is rebuilt while I/O continues (progress on stderr)';
  static override examples = [
    '<%= config.bin %> volume scale 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --replicas 3',
    '<%= config.bin %> volume scale 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --replicas 2 --no-wait',
    "<%= config.bin %> volume scale 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b 3   # kubectl-mayastor's form",
    '# move its replica off node-3 (to empty that pool): a scale-down removes replicas on cordoned nodes first\n<%= config.bin %> node cordon node-3\n<%= config.bin %> volume scale 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b 4\n<%= config.bin %> volume scale 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b 3',
  ];
  static override args = {
    id: Args.string({ description: 'volume uuid', required: true }),
    replicas: Args.integer({
      description: 'new replica count, as kubectl-mayastor takes it (same as --replicas)',
      min: 1,
      max: 255,
    }),
  };
  static override flags = {
    replicas: Flags.integer({ description: 'new replica count', min: 1, max: 255 }),
    wait: Flags.boolean({ description: 'wait until rebuilds finish', default: true, allowNo: true }),
    timeout: durationFlag({
      description: 'how long to wait for rebuilds, e.g. 90s or 10m (a bare number is seconds)',
      default: 600_000,
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeScale);
    const id = uuidArg('volume id', args.id);
    const replicas = positionalOrFlag('replica count', 'replicas', args.replicas, flags.replicas);
    if (replicas === undefined)
      throw new UsageError('give the new replica count', {
        suggestions: [`storctl volume scale ${id} --replicas N`],
      });
    const before = new Set(Object.keys((await this.client.getVolume(id)).state.replica_topology));
    // Already at that count: nothing to do (core answers ReplicaCountAchieved, as upstream does).
    let v = await this.client
      .scaleVolume(id, replicas)
      .catch((err) =>
        err instanceof RestError && err.details === 'ReplicaCountAchieved'
          ? this.client.getVolume(id)
          : Promise.reject(err),
      );
    if (flags.wait && v.state.target) {
      const deadline = Date.now() + flags.timeout;
      const added = Object.keys(v.state.replica_topology).filter((r) => !before.has(r));
      let last = -1;
      let rebuilt = false;
      for (;;) {
        v = await this.client.getVolume(id);
        const { rebuilding, percent } = rebuildProgress(v);
        if (rebuilding === 0 && v.state.status === 'Online') break;
        // A new replica whose rebuild failed: faulted, or already removed by core to be replaced.
        const failed = added.filter(
          (r) =>
            v.state.replica_topology[r]?.['child-status'] !== 'Degraded' &&
            v.state.replica_topology[r]?.['child-status'] !== 'Online',
        );
        if (failed.length)
          throw new StorctlError(
            'REBUILD_FAILED',
            `volume ${id}: the rebuild of its new replica ${failed.join(', ')} failed; core keeps the count at ${replicas} and replaces it on a pool that can take it (self-heal), or says in its events why it cannot`,
            ExitCode.conflict,
            {
              suggestions: [
                `see why and what core does next: \`storctl events --id ${id}\``,
                `see the rebuild: \`storctl volume rebuild-history ${id}\``,
              ],
            },
          );
        if (rebuilding > 0 && percent !== last) {
          this.logToStderr(`rebuilding ${rebuilding} replica(s): ${percent}%`);
          rebuilt = true;
          last = percent;
        }
        if (Date.now() > deadline)
          throw new TimeoutError(`volume ${id} still rebuilding after ${formatDuration(flags.timeout)}`, {
            suggestions: [
              `watch it with \`storctl volume scale ${id} --replicas ${replicas}\` or \`storctl events --watch\``,
            ],
          });
        await sleep(500);
      }
      if (rebuilt) this.logToStderr('rebuild complete');
    }
    this.print(volumeListing([v]));
  }
}
