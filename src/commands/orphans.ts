import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { liveRestUrl } from '../lib/catalog/live.js';
import { withStore } from '../lib/catalog/with-store.js';
import { durationFlag } from '../lib/cli-args.js';
import { writeStdout } from '../lib/command.js';
import { ExitCode, UsageError } from '../lib/errors.js';
import { defaultCsiNodeStateDir } from '../lib/orphans/csi-node-state.js';
import { deleteOrphans } from '../lib/orphans/delete.js';
import { countByKind, type Findings, findOrphans } from '../lib/orphans/find.js';
import { resolveKubeAccess } from '../lib/orphans/kube/config.js';
import { orphanListing, orphanRows } from '../lib/orphans/listing.js';
import type { DeleteOutcome } from '../lib/orphans/types.js';
import { renderLines } from '../lib/output/render.js';
import { defaultDataDir } from '../lib/paths.js';
import { RestClient } from '../lib/rest/client.js';
import { DEFAULT_REST_URL, readEndpoints } from '../lib/rest/endpoint.js';
import { RestCommand } from '../lib/rest-command.js';

/** kubelet's directory: csi-node's default root for staging and publish paths. */
const KUBELET_ROOT = '/var/lib/kubelet';

/**
 * The roots that go with a csi-node state dir: the one `storctl up` gave its csi-node (recorded in
 * endpoints.json) when the state dir is up's, else the kubelet's directory.
 */
function defaultRoots(stateDir: string): string[] {
  const up = readEndpoints();
  const upRoot = typeof up?.csiNodeRoot === 'string' ? up.csiNodeRoot : null;
  return upRoot && resolve(stateDir) === resolve(join(defaultDataDir(), 'csi-node'))
    ? [upRoot]
    : [KUBELET_ROOT];
}

export default class Orphans extends RestCommand {
  static override description =
    `list what nothing owns any more, each with why it is an orphan; --delete removes them
Kinds: replica (managed ReplicaSpec whose volume is unset or gone), engine-replica (held by an io-engine without a ReplicaSpec), nexus (NexusSpec whose volume is gone, or managed without owner), engine-nexus (run by an io-engine without a NexusSpec), engine-snapshot (a replica snapshot an io-engine holds that no volume snapshot records: left by a failed snapshot attempt of an earlier storctl, or by a store restored from an earlier dump), nexus-info (NexusInfo of a deleted volume or nexus), switchover (SwitchOver of a deleted volume, or finished longer than --switchover-grace ago), csi-node-volume (staged or published by csi-node here, though the volume is gone, unpublished or published elsewhere), volume-without-claim (with a Kubernetes API: neither PV nor PVC refers to the volume).
Specs are read straight from the store (works with core down); io-engines that heartbeat are asked what they hold. Report-only by default: exit 0 whatever it finds. --delete asks first unless -y, and deletes replicas, nexuses and volumes through core's REST API, NexusInfo and SwitchOver keys in the store (compare on their mod revision), io-engine leftovers on the io-engine, csi-node leftovers only below --csi-node-root and its state dir (proxy stopped first, then unmounts, loop device, FUSE mount, the state entry last; a running csi-node keeps its own copy of the entry until it restarts, so prefer running it with csi-node stopped).
Exit codes: 0 listed (or everything deleted or skipped as changed meanwhile); 2 --delete with neither a terminal nor -y, nothing changed; 5 store unreachable; 6 core or an io-engine a delete needs is unreachable (the other deletes are done); 8 a stored value did not decode (the rest is listed).`;

  static override examples = [
    '<%= config.bin %> orphans',
    '<%= config.bin %> orphans -o json',
    '<%= config.bin %> orphans --delete',
    '<%= config.bin %> orphans --delete -y --kubeconfig ~/.kube/config',
    '<%= config.bin %> orphans --csi-node-state /var/lib/storctl/csi-node --csi-node-root /var/lib/kubelet --node-id node-1',
  ];

