import { createInterface } from 'node:readline/promises';
import { Command, Flags, type Interfaces } from '@oclif/core';
import type { Input, ParserOutput } from '@oclif/core/interfaces';
import { closest } from './did-you-mean.js';

// oclif does not export these two constraint types; they are plain records.
// biome-ignore lint/suspicious/noExplicitAny: mirrors oclif's own definition
type FlagOutput = { [name: string]: any };
// biome-ignore lint/suspicious/noExplicitAny: mirrors oclif's own definition
type ArgOutput = { [name: string]: any };

import { ExitCode, isStorctlError, UsageError } from './errors.js';
import { isTabular, type OutputFormat, type OutputSpec, parseOutput } from './output/format.js';
import { type Listing, renderLines } from './output/render.js';
import { commandCluster } from './rest/endpoint.js';
import type { KeySpace } from './store/keys.js';

/**
 * Base of every storctl command: the global flags (each with a STORCTL_* environment fallback) and
 * the one place where errors become a message, suggestions and an exit code.
 */
export abstract class StorctlCommand extends Command {
  static override baseFlags = {
    store: Flags.string({
      description:
        'store to use: etcd://host:port[,host:port] or sqlite:PATH (default: the store of the cluster `storctl up` runs with the data dir, else the embedded store in the data dir)',
      env: 'STORCTL_STORE',
      helpGroup: 'GLOBAL',
    }),
    'cluster-id': Flags.string({
      description:
        'cluster id of the key space (default: that of the cluster `storctl up` runs with the data dir, else /etc/machine-id, else dummy-uuid)',
      env: 'STORCTL_CLUSTER_ID',
      helpGroup: 'GLOBAL',
    }),
    namespace: Flags.string({
      description: 'namespace of the key space',
      env: 'STORCTL_NAMESPACE',
      default: 'default',
      helpGroup: 'GLOBAL',
    }),
    output: Flags.custom<OutputSpec>({
      char: 'o',
      description:
        "output format: table (default), wide, json, yaml; listings also take jsonpath=TEMPLATE (e.g. '{.items[*].spec.uuid}') and custom-columns=HEADER:.path,…",
      helpValue: 'FORMAT',
      env: 'STORCTL_OUTPUT',
      parse: async (input) => parseOutput(input),
      default: { format: 'table' },
      // Help would print the default object: the description names the plain formats instead.
      noCacheDefault: true,
      helpGroup: 'GLOBAL',
    })(),
    'log-level': Flags.option({
      description: 'log verbosity; debug also prints stack traces of errors',
      options: ['error', 'warn', 'info', 'debug'] as const,
      env: 'STORCTL_LOG_LEVEL',
      default: 'warn' as const,
      helpGroup: 'GLOBAL',
    })(),
    'etcd-ca': Flags.string({
      description: 'CA certificate file for etcd TLS',
      env: 'STORCTL_ETCD_CA',
      helpGroup: 'GLOBAL',
    }),
    'etcd-cert': Flags.string({
      description: 'client certificate file for etcd TLS',
      env: 'STORCTL_ETCD_CERT',
      helpGroup: 'GLOBAL',
    }),
    'etcd-key': Flags.string({
      description: 'client key file for etcd TLS',
      env: 'STORCTL_ETCD_KEY',
      helpGroup: 'GLOBAL',
    }),
  };

  protected globals!: {
    storeUrl: string;
    keySpace: KeySpace;
    output: OutputFormat;
    /** The template of `-o jsonpath=…` / `-o custom-columns=…`. */
    template?: OutputSpec['template'];
    logLevel: 'error' | 'warn' | 'info' | 'debug';
    tls: { ca?: string; cert?: string; key?: string };
  };

