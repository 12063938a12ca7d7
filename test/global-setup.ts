import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Tests that run the CLI run the built `dist/`: a stale build would test old code. Before any test
 * file runs, `dist/` is rebuilt (`npm run build`) when it is missing, older than a source or build
 * input, or does not match the sources file for file. `npm test` builds first, so there it is a check.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INPUTS = ['package.json', 'tsconfig.json', 'scripts/sort-manifest.mjs'];

function files(dir: string, ext: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(ext))
    .map((f) => join(dir, f));
}

/** Why `dist/` is stale, or null when it is current. */
export function staleBuild(root = ROOT): string | null {
  const src = join(root, 'src');
  const dist = join(root, 'dist');
  const built = files(dist, '.js');
  if (built.length === 0) return 'dist/ is missing';
  const sources = files(src, '.ts');
  const expected = new Set(sources.map((f) => relative(src, f).replace(/\.ts$/, '.js')));
  const have = new Set(built.map((f) => relative(dist, f)));
  const missing = [...expected].find((f) => !have.has(f));
  if (missing) return `dist/${missing} is missing`;
  const extra = [...have].find((f) => !expected.has(f));
  if (extra) return `dist/${extra} has no source`;
  // The build writes every file; the oldest one is when it started.
  const builtAt = Math.min(...built.map((f) => statSync(f).mtimeMs));
  const inputs = [...sources, ...INPUTS.map((f) => join(root, f)).filter(existsSync)];
  const newer = inputs.find((f) => statSync(f).mtimeMs > builtAt);
  return newer ? `${relative(root, newer)} is newer than dist/` : null;
}

export default function setup(): void {
  const why = staleBuild();
  if (!why) return;
  console.log(`[global setup] ${why}: npm run build`);
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  const still = staleBuild();
  if (still) throw new Error(`dist/ is still stale after npm run build: ${still}`);
}
