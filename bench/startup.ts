/**
 * Start-up time of the CLI: `storctl --version` and `storctl get volumes --help`, next to the natural
 * limit measured in the same run (a bare `node -e 0`). Prints JSON. Run after `npm run build`:
 *   npx tsx bench/startup.ts [runs]
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const runs = Number(process.argv[2] ?? 15);

function measure(args: string[]): { p50_ms: number; p90_ms: number; min_ms: number } {
  const times: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
    if (i >= 2) times.push(ms); // the first two runs warm the page cache
  }
  times.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] * 10) / 10;
  return { p50_ms: at(0.5), p90_ms: at(0.9), min_ms: at(0) };
}

const node = measure(['-e', '0']);
const version = measure([bin, '--version']);
const help = measure([bin, 'get', 'volumes', '--help']);
console.log(
  JSON.stringify(
    {
      benchmark: 'cli-startup',
      runs,
      node_bare: node,
      storctl_version: version,
      storctl_get_volumes_help: help,
      overhead_over_node_p50_ms: {
        version: Math.round((version.p50_ms - node.p50_ms) * 10) / 10,
        help: Math.round((help.p50_ms - node.p50_ms) * 10) / 10,
      },
      bar_ms: 400,
      within_bar: version.p90_ms < 400 && help.p90_ms < 400,
    },
    null,
    2,
  ),
);
