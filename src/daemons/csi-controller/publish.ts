import { status } from '@grpc/grpc-js';
import { blockCapabilityProblem } from '../../lib/csi/block-capability.js';
import { restKind } from '../../lib/csi/errors.js';
import type { VolumeCapability } from '../../lib/csi/types.js';
import { invalid, requireString } from '../../lib/csi/validate.js';
import { GrpcError } from '../../lib/grpc/status.js';
import type { Volume } from '../../lib/rest/types.js';
import { type Deps, notFound, orNotFound, rpc } from './context.js';
import { volumeKey } from './guard.js';
import { isUuid } from './params.js';
import { publishedNodes } from './present.js';

/** What the csi-node needs to attach: the NBD target URI of the volume's nexus. */
function publishContext(v: Volume): Record<string, string> {
  const uri = v.state.target?.deviceUri;
  if (!uri)
    throw new GrpcError(
      status.UNAVAILABLE,
      `volume '${v.spec.uuid}' is published but core reports no target URI yet; retry`,
    );
  return { uri };
}

export function publishService(deps: Deps) {
  const { rest, guard } = deps;

  const ControllerPublishVolume = rpc(
    deps,
    'ControllerPublishVolume',
    async (req: {
      volume_id: string;
      node_id: string;
      volume_capability?: VolumeCapability | null;
      readonly: boolean;
    }) => {
      const id = requireString(req.volume_id, 'volume_id');
      const node = requireString(req.node_id, 'node_id');
      if (!req.volume_capability) throw invalid('volume_capability is required');
      const problem = blockCapabilityProblem(req.volume_capability);
      if (problem) throw invalid(`volume_capability: ${problem}`);
      if (req.readonly)
        throw invalid(
          'readonly publish is not supported (no PUBLISH_READONLY capability); use access mode SINGLE_NODE_READER_ONLY',
        );
      if (!isUuid(id)) throw notFound(`volume '${id}' not found`);
      return guard.run([volumeKey(id)], async () => {
        const v = await orNotFound(rest.getVolume(id));
        if (!v) throw notFound(`volume '${id}' not found`);
        // A node id exists when its csi-node registered with core (app node), or it is an io-engine node.
        const appNode = await orNotFound(rest.getAppNode(node));
        const ioNode = appNode && v.spec.num_replicas < 2 ? undefined : await orNotFound(rest.getNode(node));
        if (!appNode && !ioNode)
          throw notFound(
            `node '${node}' is unknown: no csi-node registered under that id and no io-engine node has it`,
          );
        if (v.spec.target) {
          const on = publishedNodes(v);
          if (on.includes(node)) return { publish_context: publishContext(v) };
          throw new GrpcError(
            status.FAILED_PRECONDITION,
            `volume '${id}' is published to ${on.length ? `node(s) ${on.join(', ')}` : 'a frontend outside CSI'}; a volume serves one node at a time`,
          );
        }
        // Upstream's choice: a multi-replica volume's target goes to the requesting node when it is an
        // online, uncordoned io-engine (local I/O); otherwise core chooses (next to a replica).
        const local = v.spec.num_replicas > 1 && ioNode?.state?.status === 'Online' && !ioNode.state.cordoned;
        const published = await rest.publishVolume(id, {
          protocol: 'nbd',
          publish_context: {},
          node: local ? node : undefined,
          frontend_node: node,
        });
        return { publish_context: publishContext(published) };
      });
    },
  );

  const ControllerUnpublishVolume = rpc(
    deps,
    'ControllerUnpublishVolume',
    async (req: { volume_id: string; node_id: string }) => {
      const id = requireString(req.volume_id, 'volume_id');
      const node = req.node_id ? requireString(req.node_id, 'node_id') : undefined;
      if (!isUuid(id)) return {}; // no such volume: nothing is attached anywhere
      return guard.run([volumeKey(id)], async () => {
        const v = await orNotFound(rest.getVolume(id));
        if (!v?.spec.target) return {};
        const on = publishedNodes(v);
        if (node && on.length && !on.includes(node)) return {}; // not published to that node
        try {
          await rest.unpublishVolume(id, true);
        } catch (err) {
          const kind = restKind(err);
          if (kind !== 'NotPublished' && kind !== 'NotFound') throw err;
        }
        return {};
      });
    },
  );

  return { ControllerPublishVolume, ControllerUnpublishVolume };
}
