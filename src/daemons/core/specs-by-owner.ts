/**
 * Specs grouped by the id of what owns them (replicas and snapshots by their volume), kept in step
 * with the registry's spec maps: "the replicas of volume V" at 100k volumes is one lookup, not a
 * scan of every spec (once per volume of a listing page, that scan made pages quadratic). The
 * specs themselves are held, not their ids: a second lookup per spec in a 100k-entry map was most
 * of a page's time.
 */
export class SpecsByOwner<T> {
  private readonly byOwner = new Map<string, T[]>();

  constructor(private readonly idOf: (spec: T) => string) {}

  /** Add `spec` to its owner's (after the owner's others; replacing one with the same id in place). */
  add(owner: string | null | undefined, spec: T): void {
    if (!owner) return;
    const specs = this.byOwner.get(owner);
    if (!specs) {
      this.byOwner.set(owner, [spec]);
      return;
    }
    const at = specs.findIndex((s) => this.idOf(s) === this.idOf(spec));
    if (at >= 0) specs[at] = spec;
    else specs.push(spec);
  }

  remove(owner: string | null | undefined, id: string): void {
    const specs = owner ? this.byOwner.get(owner) : undefined;
    if (!specs) return;
    const at = specs.findIndex((s) => this.idOf(s) === id);
    if (at >= 0) specs.splice(at, 1);
    if (specs.length === 0) this.byOwner.delete(owner!);
  }

  /** The owner's specs (a copy: the caller may change the array). */
  of(owner: string): T[] {
    return this.byOwner.get(owner)?.slice() ?? [];
  }
}
