import { Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { ExitCode, ServiceUnavailableError } from '../../lib/errors.js';
import { type DoctorReport, diagnoseMounts, fixMounts } from '../../lib/mount/doctor.js';
import { defaultMounterStateDir } from '../../lib/mount/state-dir.js';
import { prettyJson, renderTable } from '../../lib/output/render.js';
import { toYaml } from '../../lib/output/yaml.js';
import { DEFAULT_SYSTEM_BUS, SystemdClient } from '../../lib/systemd/client.js';

export default class DoctorMounts extends StorctlCommand {
  static override description =
    `Check this node's S3 FUSE mounts: stale mounts (daemon dead, ENOTCONN), orphaned units or processes (no mount at their target), collisions (several daemons for one target), failed units, leftover credential files and records.
Only the mounts of the mounter that uses --state-dir are checked (and fixed): its recorded targets and those under its --root directories (which it writes to roots.json there); another cluster's mounter on the same machine has its own state dir and is left out, as the report says. --machine-wide checks every S3 FUSE mount.
Exit code 0: healthy; 1: findings; 2: the check itself failed.`;

  static override examples = [
    '<%= config.bin %> doctor mounts',
    '<%= config.bin %> doctor mounts --fix -y',
    '<%= config.bin %> doctor mounts -o json',
    '<%= config.bin %> doctor mounts --state-dir /var/lib/storctl/mounter --under /var/lib/kubelet',
    '<%= config.bin %> doctor mounts --machine-wide',
  ];

  static override flags = {
    fix: Flags.boolean({ description: 'repair what was found (asks first unless -y)' }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask before fixing' }),
    'systemd-bus': Flags.string({
      description: 'D-Bus address of the systemd manager (default: the system bus, skipped when absent)',
      env: 'STORCTL_SYSTEMD_BUS',
    }),
    'state-dir': Flags.string({
      description: 'the mounter state directory',
      env: 'STORCTL_MOUNTER_STATE_DIR',
    }),
    under: Flags.string({
      description:
        'only check mounts and daemons whose target is below this directory (e.g. the kubelet dir)',
      env: 'STORCTL_MOUNTER_TARGET_ROOT',
    }),
    'machine-wide': Flags.boolean({
      description:
        "check every S3 FUSE mount and daemon on this machine, not only the --state-dir mounter's (another cluster's too: --fix would touch them)",
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DoctorMounts);
    const stateDir = flags['state-dir'] ?? defaultMounterStateDir();
    let systemd: SystemdClient | undefined = new SystemdClient(
      flags['systemd-bus'] ?? DEFAULT_SYSTEM_BUS,
      5000,
    );
    try {
      await systemd.ping();
    } catch (err) {
      await systemd.close();
      // An explicit bus that does not answer is an error; the default one may simply not exist here.
      if (flags['systemd-bus']) {
        this.fail(
          new ServiceUnavailableError('systemd manager', flags['systemd-bus'], (err as Error).message),
        );
      }
      systemd = undefined;
    }
    let healthy = false;
    try {
      const scope = { under: flags.under, machineWide: flags['machine-wide'] };
      const report = await diagnoseMounts(stateDir, systemd, scope);
      let fixed: string[] = [];
      let after: DoctorReport | undefined;
      if (flags.fix && report.findings.length) {
        if (flags.yes || (await this.confirm(`Fix ${report.findings.length} finding(s)? [y/N] `))) {
          fixed = await fixMounts(stateDir, report.findings, systemd, scope);
          after = await diagnoseMounts(stateDir, systemd, scope);
        } else {
          this.logToStderr('Nothing changed.');
        }
      }
      this.printReport(report, fixed, after);
      healthy = (after ?? report).healthy;
    } catch (err) {
      // The check itself failed (unreadable state, systemd error): exit 2, not "findings".
      this.fail(err as Error);
    } finally {
      await systemd?.close();
    }
    if (!healthy) this.exit(ExitCode.failure);
  }

  private fail(err: Error): never {
    this.logToStderr(`Error: ${err.message}`);
    this.exit(ExitCode.usage);
  }

  private printReport(report: DoctorReport, fixed: string[], after: DoctorReport | undefined): void {
    const format = this.globals.output;
    if (format === 'json' || format === 'yaml') {
      const value = { ...report, ...(fixed.length || after ? { fixed, after } : {}) };
      this.log(format === 'json' ? prettyJson(value) : toYaml(value).trimEnd());
      return;
    }
    const s = report.scanned;
    this.log(
      `Scanned ${s.mounts} S3 mount(s), ${s.units ?? 'no'} unit(s), ${s.processes} FUSE process(es), ${s.records} record(s), ${s.credentialFiles} credential file(s).`,
    );
    this.log(`Scope: ${report.scope.summary}.`);
    for (const n of report.notes) this.log(`Note: ${n}`);
    if (report.healthy) {
      this.log('Healthy: nothing to fix.');
      return;
    }
    const wide = format === 'wide';
    this.log(
      renderTable(
        wide ? ['KIND', 'SUBJECT', 'MEANING', 'FIX'] : ['KIND', 'SUBJECT', 'MEANING'],
        report.findings.map((f) =>
          wide ? [f.kind, f.subject, f.meaning, f.fix] : [f.kind, f.subject, f.meaning],
        ),
      ),
    );
    if (!fixed.length && !after) {
      this.log('Run `storctl doctor mounts --fix` to repair (-o wide shows each fix).');
      return;
    }
    this.log('Fixed:');
    for (const line of fixed) this.log(`  ${line}`);
    this.log(after?.healthy ? 'Healthy now.' : `${after?.findings.length} finding(s) remain.`);
  }
}
