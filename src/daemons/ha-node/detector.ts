import type { NodePath, PathInfo } from '../../lib/ha/clients.js';

export type PathState = PathInfo['state'];

interface Tracked {
  volumeId: string;
  target: string;
  state: PathState;
  failures: number;
  lastError: string;
  checkedAt: number;
  /** When it was last handed out as Failed (to be reported). */
  reportedAt: number;
  /** Lost on this node (its proxy gone): handed out once, to be said, never reported. */
  lost: boolean;
}

/**
 * The node agent's view of its paths (Mayastor's detector, docs/mayastor-compat.md §3.3): each
 * check, a path that answered is Good; one that did not is Suspected, then Failed after
 * `failAfter` consecutive misses — reported, and reported again every `reportAgainMs` while it
 * stays Failed (the switchover it started may have ended Errored: a later one can still re-point
 * it). A path lost on this node (its proxy gone: `local`) is Failed at once and never reported.
 * A path whose target changed (re-pointed) starts over as Good; paths no longer attached are
 * forgotten.
 */
export class PathDetector {
  private readonly paths = new Map<string, Tracked>();

  constructor(
    private readonly failAfter: number,
    private readonly reportAgainMs = Number.POSITIVE_INFINITY,
  ) {}

  /** Apply one round of probes; returns the paths to report (`failed`) and those just `lost`. */
  update(probed: NodePath[], now = performance.now()): { failed: Tracked[]; lost: Tracked[] } {
    const failed: Tracked[] = [];
    const lost: Tracked[] = [];
    const seen = new Set<string>();
    for (const p of probed) {
      seen.add(p.volume_id);
      let t = this.paths.get(p.volume_id);
      if (!t || t.target !== p.target_uri) {
        t = {
          volumeId: p.volume_id,
          target: p.target_uri,
          state: 'Good',
          failures: 0,
          lastError: '',
          checkedAt: now,
          reportedAt: 0,
          lost: false,
        };
        this.paths.set(p.volume_id, t);
      }
      t.checkedAt = now;
      if (!p.local) t.lost = false;
      if (t.state === 'Replacing') continue;
      if (p.ok) {
        t.failures = 0;
        t.lastError = '';
        if (t.state !== 'Failed') t.state = 'Good';
        continue;
      }
      t.failures++;
      t.lastError = p.error;
      // Lost on this node (its proxy is gone): Failed, but not reported, as no switchover helps.
      if (p.local) {
        t.state = 'Failed';
        if (!t.lost) {
          t.lost = true;
          lost.push({ ...t });
        }
        continue;
      }
      if (t.state === 'Failed') {
        if (now - t.reportedAt >= this.reportAgainMs) {
          t.reportedAt = now;
          failed.push({ ...t });
        }
        continue;
      }
      if (t.failures >= this.failAfter) {
        t.state = 'Failed';
        t.reportedAt = now;
        failed.push({ ...t });
      } else t.state = 'Suspected';
    }
    for (const id of this.paths.keys()) if (!seen.has(id)) this.paths.delete(id);
    return { failed, lost };
  }

  /** A re-point is under way: the path is not judged until it ends. */
  replacing(volumeId: string): void {
    const t = this.paths.get(volumeId);
    if (t) t.state = 'Replacing';
  }

  /** The path now points at `target` and answered (or the re-point failed: back to judging). */
  replaced(volumeId: string, target: string | null): void {
    const t = this.paths.get(volumeId);
    if (!t) return;
    if (target) Object.assign(t, { target, state: 'Good', failures: 0, lastError: '' });
    else t.state = t.failures >= this.failAfter ? 'Failed' : 'Good';
  }

  list(): PathInfo[] {
    return [...this.paths.values()].map((t) => ({
      volume_id: t.volumeId,
      target_uri: t.target,
      state: t.state,
      consecutive_failures: t.failures,
      last_error: t.lastError,
      checked_at_ms: String(t.checkedAt),
    }));
  }
}
