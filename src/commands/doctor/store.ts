import { Flags } from '@oclif/core';
import { withStore } from '../../lib/catalog/with-store.js';
import { durationFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { diagnoseStore, type FixOutcome, fixStore, type StoreReport } from '../../lib/doctor/store.js';
import { ExitCode, UsageError } from '../../lib/errors.js';
import { prettyJson } from '../../lib/output/render.js';
import { toYaml } from '../../lib/output/yaml.js';

export default class DoctorStore extends StorctlCommand {
  static override description = `Check the whole store for inconsistencies; --fix repairs what is safe
Reads only the store, so it works with every daemon down, on etcd and on the embedded store. Checks: alarms etcd raised (NOSPACE, its space quota exhausted; CORRUPT), under which it refuses every write; etcd members of --store that do not answer; values that do not decode; specs with a pending operation (and for how long, dated by core's event log); references to missing resources (replica → pool, nexus → replica, volume → nexus); volumes with no replica or below their replica count; replicas and nexuses without owner; NexusInfo of deleted volumes; stale switchover records (of a deleted volume, finished longer than --switchover-grace ago, or in progress longer than that); a StoreLeaseOwner whose lease is not alive. Each finding has a severity (error, warning) and the command that fixes it.
--fix deletes, after asking (or with -y), the records it is safe to delete from the store alone: orphan NexusInfo, switchover records of deleted volumes or finished past the grace, and a dead lease owner, each guarded on its revision; everything else needs core or a decision, and names its command.
Exit codes: 0 healthy; 10 warnings only; 11 at least one error (after --fix: what remains); 2 --fix with neither a terminal nor -y; 5 store unreachable.`;

  static override examples = [
    '<%= config.bin %> doctor store',
    '<%= config.bin %> doctor store --store etcd://10.0.0.5:2379 -o json',
    '<%= config.bin %> doctor store --fix',
    '<%= config.bin %> doctor store --fix -y -o yaml',
  ];

  static override flags = {
    fix: Flags.boolean({
      description: 'repair what is safe to repair in the store alone (asks first unless -y)',
    }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask before fixing' }),
    'switchover-grace': durationFlag({
      description: 'a switchover record finished, or still in progress, longer than this is stale',
      default: 10 * 60_000,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DoctorStore);
    if (flags.fix && !flags.yes && !process.stdin.isTTY)
      throw new UsageError('--fix asks for confirmation, and stdin is not a terminal', {
        suggestions: ['add -y to fix without asking', 'or leave out --fix to only check'],
      });
    const opts = { switchoverGraceMs: flags['switchover-grace'] };
    const { report, fixed, after } = await withStore(this.globals, async (store) => {
      const report = await diagnoseStore(store, this.globals.keySpace, opts);
      const fixable = report.findings.filter((f) => f.fixable).length;
      if (!flags.fix || fixable === 0) return { report, fixed: undefined, after: undefined };
      if (!flags.yes) this.printFindings(report, true);
      if (!flags.yes && !(await this.confirm(`Fix ${fixable} finding(s)? [y/N] `))) {
        this.logToStderr('Nothing changed.');
        return { report, fixed: undefined, after: undefined };
      }
      const fixed = await fixStore(store, this.globals.keySpace, report);
      return { report, fixed, after: await diagnoseStore(store, this.globals.keySpace, opts) };
    });
    this.printReport(report, fixed, after, flags.fix && !flags.yes);
    const final = after ?? report;
    if (final.counts.error) this.exit(ExitCode.doctorErrors);
    if (final.counts.warning) this.exit(ExitCode.doctorWarnings);
  }

  private printReport(
    report: StoreReport,
    fixed: FixOutcome[] | undefined,
    after: StoreReport | undefined,
    shownAlready: boolean,
  ): void {
    const format = this.globals.output;
    if (format === 'json' || format === 'yaml') {
      const value = { ...report, ...(fixed ? { fixed, after } : {}) };
      this.log(format === 'json' ? prettyJson(value) : toYaml(value).trimEnd());
      return;
    }
    if (!shownAlready || !fixed) this.printFindings(report, false);
    if (!fixed) {
      const fixable = report.findings.filter((f) => f.fixable).length;
      if (fixable) this.log(`Run \`storctl doctor store --fix\` to repair ${fixable} of them.`);
      return;
    }
    this.log('Fixed:');
    for (const f of fixed) this.log(`  ${f.result}: ${f.check} ${f.subject}: ${f.detail}`);
    this.log(after?.healthy ? 'Healthy now.' : `${after?.findings.length} finding(s) remain.`);
  }

  /** One block per finding: severity, check and subject; the problem; the fix. */
  private printFindings(report: StoreReport, toStderr: boolean): void {
    const say = (line: string) => (toStderr ? this.logToStderr(line) : this.log(line));
    say(`Checked ${report.scanned.keys} key(s) of ${report.store} at revision ${report.revision}.`);
    if (report.healthy) {
      say('Healthy: nothing to fix.');
      return;
    }
    for (const f of report.findings) {
      say(`${f.severity.padEnd(8)}${f.check}  ${f.subject}`);
      say(`        ${f.problem}`);
      say(`        fix: ${f.fix}${f.fixable ? ' [--fix]' : ''}`);
    }
    say(`${report.counts.error} error(s), ${report.counts.warning} warning(s).`);
  }
}
