import { Flags } from '@oclif/core';
import { defaultClusterId } from '../lib/cluster-id.js';
import { StorctlCommand } from '../lib/command.js';
import { humanizeBytes } from '../lib/output/humanize.js';
import { defaultDataDir, defaultStoreUrl } from '../lib/paths.js';
import { sizeArg } from '../lib/rest/cli.js';
import { RestClient } from '../lib/rest/client.js';
import { commandCluster, endpointsFile } from '../lib/rest/endpoint.js';
import type { KeySpace } from '../lib/store/keys.js';
import { parseRoles, ROLE_NAMES, up } from '../lib/up/cluster.js';

export default class Up extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    'run a whole single-machine cluster, each role its own process: core, three io-engines, the block CSI driver (csi-controller, csi-node), HA agents (ha-cluster, ha-node) and the S3 mounter on the embedded store; --roles runs a subset; a role that dies is restarted; Ctrl-C (or SIGTERM, SIGHUP) stops everything in order, and if up itself is killed its roles stop by themselves';
  static override examples = [
    '<%= config.bin %> up',
    '<%= config.bin %> up --data-dir /tmp/storctl-demo --rest 127.0.0.1:0',
    '# then, in another terminal: <%= config.bin %> volume create --size 1GiB --replicas 3',
    '<%= config.bin %> up --roles core,io-engine --nodes 2',
    '<%= config.bin %> up --roles mounter --s3-endpoint http://127.0.0.1:9000',
  ];
  static override flags = {
    'data-dir': Flags.string({
      description: 'where the store, pools and logs live',
      env: 'STORCTL_DATA_DIR',
    }),
    rest: Flags.string({
      description: 'HOST:PORT of the core REST API (port 0 picks a free one)',
      default: '127.0.0.1:8081',
    }),
    nodes: Flags.integer({ description: 'number of io-engines', default: 3, min: 1, max: 16 }),
    roles: Flags.string({
      description: `run only these roles (comma-separated; default: all of them): ${ROLE_NAMES.join(', ')}. csi-controller, csi-node and ha-cluster need core; ha-node needs csi-node and ha-cluster`,
      helpValue: 'ROLE,…',
    }),
    's3-endpoint': Flags.string({
      description: 'S3 endpoint URL of the bucket mounter (default: the FUSE binary default, AWS)',
      env: 'STORCTL_S3_ENDPOINT',
    }),
    'lease-ttl': Flags.integer({
      description:
        "core's single-writer store lease TTL in seconds: in a store outage longer than this core stops writing and exits, and up starts it again once the store is back (io-engine targets and S3 mounts serve on meanwhile)",
      default: 30,
      min: 1,
      max: 3600,
    }),
    'pool-capacity': Flags.string({
      description: 'capacity of the pool created on each node',
      default: '10GiB',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Up);
    const dataDir = flags['data-dir'] ?? defaultDataDir();
    const storeUrl = flags.store ?? defaultStoreUrl(dataDir);
    // Its own flags or this machine's id: never those of a cluster an earlier `up` left described.
    const space = {
      clusterId: flags['cluster-id'] ?? defaultClusterId(),
      namespace: this.globals.keySpace.namespace,
    };
    const poolCapacity = sizeArg('pool-capacity', flags['pool-capacity']);
    const roles = flags.roles === undefined ? undefined : parseRoles(flags.roles);
    const runs = (r: (typeof ROLE_NAMES)[number]) => !roles || roles.has(r);
    // From here on a signal stops the cluster in order (the roles run in process groups of their
    // own, so a terminal's Ctrl-C reaches only this process), also while it is still starting.
    // SIGHUP too: a closed terminal would otherwise end this process alone and leave the roles
    // running with nothing to supervise or stop them.
    const abort = new AbortController();
    const signalled = new Promise<'signal'>((resolve) => {
      for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
        process.once(sig, () => {
          abort.abort();
          resolve('signal');
        });
    });
    let cluster: Awaited<ReturnType<typeof up>>;
    try {
      cluster = await up({
        dataDir,
        storeUrl,
        storeTls: this.globals.tls,
        clusterId: space.clusterId,
        namespace: space.namespace,
        bin: process.argv[1],
        restAddress: flags.rest,
        nodes: flags.nodes,
        poolCapacity,
        roles,
        s3Endpoint: flags['s3-endpoint'],
        leaseTtlSeconds: flags['lease-ttl'],
        logLevel: this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel,
        say: (l) => this.logToStderr(l),
        abort: abort.signal,
      });
    } catch (err) {
      // A signal while a role was still starting (core waiting for another core's lease, say):
      // what had started is stopped already.
      if (!abort.signal.aborted) throw err;
      this.logToStderr(`${(err as Error).message}; stopped`);
      return;
    }
    // One column for every value, wide enough for the longest label (csi-controller). Printed in
    // one write: whoever reads up's output (a log, a script waiting for `ready:`) gets it whole.
    const banner: string[] = [];
    const line = (label: string, value: string) => banner.push(`${label.padEnd(15)}${value}`);
    if (roles) line('roles', `${[...roles].join(',')} (--roles)`);
    const off = '<none> (not in --roles)';
    line('REST', cluster.rest ?? off);
    line('store', storeUrl);
    line(
      'mounter',
      cluster.mounterSocket
        ? `unix://${cluster.mounterSocket}`
        : runs('mounter')
          ? '<none> (no S3 FUSE binary)'
          : off,
    );
    line('csi-controller', cluster.csiControllerSocket ? `unix://${cluster.csiControllerSocket}` : off);
    line(
      'csi-node',
      cluster.csiNodeSocket
        ? `unix://${cluster.csiNodeSocket} (staging and target paths under ${cluster.csiNodeRoot})`
        : runs('csi-node')
          ? '<none> (needs root)'
          : off,
    );
    line(
      'ha-cluster',
      cluster.haCluster ? `${cluster.haCluster} (storctl switchover --volume ID moves a target)` : off,
    );
    if (cluster.rest && runs('io-engine')) line('pools', `${flags.nodes} × ${humanizeBytes(poolCapacity)}`);
    line('logs', `${dataDir}/logs`);
    for (const r of cluster.roles) if (r.metricsUrl) line('metrics', `${r.metricsUrl.padEnd(36)} ${r.name}`);
    line('endpoints', endpointsFile(dataDir));
    if (cluster.rest) for (const [label, value] of await volumesLoaded(cluster.rest)) line(label, value);
    line(
      'ready:',
      `try \`storctl ${
        cluster.rest && runs('io-engine')
          ? `volume create --size 1Gi --replicas ${Math.min(3, flags.nodes)}`
          : !cluster.rest && runs('mounter') && !runs('io-engine')
            ? 'doctor mounts'
            : 'get nodes'
      }\`; Ctrl-C stops the cluster`,
    );
    line('', '(`storctl` is `./bin/run.js` or `npx storctl` in the checkout; `npm link` puts it on PATH)');
    const env = commandEnv(dataDir, storeUrl, space);
    if (env) line('', `commands find this cluster with: export ${env}`);
    this.log(banner.join('\n'));
    const outcome = await Promise.race([signalled, cluster.failed]);
    if (outcome !== 'signal')
      this.logToStderr(`${outcome.name} cannot be started again (see ${dataDir}/logs); stopping the cluster`);
    this.logToStderr('stopping …');
    await cluster.stop();
    this.logToStderr('stopped');
    if (outcome !== 'signal') this.exit(1);
  }
}

