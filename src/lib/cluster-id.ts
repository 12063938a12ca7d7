import { readFileSync } from 'node:fs';

/**
 * Default cluster id, as Mayastor picks it off Kubernetes (docs/mayastor-compat.md §1.1): the machine id, else
 * `dummy-uuid`. Operators reading a real Mayastor etcd pass `--cluster-id <kube-system uid>`.
 * `machineIdFile` is a parameter for the unit test of the fallback; the CLI always reads
 * /etc/machine-id.
 */
export function defaultClusterId(machineIdFile = '/etc/machine-id'): string {
  try {
    const id = readFileSync(machineIdFile, 'utf8').trim();
    if (/^[0-9a-f]{32}$/i.test(id)) return id;
  } catch {
    // no machine id: fall through to Mayastor's literal default
  }
  return 'dummy-uuid';
}
