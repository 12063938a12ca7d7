import { openStore } from '../../../src/lib/store/open.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { registerStoreContract } from './contract.js';

let etcd: EtcdServer | undefined;

registerStoreContract({
  name: 'etcd',
  async setup() {
    etcd = await startEtcd();
  },
  async teardown() {
    await etcd?.stop();
  },
  open: () => openStore(etcd!.url),
  url: () => etcd!.url,
  restartServer: () => etcd!.restart(),
});
