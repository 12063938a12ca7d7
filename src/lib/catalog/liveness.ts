/**
 * The lease-bound liveness record an io-engine keeps at `<prefix>/storctl/NodeLiveness/<node>`
 * while it heartbeats. Parsed leniently: only what `get nodes` shows is required.
 */
export interface NodeLiveness {
  node: string;
  grpcEndpoint?: string;
  nbdEndpoint?: string;
  startedAt?: string;
  version?: string;
}

export function parseLiveness(value: string): NodeLiveness | null {
  try {
    const v = JSON.parse(value) as Partial<NodeLiveness>;
    return typeof v === 'object' && v !== null && typeof v.node === 'string' ? (v as NodeLiveness) : null;
  } catch {
    return null;
  }
}
