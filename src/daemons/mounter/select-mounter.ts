import type { Logger } from '../../lib/logger.js';
import type { Mounter } from '../../lib/mount/mounter.js';
import { ProcessMounter } from '../../lib/mount/process-mounter.js';
import { SystemdMounter } from '../../lib/mount/systemd-mounter.js';
import { DEFAULT_SYSTEM_BUS, SystemdClient } from '../../lib/systemd/client.js';
import type { MounterChoice } from './config.js';

/** systemd when asked for (must answer) or, with `auto`, when a manager answers on the bus; else processes. */
export async function selectMounter(
  choice: MounterChoice,
  bus: string | undefined,
  version: string,
  log: Logger,
): Promise<Mounter> {
  if (choice === 'process') return new ProcessMounter(log);
  const client = new SystemdClient(bus ?? DEFAULT_SYSTEM_BUS, 5000);
  try {
    await client.ping();
    return new SystemdMounter(client, version, 30_000, log);
  } catch (err) {
    await client.close();
    if (choice === 'systemd')
      throw new Error(`no systemd manager answers on ${client.address}: ${(err as Error).message}`);
    log.info(
      { bus: client.address, reason: (err as Error).message },
      'no systemd manager reachable; using the process mounter',
    );
    return new ProcessMounter(log);
  }
}
