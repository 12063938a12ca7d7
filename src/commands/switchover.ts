import type * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { Flags } from '@oclif/core';
import { durationFlag, hostPortFlag } from '../lib/cli-args.js';
import { StorctlCommand, writeStdout } from '../lib/command.js';
import { ExitCode, type ExitCodeValue, StorctlError } from '../lib/errors.js';
import { HaClusterClient, type SwitchoverProgress } from '../lib/ha/clients.js';
import { haClusterElection, haClusterEndpoint } from '../lib/ha/election.js';
import { toYaml } from '../lib/output/yaml.js';
import { uuidArg } from '../lib/rest/cli.js';
import { currentLeader } from '../lib/store/election.js';
import { openStore } from '../lib/store/open.js';

const exitOf: Partial<Record<number, ExitCodeValue>> = {
  [status.INVALID_ARGUMENT]: ExitCode.usage,
  [status.NOT_FOUND]: ExitCode.notFound,
  [status.FAILED_PRECONDITION]: ExitCode.conflict,
  [status.ALREADY_EXISTS]: ExitCode.conflict,
  [status.ABORTED]: ExitCode.conflict,
  [status.UNAVAILABLE]: ExitCode.serviceUnavailable,
  [status.DEADLINE_EXCEEDED]: ExitCode.timeout,
};

function haError(err: unknown, where: string, endpoint: string): StorctlError {
  const e = err as grpc.ServiceError;
  const code = exitOf[e.code] ?? ExitCode.failure;
  // grpc-js wraps a refused connection in prose; keep the cause.
  const detail = (e.details || e.message)
    .replace(/^No connection established\. Last error: (Error: )?/, '')
    .replace(/\.? ?Resolution note: ?$/, '');
  if (code === ExitCode.serviceUnavailable)
    return new StorctlError(
      'HA_CLUSTER_UNAVAILABLE',
      `ha-cluster at ${endpoint} cannot take the request: ${detail}`,
      code,
      {
        suggestions: ['storctl up (it runs ha-cluster)', 'storctl daemon ha-cluster --help'],
      },
    );
  return new StorctlError('SWITCHOVER_FAILED', `ha-cluster ${where}: ${detail}`, code);
}

