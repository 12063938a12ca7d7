import { cloneSpec, hostNqn, type NexusSpec, type VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { SvcError, toSvcError } from '../svc-error.js';
import { rollbackOp, settleOp } from './settle.js';
import { checkUsable } from './volume-publish.js';

/** Protocols Mayastor knows for a volume share; storctl's io-engines serve targets over NBD only. */
const MAYASTOR_PROTOCOLS = new Set(['nvmf', 'iscsi', 'nbd', 'none']);

/** A share protocol from the URL: `nbd`, else a 400 that says what is supported. */
export function shareProtocol(p: string): 'nbd' {
  if (p === 'nbd') return p;
  const why = MAYASTOR_PROTOCOLS.has(p)
    ? `protocol '${p}' is not supported by storctl io-engines; volume targets are shared over 'nbd'`
    : `unknown share protocol '${p.slice(0, 32)}'; use 'nbd'`;
  throw new SvcError('InvalidArgument', why, `field 'protocol' ${why}`);
}

/** The published volume's target nexus spec; NotPublished (412) when there is none. */
function targetNexus(ctx: CoreContext, volume: VolumeSpec): NexusSpec {
  const t = volume.target;
  const nexus = t && t.active !== false ? ctx.registry.nexuses.get(t.nexus) : undefined;
  if (!t || t.active === false || !nexus) {
    throw new SvcError(
      'NotPublished',
      `volume '${volume.uuid}' is not published; publish it first (storctl volume publish)`,
      `VolumeNotPublished: ${volume.uuid}`,
    );
  }
  return nexus;
}

/**
 * Share a published volume: export its target nexus over `protocol` again (after an unshare) and
 * record the protocol in the volume target and the nexus spec. Returns the target URI.
 * `frontendHost` is recorded as the allowed host, as publish's frontend_node is.
 */
export async function shareVolume(
  ctx: CoreContext,
  uuid: string,
  protocol: 'nbd',
  frontendHost?: string,
): Promise<string> {
  const { registry, engines } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    checkUsable(volume);
    const nexus = cloneSpec(targetNexus(ctx, volume));
    if (nexus.share !== 'none' && volume.target!.protocol) {
      throw new SvcError(
        'AlreadyShared',
        `volume '${uuid}' is already shared over ${nexus.share}; unshare it first`,
        `VolumeAlreadyShared: ${uuid}`,
      );
    }
    const engine = engines.get(nexus.node);
    volume.operation = { operation: { Share: protocol }, result: null };
    await registry.persist({ volumes: [volume] });
    let uri: string;
    try {
      uri = await engine.publishNexus(nexus.uuid, protocol);
    } catch (err) {
      volume.operation = null;
      await rollbackOp(registry, { kind: 'volume', id: uuid }, { volumes: [volume] });
      const why = toSvcError(err);
      throw new SvcError(why.kind, `share of volume '${uuid}' failed: ${why.message}`, why.details);
    }
    const cached = registry.nexusStates.get(nexus.node)?.get(nexus.uuid);
    if (cached) registry.setNexusState(nexus.node, { ...cached, deviceUri: uri, protocol });
    nexus.share = protocol;
    volume.target = { ...volume.target!, protocol };
    if (frontendHost)
      volume.target.frontend = {
        host_acl: [{ node_name: frontendHost, node_nqn: hostNqn(frontendHost) }],
      };
    volume.operation = null;
    await settleOp(registry, { kind: 'volume', id: uuid }, true, {
      volumes: [volume],
      nexuses: [nexus],
      events: [makeEvent('volume', uuid, 'Shared', `target ${uri} on node ${nexus.node}`)],
    });
    return uri;
  });
}

/** Unshare: stop exporting the target nexus; the nexus and its children stay (publish is kept). */
export async function unshareVolume(ctx: CoreContext, uuid: string): Promise<void> {
  const { registry, engines } = ctx;
  await registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    checkUsable(volume);
    const nexus = cloneSpec(targetNexus(ctx, volume));
    if (nexus.share === 'none' || !volume.target!.protocol) {
      throw new SvcError('NotShared', `volume '${uuid}' is not shared`, `VolumeNotShared: ${uuid}`);
    }
    const engine = engines.get(nexus.node);
    volume.operation = { operation: 'Unshare', result: null };
    await registry.persist({ volumes: [volume] });
    try {
      await engine.unpublishNexus(nexus.uuid);
    } catch (err) {
      volume.operation = null;
      await rollbackOp(registry, { kind: 'volume', id: uuid }, { volumes: [volume] });
      const why = toSvcError(err);
      throw new SvcError(why.kind, `unshare of volume '${uuid}' failed: ${why.message}`, why.details);
    }
    const cached = registry.nexusStates.get(nexus.node)?.get(nexus.uuid);
    if (cached) registry.setNexusState(nexus.node, { ...cached, deviceUri: '', protocol: 'none' });
    nexus.share = 'none';
    volume.target = { ...volume.target!, protocol: null };
    volume.operation = null;
    await settleOp(registry, { kind: 'volume', id: uuid }, true, {
      volumes: [volume],
      nexuses: [nexus],
      events: [makeEvent('volume', uuid, 'Unshared', `target on node ${nexus.node} no longer exported`)],
    });
  });
}
