import type { BlockBackend } from '../../lib/nbd/backend.js';

/** Mayastor's child states: Online (in I/O), Degraded (being rebuilt), Faulted (dropped from I/O). */
export type ChildState = 'Online' | 'Degraded' | 'Faulted';

/** One mirror leg of a nexus: a local replica or a remote one over NBD. */
export class NexusChild {
  state: ChildState;
  reason = '';
  /** While rebuilding: bytes [0, cursor) hold the source's content and receive every write. */
  rebuildCursor = 0;
  rebuildStartedAt: number | null = null;

  constructor(
    readonly uri: string,
    readonly uuid: string,
    readonly backend: BlockBackend,
    /** Detach from the backend (close the NBD connection; a local replica stays open). */
    readonly detach: () => Promise<void>,
    state: ChildState,
  ) {
    this.state = state;
  }

  get healthy(): boolean {
    return this.state === 'Online';
  }
}

/** Child uuid from a child URI: `?uuid=` if present, else the last path segment. */
export function childUuidOf(uri: string): string {
  const u = new URL(uri);
  return (
    u.searchParams.get('uuid') ?? decodeURIComponent(u.pathname.replace(/^\/+/, '').split('/').pop() ?? '')
  );
}
