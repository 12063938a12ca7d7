#!/usr/bin/env node
import { flush, handle, run, settings } from '@oclif/core';

// The shipped binary always runs the compiled dist/, whatever NODE_ENV says.
settings.enableAutoTranspile = false;

try {
  await run(process.argv.slice(2), import.meta.url);
  await flush();
} catch (err) {
  // A parse error of a plugin's command (autocomplete, help) is a usage error too: exit 2 as
  // storctl's own commands do (src/lib/command.ts), not oclif's 1.
  if (err?.parse && err.oclif) err.oclif.exit = 2;
  await handle(err);
}
