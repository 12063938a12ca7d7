import type { Hook } from '@oclif/core';
import { closest } from '../lib/did-you-mean.js';
import { ExitCode } from '../lib/errors.js';

/**
 * An unknown command is a usage error (exit 2) named as the user typed it, with the closest command
 * when one is near — not oclif's internal id and exit 1.
 */
const hook: Hook.CommandNotFound = async function (opts) {
  const typed = opts.id.replaceAll(':', ' ');
  const near = closest(
    typed,
    opts.config.commandIDs.map((id) => id.replaceAll(':', ' ')),
  );
  process.stderr.write(`Error: '${typed}' is not a storctl command\n`);
  process.stderr.write(near ? `Did you mean: storctl ${near}?\n` : 'Try: storctl --help\n');
  this.exit(ExitCode.usage);
};

export default hook;
