import { parseJson, stringifyJson } from '../../../src/lib/specs/index.js';

/** The fixture's JSON text with the value at `path` replaced (other keys keep their order). */
export function withValue(json: string, path: (string | number)[], value: unknown): string {
  const root = parseJson(json) as Record<string | number, unknown>;
  let at = root;
  for (const p of path.slice(0, -1)) at = at[p] as Record<string | number, unknown>;
  at[path[path.length - 1]] = value;
  return stringifyJson(root);
}
