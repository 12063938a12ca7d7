import { join, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { collectBundle } from '../lib/bundle/collect.js';
import { Redactor } from '../lib/bundle/redact.js';
import { writeTarGz } from '../lib/bundle/tar.js';
import { durationFlag } from '../lib/cli-args.js';
import { StorctlCommand } from '../lib/command.js';
import { stateLayout } from '../lib/mount/s3-volumes.js';
import { defaultMounterStateDir } from '../lib/mount/state-dir.js';
import { defaultDataDir } from '../lib/paths.js';

export default class Dump extends StorctlCommand {
  static override description = `write a support bundle: a tar.gz named with the UTC time, secrets redacted
It holds: store/dump.jsonl (every key of the cluster, as \`store dump\` writes it, redacted: not a backup, \`store dump\` makes those); get/*.json (nodes, pools, volumes, replicas, nexuses, snapshots, switchovers, events, as \`get … -o json\`); doctor/store.json and doctor/mounts.json; orphans.json (what nothing owns, as \`orphans -o json\` reports it: nothing is deleted); versions.json (storctl, node, platform, the running io-engines); endpoints.json (what \`storctl up\` publishes); logs/ (the last --log-lines lines of every role's log in the data dir, and of the mounter's FUSE daemons); mounter/mounts.json (mount records); csi-node/state.json and owner.json (what csi-node staged, and the process keeping it) with logs/csi-node-proxy/ (each staged volume's path-proxy log); manifest.json (each part, or why it is missing: a part that cannot be collected never stops the bundle).
Redacted everywhere: the values of the environment's secret variables (AWS_SECRET_ACCESS_KEY, …) and of the mounter's credential files (which are never copied), fields and variables named like secrets, and AWS access key ids. Works with every daemon down (the store must answer for the store, get and doctor parts).`;

  static override examples = [
    '<%= config.bin %> dump',
    '<%= config.bin %> dump --file /tmp/support.tar.gz',
    '<%= config.bin %> dump --store etcd://10.0.0.5:2379 --data-dir /var/lib/storctl --log-lines 20000',
  ];

  static override flags = {
    file: Flags.string({
      char: 'f',
      description: 'where to write the bundle (default: ./storctl-dump-<UTC time>.tar.gz)',
    }),
    'data-dir': Flags.string({
      description: 'the data dir `storctl up` ran in: its logs/ and endpoints.json go in the bundle',
      env: 'STORCTL_DATA_DIR',
    }),
    'mounter-state-dir': Flags.string({
      description: "the mounter's state directory (its FUSE daemon logs and mount records)",
      env: 'STORCTL_MOUNTER_STATE_DIR',
    }),
    'csi-node-state': Flags.string({
      description:
        "csi-node's state directory: its state file and each staged volume's path-proxy log go in (default: the data dir's csi-node directory)",
      env: 'STORCTL_CSI_NODE_STATE_DIR',
    }),
    'log-lines': Flags.integer({ description: 'lines kept from the end of each log', default: 5000, min: 1 }),
    'command-timeout': durationFlag({
      description: 'how long each listing or check in the bundle may take',
      default: 60_000,
      positive: true,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Dump);
    const dataDir = flags['data-dir'] ?? defaultDataDir();
    const mounterStateDir = flags['mounter-state-dir'] ?? defaultMounterStateDir();
    const csiNodeStateDir = flags['csi-node-state'] ?? join(dataDir, 'csi-node');
    const stamp = new Date()
      .toISOString()
      .replace(/\.\d+Z$/, 'Z')
      .replaceAll(':', '-');
    const root = `storctl-dump-${stamp}`;
    const file = resolve(flags.file ?? `${root}.tar.gz`);
    const redactor = new Redactor();
    redactor.addEnvironment(process.env);
    await redactor.addCredentialDir(stateLayout(mounterStateDir).credentialDir);
    if (process.env.STORCTL_S3_SECRETS_FILE)
      await redactor.addCredentialFiles([process.env.STORCTL_S3_SECRETS_FILE]);
    const g = this.globals;
    const globalArgs = [
      '--store',
      g.storeUrl,
      '--cluster-id',
      g.keySpace.clusterId,
      '--namespace',
      g.keySpace.namespace,
    ];
    for (const [flag, value] of [
      ['--etcd-ca', g.tls.ca],
      ['--etcd-cert', g.tls.cert],
      ['--etcd-key', g.tls.key],
    ] as const)
      if (value) globalArgs.push(flag, value);
    this.logToStderr(`collecting a support bundle from ${g.storeUrl} and ${dataDir} …`);
    const entries = await collectBundle(root, {
      bin: process.argv[1],
      globalArgs,
      storeUrl: g.storeUrl,
      tls: g.tls,
      space: g.keySpace,
      dataDir,
      mounterStateDir,
      csiNodeStateDir,
      logLines: flags['log-lines'],
      version: this.config.version,
      redactor,
      commandTimeoutMs: flags['command-timeout'],
    });
    await writeTarGz(file, entries);
    const manifest = JSON.parse(String(entries.at(-1)?.content)) as {
      parts: { name: string; ok: boolean; note?: string }[];
    };
    for (const p of manifest.parts.filter((x) => !x.ok))
      this.logToStderr(`note: ${p.name} left out: ${p.note}`);
    this.log(file);
  }
}