export default class Switchover extends StorctlCommand {
  static override summary =
    "move a published volume's target to another node through ha-cluster's switchover state machine";
  static override description =
    `The same switchover ha-cluster runs when a node agent reports a failed path: Init → RepublishVolume (core builds a new target from the healthy replicas, fences the old one) → ReplacePath (the node agent re-points the application's path; its filesystem stays mounted) → DeleteTarget → Successful. Use it for maintenance, or for a path the agents did not catch. Refused when the volume is not published or has no healthy replica on another node. A volume no csi-node has staged (published with \`volume publish\`) has no path to re-point: its NBD clients lose the old target and must connect to the new one (--wait prints it).

Without --wait it returns once the switchover is recorded; --wait follows the stages on stderr and prints the new target. --cancel ends a stuck record (refused while a stage is running unless --force). The ha-cluster address is found in the store (its election), or given with --ha-cluster.`;
  static override examples = [
    '<%= config.bin %> switchover --volume 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --wait',
    '<%= config.bin %> switchover --volume 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --to-node node-2 --wait --timeout 2m -o json',
    '<%= config.bin %> switchover --volume 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --cancel',
  ];
  static override flags = {
    volume: Flags.string({ description: 'volume uuid', required: true }),
    'to-node': Flags.string({ description: 'node to move the target to (default: core chooses one)' }),
    wait: Flags.boolean({ description: 'follow the stages until the switchover ends', default: false }),
    timeout: durationFlag({ description: 'how long --wait waits', default: 120_000, positive: true }),
    cancel: Flags.boolean({ description: "end the volume's switchover record instead", default: false }),
    force: Flags.boolean({
      description: 'with --cancel: end it even while a stage is running',
      default: false,
    }),
    'ha-cluster': Flags.string({
      description: 'HOST:PORT of the active ha-cluster (default: from the store)',
      env: 'STORCTL_HA_CLUSTER',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Switchover);
    const volume = uuidArg('--volume', flags.volume);
    if (flags.force && !flags.cancel)
      throw new StorctlError('USAGE', '--force only goes with --cancel', ExitCode.usage);
    const client = new HaClusterClient(await this.haCluster(flags['ha-cluster']));
    try {
      if (flags.cancel) {
        const { stage } = await client.cancel(volume, flags.force).catch((err) => {
          throw haError(err, 'refused the cancel', client.endpoint);
        });
        if (await this.structuredOut({ volume, cancelled: true, stage })) return;
        this.logToStderr(`switchover of volume ${volume} cancelled (it was at ${stage})`);
        return;
      }
      const last = await this.follow(client, volume, flags['to-node'], flags.wait, flags.timeout);
      if (await this.structuredOut(last)) {
        // printed as asked
      } else if (last.failed) {
        // said below, as the error
      } else if (last.done) {
        await writeStdout(`${last.new_target_uri}\n`);
        this.logToStderr(
          `volume ${volume}: target moved to ${last.new_target_uri}${last.target_node ? ` on node ${last.target_node}` : ''}`,
        );
      } else {
        this.logToStderr(
          `switchover of volume ${volume} started (stage ${last.stage}); follow it: storctl events --id ${volume} --watch (its record leaves \`get switchovers\` once it ends)`,
        );
      }
      if (last.failed)
        throw new StorctlError(
          'SWITCHOVER_FAILED',
          `switchover of volume ${volume} failed: ${last.message}`,
          ExitCode.failure,
          {
            suggestions: [
              'storctl get switchovers',
              `storctl describe volume ${volume}`,
              'storctl events --resource switchover',
            ],
          },
        );
    } finally {
      client.close();
    }
  }

  /** With -o json|yaml: print `value` so and say true. */
  private async structuredOut(value: unknown): Promise<boolean> {
    if (this.globals.output === 'json') await writeStdout(`${JSON.stringify(value)}\n`);
    else if (this.globals.output === 'yaml') await writeStdout(toYaml(value));
    else return false;
    return true;
  }

  /** Start (or join) the switchover; with `wait`, print each stage until it ends. */
  private follow(
    client: HaClusterClient,
    volume: string,
    toNode: string | undefined,
    wait: boolean,
    timeoutMs: number,
  ): Promise<SwitchoverProgress> {
    return new Promise((resolve, reject) => {
      const stream = client.switchover(volume, toNode, timeoutMs);
      let last: SwitchoverProgress | null = null;
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        stream.cancel();
        fn();
      };
      stream.on('data', (p: SwitchoverProgress) => {
        if (wait && p.stage !== last?.stage)
          this.logToStderr(`volume ${volume}: ${p.stage}${p.message ? ` (${p.message})` : ''}`);
        else if (wait && p.retry_count !== last?.retry_count && p.message)
          this.logToStderr(`volume ${volume}: ${p.stage} retry ${p.retry_count}: ${p.message}`);
        last = p;
        if (p.done || !wait) settle(() => resolve(p));
      });
      stream.on('error', (err: grpc.ServiceError) => {
        if (err.code === status.CANCELLED && last) return settle(() => resolve(last!));
        settle(() =>
          reject(
            err.code === status.DEADLINE_EXCEEDED
              ? new StorctlError(
                  'TIMEOUT',
                  `switchover of volume ${volume} did not end within ${timeoutMs} ms (it goes on; see storctl get switchovers)`,
                  ExitCode.timeout,
                )
              : haError(err, 'refused the switchover', client.endpoint),
          ),
        );
      });
      stream.on('end', () =>
        settle(() =>
          last ? resolve(last) : reject(new Error('ha-cluster ended the stream without a stage')),
        ),
      );
    });
  }

  private async haCluster(flag: string | undefined): Promise<string> {
    if (flag) {
      hostPortFlag('ha-cluster', flag, '127.0.0.1:11500');
      return flag;
    }
    const store = await openStore(this.globals.storeUrl, { tls: this.globals.tls, existing: true });
    try {
      const leader = await currentLeader(store, haClusterElection(this.globals.keySpace));
      const endpoint = leader && haClusterEndpoint(leader.value);
      if (!endpoint)
        throw new StorctlError(
          'HA_CLUSTER_NOT_RUNNING',
          'no ha-cluster is active for this cluster (none holds its election in the store)',
          ExitCode.serviceUnavailable,
          {
            suggestions: [
              'storctl up (it runs ha-cluster)',
              'storctl daemon ha-cluster --help',
              'pass --ha-cluster HOST:PORT',
            ],
          },
        );
      return endpoint;
    } finally {
      await store.close();
    }
  }
}
