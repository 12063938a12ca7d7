// oclif writes the manifest's commands in the order it happened to load them, which differs between
// machines; sorting them by id makes the committed file reproducible, so CI's drift check is exact.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../oclif.manifest.json', import.meta.url);
const manifest = JSON.parse(readFileSync(file, 'utf8'));
manifest.commands = Object.fromEntries(
  Object.entries(manifest.commands).sort(([a], [b]) => a.localeCompare(b)),
);
writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
