import { afterAll, beforeAll } from 'vitest';
import type { MounterDaemon } from '../../../src/daemons/mounter/index.js';
import type { CsiClient } from '../../helpers/csi-client.js';
import { cleanupRoot, type Env, fuseProcessesBelow, makeEnv, startMounter } from './fixture.js';
import { mounterSuite } from './suite.js';

let env: Env;
let daemon: MounterDaemon;
let csi: CsiClient;

beforeAll(async () => {
  env = await makeEnv('storctl-procmnt');
  ({ daemon, csi } = await startMounter(env, { mounter: 'process' }));
});

afterAll(async () => {
  csi?.close();
  await daemon?.stop();
  await env?.s3.stop();
  if (env) await cleanupRoot(env.root);
});

mounterSuite('S3 mounter, process mounter (s3fs against s3rver)', () => ({
  env,
  daemon,
  csi,
  restart: async () => {
    csi.close();
    await daemon.stop();
    ({ daemon, csi } = await startMounter(env, { mounter: 'process' }));
  },
  daemonsFor: async (target) =>
    (await fuseProcessesBelow(env.root)).filter((p) => p.argv[2] === target).map((p) => `pid:${p.pid}`),
}));
