/**
 * Nexus child URIs, the one place they are built and read: a local replica is
 * `bdev:///<replica-uuid>?uuid=<replica-uuid>`, a shared one `nbd://host:port/<export>?uuid=<replica-uuid>`
 * (Mayastor writes `?uuid=` on every child URI, so the replica is known whatever the transport).
 */

/** URI a nexus uses for a replica on its own node. */
export function localReplicaUri(replicaId: string): string {
  const id = encodeURIComponent(replicaId);
  return `bdev:///${id}?uuid=${id}`;
}

/** `uri` with the replica's `?uuid=` appended (a shared replica's export URI). */
export function withReplicaUuid(uri: string, replicaId: string): string {
  return `${uri}?uuid=${encodeURIComponent(replicaId)}`;
}

/** Whether the child is a replica on the nexus's own node. */
export function isLocalUri(uri: string): boolean {
  return uri.startsWith('bdev:');
}

/** The replica a child URI names: its `?uuid=`, else the last path segment; null when neither. */
export function replicaUuidOfUri(uri: string): string | null {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return null;
  }
  const fromQuery = u.searchParams.get('uuid');
  if (fromQuery) return fromQuery;
  const last = u.pathname.replace(/^\/+/, '').split('/').pop() ?? '';
  try {
    return decodeURIComponent(last) || null;
  } catch {
    return null;
  }
}
