/**
 * Entry point of one per-volume path proxy process (started by csi-node, detached, so volumes keep
 * their path while csi-node restarts). Arguments: one JSON object of ProxyServerOptions (without
 * `log`). Logs are JSON lines on stdout (csi-node points them at the volume's proxy.log).
 */
import { exemptFromOomKiller } from '../../lib/oom-guard.js';
import { PathProxy, type ProxyServerOptions } from './proxy-server.js';

function log(msg: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), pid: process.pid, msg, ...fields })}\n`,
  );
}

async function main(): Promise<void> {
  process.umask(0o077);
  // The volume's data path: a stray error is logged, never a reason to take the filesystem down.
  process.on('uncaughtException', (err) => log('uncaught exception', { err: String(err?.stack ?? err) }));
  process.on('unhandledRejection', (err) => log('unhandled rejection', { err: String(err) }));
  const opts = JSON.parse(process.argv[2] ?? '{}') as ProxyServerOptions;
  if (!opts.socketPath || !opts.controlPath || !opts.target)
    throw new Error('usage: proxy-main.js {"socketPath":…,"controlPath":…,"target":"nbd://…"}');
  const notExempt = await exemptFromOomKiller('self');
  if (notExempt) log('the OOM killer may end this proxy, and the volume with it', { err: notExempt });
  const proxy = new PathProxy({ ...opts, log });
  await proxy.start();
  log('proxy ready', { ...proxy.status(), socket: opts.socketPath });
  const stop = () => void proxy.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err) => {
  log('proxy failed', { err: (err as Error).message });
  process.exit(1);
});
