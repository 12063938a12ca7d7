import type { Logger } from '../../lib/logger.js';
import type { CoreConfig } from './config.js';
import type { Engines } from './engines.js';
import type { Registry } from './registry.js';

/** What every operation and reconciler works with. */
export interface CoreContext {
  registry: Registry;
  engines: Engines;
  config: CoreConfig;
  log: Logger;
  /** Wake the reconcile loop early (node came back, volume degraded, a create failed…). */
  wake(): void;
}