  /** Parse this command's flags and args (global flags included) and resolve the globals. */
  protected override async parse<F extends FlagOutput, B extends FlagOutput, A extends ArgOutput>(
    options?: Input<F, B, A>,
    argv?: string[],
  ): Promise<ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv).catch((err: Error) => {
      throw valueError(err, this.id);
    });
    const f = parsed.flags as unknown as Interfaces.InferredFlags<typeof StorctlCommand.baseFlags>;
    const { storeUrl, clusterId } = commandCluster({ store: f.store, clusterId: f['cluster-id'] });
    this.globals = {
      storeUrl,
      keySpace: { clusterId, namespace: f.namespace },
      output: f.output.format,
      template: f.output.template,
      logLevel: f['log-level'],
      tls: { ca: f['etcd-ca'], cert: f['etcd-cert'], key: f['etcd-key'] },
    };
    const own = this.constructor as typeof StorctlCommand;
    if (this.globals.template && !own.templateOutput)
      throw new UsageError(
        `-o ${this.globals.output} prints listings (get …, and the volume/node/pool commands that print one); \`storctl ${this.id?.replaceAll(':', ' ')}\` prints table, wide, json or yaml`,
      );
    return parsed;
  }

  /** The command prints through `print` (a listing), so `-o jsonpath=…|custom-columns=…` apply. */
  static templateOutput = false;

  /**
   * Stdout carries the command's output, so a reader that goes away ends the command. False for
   * daemons and `up`: their stdout is a log, and losing its reader must not stop a data path.
   */
  static stdoutIsOutput = true;

  protected override async init(): Promise<void> {
    await super.init();
    const own = this.constructor as typeof StorctlCommand;
    if (own.stdoutIsOutput) {
      if (!process.stdout.listeners('error').includes(endOnClosedOutput))
        process.stdout.on('error', endOnClosedOutput);
      return;
    }
    for (const stream of [process.stdout, process.stderr])
      if (!stream.listeners('error').includes(keepOnClosedOutput)) stream.on('error', keepOnClosedOutput);
    // Started by a supervisor over an IPC channel (`storctl up`): when the supervisor is gone (killed
    // with SIGKILL, say), stop as on SIGTERM instead of running on unsupervised, holding pools,
    // leases and sockets the next `up` needs.
    if (process.channel && process.listenerCount('disconnect') === 0) {
      process.channel.unref();
      process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
    }
  }

  /** Ask a yes/no question on the terminal (stderr); anything but y/yes, or a closed stdin, is no. */
  protected async confirm(question: string): Promise<boolean> {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      const answer = await Promise.race([
        rl.question(question),
        new Promise<string>((r) => rl.once('close', () => r(''))),
      ]);
      return /^y(es)?$/i.test(answer.trim());
    } finally {
      rl.close();
    }
  }

  /** Tables without their header line (`get … --no-headers`, for scripts that cut columns). */
  protected noHeaders = false;

  /** Print a listing in the chosen format; an empty table says so on stderr (stdout stays parseable). */
  protected print<T>(listing: Listing<T>): void {
    if (listing.rows.length === 0 && isTabular(this.globals.output)) {
      this.logToStderr('No resources found.');
      return;
    }
    // Written in 64 KiB chunks as rendered: a 100k-volume listing never becomes one huge string.
    let chunk = '';
    let skipHeader = this.noHeaders && isTabular(this.globals.output);
    for (const line of renderLines(listing, this.globals.output, this.globals.template)) {
      if (skipHeader) {
        skipHeader = false;
        continue;
      }
      chunk += `${line}\n`;
      if (chunk.length >= 65536) {
        process.stdout.write(chunk);
        chunk = '';
      }
    }
    if (chunk) process.stdout.write(chunk);
  }

  /** With `-o json` an error is one JSON object on stderr, for scripts; false otherwise. */
  private jsonErrors(code: string, message: string, next: string[]): boolean {
    if (this.globals?.output !== 'json') return false;
    this.logToStderr(JSON.stringify({ error: { code, message, next } }));
    return true;
  }

  protected override async catch(
    err: Error & { exitCode?: number; oclif?: { exit?: number } },
  ): Promise<unknown> {
    await flushStdout(); // output written before the error must reach a pipe before the exit
    if (!isStorctlError(err)) {
      // oclif's parse errors (unknown flag, bad option value, missing arg) are usage errors: exit 2,
      // one line naming the problem (and the closest flag for a typo), not the whole usage block.
      if ('parse' in err && err.oclif) {
        this.logToStderr(`Error: ${firstLineOf(err)}`);
        const typo = (err as { flags?: string[] }).flags?.[0];
        const own = this.constructor as typeof Command;
        const flags = Object.keys({ ...own.baseFlags, ...own.flags }).map((f) => `--${f}`);
        const near = typo ? closest(typo.split('=')[0], flags) : null;
        if (near) this.logToStderr(`Did you mean ${near}?`);
        // `volume resize ID 20GiB`: a value given as an argument where the one required flag takes it.
        // (Unexpected arguments only: a missing-arguments error's `args` are their definitions.)
        const extra = err.message.startsWith('Unexpected argument') ? (err as { args?: unknown[] }).args : [];
        const required = Object.entries(own.flags ?? {}).filter(([, f]) => f.required);
        if (extra?.length === 1 && required.length === 1)
          this.logToStderr(`Did you mean --${required[0][0]} ${String(extra[0])}?`);
        this.logToStderr(`Try: storctl ${this.id?.replaceAll(':', ' ') ?? ''} --help`);
        this.exit(ExitCode.usage);
      }
      if (err.oclif?.exit !== undefined) return super.catch(err);
      if (this.jsonErrors('INTERNAL', err.message, [])) this.exit(ExitCode.failure);
      this.logToStderr(`Error: ${err.message}`);
      if (this.globals?.logLevel === 'debug') this.logToStderr(err.stack ?? '');
      else this.logToStderr('Re-run with --log-level debug for details.');
      this.exit(ExitCode.failure);
    }
    // A flag's own parser (durationFlag) throws a UsageError that already names the flag; oclif wraps
    // its message in "Parsing --flag \n\t…\nSee more help with --help", which is taken off again.
    const message = err.message.replace(/^Parsing --\S+ \n\t([\s\S]*)\nSee more help with --help$/, '$1');
    if (this.jsonErrors(err.code, message, err.suggestions)) this.exit(err.exitCode);
    this.logToStderr(`Error: ${message}`);
    for (const s of err.suggestions) this.logToStderr(`Try: ${s}`);
    if (this.globals?.logLevel === 'debug') this.logToStderr(err.stack ?? '');
    this.exit(err.exitCode);
  }
}

