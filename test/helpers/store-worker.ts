/**
 * A separate OS process doing store work for the contract suite, one progress line per step on
 * stdout. Run: node --import tsx test/helpers/store-worker.ts <store-url> <command> [args...]
 *   cas-increment <key> <count>        "ready", waits for "go" on stdin (so all writers overlap), then
 *                                      increments a counter by compare-and-swap; "done <conflicts>"
 *   hold-lease <key> <ttl>             put key on a kept-alive lease; "ready <leaseHex>", then idles
 *   campaign <name> <value> <ttl>      "campaigning", then "elected <key>" once elected; idles
 *   write <prefix> <count> <pauseMs>   create prefix+000i one by one, pausing between writes (to be
 *                                      still writing while the test breaks the watcher's connection);
 *                                      retries through store outages; "wrote <i> <revision>"; "done"
 */
import { campaign } from '../../src/lib/store/election.js';
import { openStore } from '../../src/lib/store/open.js';
import type { Store } from '../../src/lib/store/types.js';

const say = (line: string) => process.stdout.write(`${line}\n`);

function waitForGo(): Promise<void> {
  return new Promise((resolve) => {
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => {
      if (d.includes('go')) {
        process.stdin.destroy();
        resolve();
      }
    });
  });
}

async function casIncrement(store: Store, key: string, count: number): Promise<void> {
  let conflicts = 0;
  for (let done = 0; done < count; ) {
    const kv = await store.get(key);
    const value = String(Number(kv?.value ?? '0') + 1);
    const r = await store.txn({
      compare: [{ key, target: 'mod', op: '==', value: kv?.modRevision ?? 0 }],
      success: [{ type: 'put', key, value }],
    });
    if (r.succeeded) done++;
    else conflicts++;
  }
  say(`done ${conflicts}`);
}

async function write(store: Store, prefix: string, count: number, pauseMs: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const key = `${prefix}${String(i).padStart(4, '0')}`;
    // create-if-absent makes a retry after an outage harmless: each key gets exactly one put.
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await store.txn({
          compare: [{ key, target: 'create', op: '==', value: 0 }],
          success: [{ type: 'put', key, value: String(i) }],
        });
        say(`wrote ${i} ${r.revision}`);
        break;
      } catch (err) {
        if (attempt > 200) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  say('done');
}

async function main(): Promise<void> {
  const [url, command, ...args] = process.argv.slice(2);
  const store = await openStore(url);
  switch (command) {
    case 'cas-increment':
      say('ready');
      await waitForGo();
      await casIncrement(store, args[0], Number(args[1]));
      break;
    case 'write':
      await write(store, args[0], Number(args[1]), Number(args[2] ?? 0));
      break;
    case 'hold-lease': {
      const lease = await store.grantLease(Number(args[1]));
      await lease.put(args[0], String(process.pid));
      say(`ready ${lease.id}`);
      lease.lost.addEventListener('abort', () => say('lost'));
      setInterval(() => undefined, 1_000); // idle until killed
      return;
    }
    case 'campaign': {
      say('campaigning');
      const leadership = await campaign(store, args[0], args[1], { ttlSeconds: Number(args[2]) });
      say(`elected ${leadership.key}`);
      leadership.lost.addEventListener('abort', () => say('lost'));
      setInterval(() => undefined, 1_000);
      return;
    }
    default:
      throw new Error(`unknown command ${command}`);
  }
  await store.close();
}

main().catch((err) => {
  process.stderr.write(`worker failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