/** What a restarted cluster brought back: how many volumes, and where the published ones are served. */
async function volumesLoaded(rest: string): Promise<[label: string, value: string][]> {
  const client = new RestClient(rest);
  try {
    const volumes = await client.listVolumes();
    const published = volumes.filter((v) => v.state.target?.deviceUri);
    const lines: [string, string][] = [
      ['volumes', `${volumes.length} loaded, ${published.length} published`],
    ];
    const SHOWN = 10;
    for (const v of published.slice(0, SHOWN))
      lines.push(['', `${v.spec.uuid} ${v.state.status} ${v.state.target?.deviceUri}`]);
    if (published.length > SHOWN)
      lines.push(['', `… ${published.length - SHOWN} more: storctl get volumes -o wide`]);
    return lines;
  } finally {
    await client.close();
  }
}

/**
 * The environment a storctl command in this shell needs to reach the cluster `up` runs, when a flag
 * of `up` (not the environment) moved it off the defaults: without it, `storctl get volumes` reads
 * another store. Empty when the defaults already lead there (with the data dir, a command follows
 * the store and cluster id `up` wrote to its endpoints.json).
 */
function commandEnv(dataDir: string, storeUrl: string, space: KeySpace): string {
  const env = process.env;
  const found = commandCluster({ store: env.STORCTL_STORE, clusterId: env.STORCTL_CLUSTER_ID }, dataDir);
  const vars: [string, string, string][] = [
    ['STORCTL_DATA_DIR', dataDir, defaultDataDir()],
    ['STORCTL_STORE', storeUrl, found.storeUrl],
    ['STORCTL_CLUSTER_ID', space.clusterId, found.clusterId],
    ['STORCTL_NAMESPACE', space.namespace, env.STORCTL_NAMESPACE ?? 'default'],
  ];
  return vars
    .filter(([, value, fallback]) => value !== fallback)
    .map(([name, value]) => `${name}=${shellWord(value)}`)
    .join(' ');
}

const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);
