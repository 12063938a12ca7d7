/**
 * Ids of specs grouped by the id of what owns them (replicas and snapshots by their volume), kept
 * in step with the registry's spec maps: "the replicas of volume V" at 100k volumes is a lookup,
 * not a scan of every spec — once per volume of a listing page, that scan made pages quadratic.
 */
export class IdsByOwner {
  private readonly byOwner = new Map<string, Set<string>>();

  add(owner: string | null | undefined, id: string): void {
    if (!owner) return;
    let ids = this.byOwner.get(owner);
    if (!ids) {
      ids = new Set();
      this.byOwner.set(owner, ids);
    }
    ids.add(id);
  }

  remove(owner: string | null | undefined, id: string): void {
    const ids = owner ? this.byOwner.get(owner) : undefined;
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) this.byOwner.delete(owner!);
  }

  /** The specs of `owner` found in `specs` (absent ones skipped). */
  of<T>(owner: string, specs: Map<string, T>): T[] {
    const out: T[] = [];
    for (const id of this.byOwner.get(owner) ?? []) {
      const spec = specs.get(id);
      if (spec) out.push(spec);
    }
    return out;
  }
}