  static override flags = {
    rest: Flags.string({
      description:
        'core REST URL the deletes go through (default: the core `storctl up` runs for this store, else http://127.0.0.1:8081)',
      env: 'STORCTL_REST',
    }),
    delete: Flags.boolean({ description: 'remove the orphans found (asks first unless -y)' }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask before deleting' }),
    kubeconfig: Flags.string({
      description:
        'kubeconfig of the Kubernetes API whose PVs and PVCs claim volumes (default: the in-cluster service account when present, else no volume-without-claim check)',
      env: 'STORCTL_KUBECONFIG',
    }),
    'csi-node-state': Flags.string({
      description: "csi-node's state directory (default: the data dir's csi-node directory, when it exists)",
      env: 'STORCTL_CSI_NODE_STATE_DIR',
    }),
    'csi-node-root': Flags.string({
      description: `directory below which csi-node stages and publishes; leftovers elsewhere are never touched (repeatable; default: the root \`storctl up\` gave its csi-node when the state dir is up's, else ${KUBELET_ROOT})`,
      multiple: true,
    }),
    'node-id': Flags.string({
      description:
        "this node's id as csi-node registers it: a staged volume published to other nodes only is an orphan",
    }),
    'switchover-grace': durationFlag({
      description: 'a finished switchover record older than this is stale',
      default: 10 * 60_000,
    }),
    'engine-timeout': durationFlag({
      description: 'how long each io-engine may take to list what it holds',
      default: 5_000,
      positive: true,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Orphans);
    if (flags.delete && !flags.yes && !process.stdin.isTTY)
      throw new UsageError('--delete asks for confirmation, and stdin is not a terminal', {
        suggestions: ['add -y to delete without asking', 'or leave out --delete to only list the orphans'],
      });
    const stateDir = flags['csi-node-state'] ?? defaultCsiNodeStateDir();
    if (flags['csi-node-state'] && !existsSync(stateDir))
      throw new UsageError(`--csi-node-state ${stateDir} does not exist`);
    const kube = await resolveKubeAccess(flags.kubeconfig);
    const format = this.globals.output;
    const say = (line: string) =>
      format === 'json' || format === 'yaml' ? this.logToStderr(line) : this.log(line);

    let outcomes: DeleteOutcome[] | undefined;
    const findings = await withStore(this.globals, async (store) => {
      const found = await findOrphans({
        store,
        space: this.globals.keySpace,
        engineTimeoutMs: flags['engine-timeout'],
        switchoverGraceMs: flags['switchover-grace'],
        csiNodeStateDir: existsSync(stateDir) ? stateDir : null,
        nodeId: flags['node-id'],
        kube,
      });
      if (flags.delete && found.orphans.length) {
        // Asking: the operator sees what would go first (on stderr: stdout stays one document).
        if (!flags.yes)
          for (const line of renderLines(orphanListing(found.orphans), 'table')) this.logToStderr(line);
        if (
          flags.yes ||
          (await this.confirm(`Delete ${found.orphans.length} orphan(s) (${countByKind(found)})? [y/N] `))
        ) {
          outcomes = await deleteOrphans(found, {
            store,
            space: this.globals.keySpace,
            rest: () => this.coreFor(flags.rest),
            kube,
            csiNodeRoots: flags['csi-node-root']?.length ? flags['csi-node-root'] : defaultRoots(stateDir),
            engineTimeoutMs: flags['engine-timeout'],
          });
        } else this.logToStderr('Nothing changed.');
      }
      return found;
    });

    for (const n of findings.notes) this.logToStderr(`note: ${n.source}: ${n.message}`);
    if (!kube)
      this.logToStderr(
        'note: no Kubernetes API configured (--kubeconfig): volumes without PV or PVC are not checked',
      );
    await this.printRows(findings, outcomes);
    this.summarize(findings, outcomes, flags.delete, say);
    this.reportDecodeErrors(findings);
    const failed = outcomes?.filter((o) => o.result === 'failed') ?? [];
    if (failed.length)
      this.exit(
        (failed.every((f) => f.exitCode === failed[0].exitCode) && failed[0].exitCode) || ExitCode.failure,
      );
  }

  private core?: RestClient;

  /**
   * Core for the deletes: --rest / STORCTL_REST, else the core `storctl up` runs for this very store
   * (as `get` decides, src/lib/catalog/live.ts), else the default. Never the core of another cluster
   * that `up` runs on this machine: its ids would not be this store's.
   */
  private coreFor(flag: string | undefined): RestClient {
    this.core ??= new RestClient(
      flag?.replace(/\/+$/, '') || liveRestUrl(this.globals.storeUrl) || DEFAULT_REST_URL,
    );
    return this.core;
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    try {
      await this.core?.close();
    } finally {
      this.core = undefined;
    }
    return super.finally(err);
  }

  private async printRows(findings: Findings, outcomes: DeleteOutcome[] | undefined): Promise<void> {
    const rows = orphanRows(findings.orphans, outcomes);
    if (!rows.length && (this.globals.output === 'table' || this.globals.output === 'wide')) return;
    for (const line of renderLines(orphanListing(rows), this.globals.output)) await writeStdout(`${line}\n`);
  }

  private summarize(
    findings: Findings,
    outcomes: DeleteOutcome[] | undefined,
    asked: boolean,
    say: (l: string) => void,
  ): void {
    const n = findings.orphans.length;
    if (!n) {
      say('No orphans found.');
      return;
    }
    say(`${n} orphan(s): ${countByKind(findings)}.`);
    if (!outcomes) {
      if (!asked) say('Run `storctl orphans --delete` to remove them (-o wide shows how).');
      return;
    }
    const by = (r: DeleteOutcome['result']) => outcomes.filter((o) => o.result === r).length;
    say(`Deleted ${by('deleted')}, skipped ${by('skipped')}, failed ${by('failed')}.`);
    for (const o of outcomes.filter((x) => x.result !== 'deleted'))
      this.logToStderr(`${o.result}: ${o.orphan.kind} ${o.orphan.id}: ${o.detail}`);
  }

  private reportDecodeErrors(findings: Findings): void {
    if (!findings.decodeErrors.length) return;
    for (const err of findings.decodeErrors) this.logToStderr(`Error: ${err.message}`);
    this.logToStderr(
      'Try: storctl store dump | grep <key> to inspect the raw value; orphans among them are not listed',
    );
    this.exit(ExitCode.corrupt);
  }
}
