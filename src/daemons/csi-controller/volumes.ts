import { status } from '@grpc/grpc-js';
import { blockCapabilityProblem } from '../../lib/csi/block-capability.js';
import { restKind } from '../../lib/csi/errors.js';
import { TOPOLOGY_NODE_KEY, TOPOLOGY_SELECTOR_KEY, TOPOLOGY_SELECTOR_VALUE } from '../../lib/csi/plugin.js';
import type { VolumeCapability } from '../../lib/csi/types.js';
import { invalid, requireString, validateMapSize } from '../../lib/csi/validate.js';
import { GrpcError } from '../../lib/grpc/status.js';
import { snapshotSize } from '../../lib/rest/snapshot-size.js';
import type { CreateVolumeRequest as RestCreateBody, Volume } from '../../lib/rest/types.js';
import { checkPage, type Deps, notFound, orNotFound, parseMaxEntries, parseToken, rpc } from './context.js';
import { volumeKey } from './guard.js';
import {
  type CapacityRangeIn,
  type CreateParams,
  capabilitiesKey,
  isUuid,
  parseCreateParams,
  requestDigest,
  requireCapabilities,
  sizeFits,
  sizeFor,
  sortedMap,
  volumeIdOfName,
} from './params.js';
import { csiVolume, publishedNodes } from './present.js';

/** Label of a CSI-made volume: the digest of its request, so a repeat is compared exactly. */
export const REQUEST_LABEL = 'csi.storctl.io/request';

type Segments = { segments?: Record<string, string> };

interface CreateVolumeRequest {
  name: string;
  capacity_range?: CapacityRangeIn | null;
  volume_capabilities: VolumeCapability[];
  parameters: Record<string, string>;
  secrets: Record<string, string>;
  volume_content_source?: {
    type?: string;
    snapshot?: { snapshot_id: string } | null;
    volume?: { volume_id: string } | null;
  } | null;
  accessibility_requirements?: { requisite?: Segments[]; preferred?: Segments[] } | null;
  mutable_parameters?: Record<string, string>;
}

const segmentsOk = (s: Record<string, string>) =>
  Object.entries(s).every(
    ([k, v]) => (k === TOPOLOGY_SELECTOR_KEY && v === TOPOLOGY_SELECTOR_VALUE) || k === TOPOLOGY_NODE_KEY,
  );

/** Volumes are reachable from every csi-node: a requisite naming only other places cannot be met. */
function checkAccessibility(req: CreateVolumeRequest['accessibility_requirements']): unknown {
  const requisite = (req?.requisite ?? []).map((t) => t.segments ?? {});
  const preferred = (req?.preferred ?? []).map((t) => t.segments ?? {});
  for (const s of [...requisite, ...preferred]) validateMapSize(s, 'accessibility_requirements segments');
  if (requisite.length && !requisite.some(segmentsOk)) {
    throw new GrpcError(
      status.RESOURCE_EXHAUSTED,
      `cannot provision in the requisite topology: volumes are accessible where ${TOPOLOGY_SELECTOR_KEY}=${TOPOLOGY_SELECTOR_VALUE}`,
    );
  }
  return { requisite: requisite.map(sortedMap), preferred: preferred.map(sortedMap) };
}

const sourceSnapshot = (v: Volume) =>
  (v.spec as { content_source?: { snapshot?: { snapshot: string } } }).content_source?.snapshot?.snapshot;

/** A repeated CreateVolume: the same request answers the volume, a different one ALREADY_EXISTS. */
function checkRepeat(
  v: Volume,
  name: string,
  digest: string,
  range: CapacityRangeIn | null | undefined,
  params: CreateParams,
  snapshotId: string | undefined,
): void {
  if (v.spec.status === 'Creating' || v.spec.operation)
    throw new GrpcError(status.ABORTED, `volume '${name}' (${v.spec.uuid}) is still being created; retry`);
  if (v.spec.status !== 'Created')
    throw new GrpcError(status.ABORTED, `volume '${name}' (${v.spec.uuid}) is being deleted; retry`);
  const label = v.spec.labels?.[REQUEST_LABEL];
  const same =
    label !== undefined
      ? label === digest
      : v.spec.num_replicas === params.replicas &&
        (snapshotId !== undefined || v.spec.thin === params.thin) &&
        sourceSnapshot(v) === snapshotId;
  if (!same)
    throw new GrpcError(
      status.ALREADY_EXISTS,
      `volume '${name}' (${v.spec.uuid}) already exists with other parameters, capabilities, topology or content source`,
    );
  if (!sizeFits(v.spec.size, range))
    throw new GrpcError(
      status.ALREADY_EXISTS,
      `volume '${name}' (${v.spec.uuid}) already exists with size ${v.spec.size}, outside the requested capacity_range`,
    );
}

