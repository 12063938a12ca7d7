import { type KeySpace, storctlPrefix } from '../store/keys.js';

/** The store election of ha-cluster instances (one active, the others standby); values `{"endpoint":"host:port"}`. */
export const haClusterElection = (space: KeySpace) => `${storctlPrefix(space)}HaClusterLeader`;

/** The active ha-cluster's address from its election value. */
export function haClusterEndpoint(value: string): string | null {
  try {
    const v = JSON.parse(value) as { endpoint?: unknown };
    return typeof v.endpoint === 'string' ? v.endpoint : null;
  } catch {
    return null;
  }
}