/**
 * The first line of an oclif parse error; for missing arguments with the arguments named, as the
 * usage line names them ("Missing 1 required arg: ID (snapshot uuid)"), which oclif puts below.
 */
function firstLineOf(err: Error): string {
  const first = err.message.split('\n')[0];
  const args = (err as { args?: { name?: string; description?: string }[] }).args;
  if (!/^Missing \d+ required args?:$/.test(first) || !Array.isArray(args)) return first;
  const named = args.flatMap((a) =>
    a.name ? [`${a.name.toUpperCase()}${a.description ? ` (${a.description})` : ''}`] : [],
  );
  return `${first} ${named.join(', ')}`;
}

/**
 * A value oclif's own flag or argument parser refused (`--replicas 0`, `volume scale ID 0`) as a
 * usage error naming the flag (exit 2, one line), not oclif's indented block or an exit 1. Our own
 * parsers' errors and oclif's parse errors (unknown flag, missing argument) are answered in `catch`.
 */
function valueError(err: Error, id: string | undefined): Error {
  if (isStorctlError(err) || 'parse' in err) return err;
  const flag = /^Parsing --(\S+) \n\t([\s\S]*)\nSee more help with --help$/.exec(err.message);
  return new UsageError(flag ? `--${flag[1]}: ${flag[2]}` : err.message, {
    suggestions: [`storctl ${id?.replaceAll(':', ' ') ?? ''} --help`],
  });
}

/**
 * `storctl get volumes -o json | head`: once the reader has gone, stop at once and quietly, as a
 * Unix tool that SIGPIPE ends does. Without this a write waiting for 'drain' waits forever.
 */
function endOnClosedOutput(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(ExitCode.outputClosed);
  throw err;
}

/** A daemon's stdout and stderr are its log: when their reader goes away the lines are lost, not the daemon. */
function keepOnClosedOutput(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err;
}

/**
 * Resolves once everything written to stdout so far is handed to the OS. Writes to a pipe are
 * asynchronous: exiting with an error code right after a large listing would cut it short.
 */
export function flushStdout(): Promise<void> {
  return new Promise((resolve) => process.stdout.write('', () => resolve()));
}

/** Write to stdout, waiting when the reader is slower (a pipe into `less`), so memory stays flat. */
export async function writeStdout(text: string): Promise<void> {
  if (!process.stdout.write(text))
    await new Promise<void>((resolve) => process.stdout.once('drain', resolve));
}