export function volumeService(deps: Deps) {
  const { rest, guard, config } = deps;

  const CreateVolume = rpc(deps, 'CreateVolume', async (req: CreateVolumeRequest) => {
    const name = requireString(req.name, 'name');
    requireCapabilities(req.volume_capabilities);
    const parameters = req.parameters ?? {};
    const params = parseCreateParams(parameters);
    validateMapSize(req.secrets, 'secrets');
    if (Object.keys(req.mutable_parameters ?? {}).length)
      throw invalid('mutable_parameters are not supported (the driver has no MODIFY_VOLUME capability)');
    const src = req.volume_content_source;
    if (src?.volume || src?.type === 'volume')
      throw invalid(
        'a volume content source (cloning a volume) is not supported; clone from a snapshot instead',
      );
    const snapshotId =
      src?.snapshot || src?.type === 'snapshot'
        ? requireString(src.snapshot?.snapshot_id, 'volume_content_source.snapshot.snapshot_id')
        : undefined;
    const topology = checkAccessibility(req.accessibility_requirements);
    const id = volumeIdOfName(name);
    const context = Object.fromEntries(
      sortedMap(parameters).filter(([k]) => !k.startsWith('csi.storage.k8s.io/')),
    );
    const digest = requestDigest({
      parameters: sortedMap(context),
      capabilities: capabilitiesKey(req.volume_capabilities),
      source: snapshotId ?? null,
      topology,
    });
    return guard.run([volumeKey(id)], async () => {
      let size: number;
      if (snapshotId !== undefined) {
        // Core checks the snapshot before the volume id: a repeat is recognised here first.
        const existing = await orNotFound(rest.getVolume(id));
        if (existing) {
          checkRepeat(existing, name, digest, req.capacity_range, params, snapshotId);
          return { volume: csiVolume(existing, context) };
        }
        const snap = isUuid(snapshotId) ? await orNotFound(rest.getSnapshot(snapshotId)) : undefined;
        if (!snap) throw notFound(`source snapshot '${snapshotId}' not found`);
        size = snapshotSize(snap);
        if (!sizeFits(size, req.capacity_range))
          throw new GrpcError(
            status.OUT_OF_RANGE,
            `a volume from snapshot '${snapshotId}' has the snapshot's size ${size}, outside capacity_range; expand it after creation`,
          );
      } else size = sizeFor(req.capacity_range, config.defaultVolumeSize);
      const body: RestCreateBody = {
        size,
        replicas: params.replicas,
        thin: params.thin,
        policy: { self_heal: true },
        topology: params.topology,
        labels: { [REQUEST_LABEL]: digest },
        max_snapshots: params.maxSnapshots,
      };
      let v: Volume;
      try {
        v =
          snapshotId !== undefined
            ? await rest.createCloneVolume(snapshotId, id, body)
            : await rest.createVolume(id, body);
      } catch (err) {
        // Core answers AlreadyExists for an existing id, and StoreDirty while its create is pending.
        const kind = restKind(err);
        if (kind !== 'AlreadyExists' && kind !== 'FailedPersist') throw err;
        const existing = await orNotFound(rest.getVolume(id));
        if (!existing) throw err;
        checkRepeat(existing, name, digest, req.capacity_range, params, snapshotId);
        v = existing;
      }
      return { volume: csiVolume(v, context) };
    });
  });

  const DeleteVolume = rpc(deps, 'DeleteVolume', async (req: { volume_id: string }) => {
    const id = requireString(req.volume_id, 'volume_id');
    if (!isUuid(id)) return {}; // no volume can have that id: already gone
    return guard.run([volumeKey(id)], async () => {
      // A volume still published is in use (spec: FAILED_PRECONDITION), refused by core atomically.
      await orNotFound(rest.deleteVolume(id, { ifUnpublished: true }));
      return {};
    });
  });

  const ValidateVolumeCapabilities = rpc(
    deps,
    'ValidateVolumeCapabilities',
    async (req: {
      volume_id: string;
      volume_capabilities: VolumeCapability[];
      volume_context: Record<string, string>;
      parameters: Record<string, string>;
    }) => {
      const id = requireString(req.volume_id, 'volume_id');
      if (!req.volume_capabilities?.length) throw invalid('volume_capabilities is required');
      const v = isUuid(id) ? await orNotFound(rest.getVolume(id)) : undefined;
      if (!v) throw notFound(`volume '${id}' not found`);
      const problems = req.volume_capabilities.map(blockCapabilityProblem).filter((p) => p !== null);
      try {
        if (Object.keys(req.parameters ?? {}).length) parseCreateParams(req.parameters);
      } catch (err) {
        problems.push((err as Error).message);
      }
      if (problems.length) return { confirmed: null, message: problems.join('; ') };
      return {
        confirmed: {
          volume_context: req.volume_context ?? {},
          volume_capabilities: req.volume_capabilities,
          parameters: req.parameters ?? {},
        },
        message: '',
      };
    },
  );

  const ListVolumes = rpc(
    deps,
    'ListVolumes',
    async (req: { max_entries: number; starting_token: string }) => {
      const max = parseMaxEntries(req.max_entries);
      const start = parseToken(req.starting_token);
      const page = await rest.listVolumesPage(max, start);
      checkPage(start, page.entries);
      return {
        entries: page.entries.map((v) => ({
          volume: csiVolume(v),
          status: { published_node_ids: publishedNodes(v) },
        })),
        next_token: page.next_token === undefined ? '' : String(page.next_token),
      };
    },
  );

  const ControllerGetVolume = rpc(deps, 'ControllerGetVolume', async (req: { volume_id: string }) => {
    const id = requireString(req.volume_id, 'volume_id');
    const v = isUuid(id) ? await orNotFound(rest.getVolume(id)) : undefined;
    if (!v) throw notFound(`volume '${id}' not found`);
    const healthy = v.state.status === 'Online';
    return {
      volume: csiVolume(v),
      status: {
        published_node_ids: publishedNodes(v),
        volume_condition: {
          abnormal: !healthy && v.state.status !== 'Unknown',
          message: `volume is ${v.state.status}`,
        },
      },
    };
  });

  const GetCapacity = rpc(
    deps,
    'GetCapacity',
    async (req: {
      volume_capabilities: VolumeCapability[];
      parameters: Record<string, string>;
      accessible_topology?: Segments | null;
    }) => {
      if (Object.keys(req.parameters ?? {}).length) parseCreateParams(req.parameters);
      const none = { available_capacity: '0', maximum_volume_size: { value: '0' } };
      if ((req.volume_capabilities ?? []).some((c) => blockCapabilityProblem(c) !== null)) return none;
      const segments = req.accessible_topology?.segments ?? {};
      if (!segmentsOk(segments)) return none;
      const node = segments[TOPOLOGY_NODE_KEY];
      const free = (await rest.listPools())
        .filter(
          (p) => p.state && /^(online|degraded)$/i.test(p.state.status) && (!node || p.state.node === node),
        )
        .map((p) => Math.max(0, p.state!.capacity - p.state!.used));
      return {
        available_capacity: String(free.reduce((a, b) => a + b, 0)),
        maximum_volume_size: { value: String(free.length ? Math.max(...free) : 0) },
      };
    },
  );

  const ControllerExpandVolume = rpc(
    deps,
    'ControllerExpandVolume',
    async (req: {
      volume_id: string;
      capacity_range?: CapacityRangeIn | null;
      volume_capability?: VolumeCapability | null;
    }) => {
      const id = requireString(req.volume_id, 'volume_id');
      if (!req.capacity_range) throw invalid('capacity_range is required');
      const cap = req.volume_capability;
      if (cap) {
        const problem = blockCapabilityProblem(cap);
        if (problem) throw invalid(`volume_capability: ${problem}`);
      }
      // A filesystem grows on the node (NodeExpandVolume); a raw block device needs nothing more.
      const nodeExpansion = !(cap && (cap.access_type === 'block' || (cap.block && !cap.mount)));
      if (!isUuid(id)) throw notFound(`volume '${id}' not found`);
      return guard.run([volumeKey(id)], async () => {
        const v = await orNotFound(rest.getVolume(id));
        if (!v) throw notFound(`volume '${id}' not found`);
        const limit = Number(req.capacity_range?.limit_bytes ?? 0);
        if (limit && v.spec.size > limit)
          throw new GrpcError(
            status.OUT_OF_RANGE,
            `volume '${id}' has ${v.spec.size} bytes, more than limit_bytes ${limit}; volumes cannot shrink`,
          );
        const required = Number(req.capacity_range?.required_bytes ?? 0);
        if (v.spec.size >= required)
          return { capacity_bytes: String(v.spec.size), node_expansion_required: nodeExpansion };
        const size = sizeFor(req.capacity_range, v.spec.size);
        const grown = await rest.resizeVolume(id, size);
        return { capacity_bytes: String(grown.spec.size), node_expansion_required: nodeExpansion };
      });
    },
  );

  return {
    CreateVolume,
    DeleteVolume,
    ValidateVolumeCapabilities,
    ListVolumes,
    ControllerGetVolume,
    GetCapacity,
    ControllerExpandVolume,
  };
}
