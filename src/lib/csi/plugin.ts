import { readFileSync } from 'node:fs';

/** storctl's version (package.json): every CSI plugin's GetPluginInfo vendor_version. */
export const PLUGIN_VERSION: string = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
).version;

/**
 * Topology of the block CSI driver, shared by csi-controller and csi-node: every node running the
 * csi-node carries the selector segment (volumes are reachable over the network from all of them);
 * the node segment names one node (GetCapacity of one node's pools, NodeGetInfo).
 */
export const TOPOLOGY_NODE_KEY = 'storctl.io/nodename';
export const TOPOLOGY_SELECTOR_KEY = 'storctl.io/csi-node';
export const TOPOLOGY_SELECTOR_VALUE = 'storctl';

/** Default name of the block CSI driver (a reverse-domain name; `--driver-name` changes it). */
export const BLOCK_DRIVER_NAME = 'io.storctl.csi-block';
