import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect } from 'vitest';
import { CsiClient } from '../../helpers/csi-client.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { TestCluster } from '../core/cluster.js';
import { startController } from './controller-process.js';

export * from './controller-process.js';

export interface ControllerFixture {
  cluster: TestCluster;
  proc: StorctlProcess;
  csi: CsiClient;
  socket: string;
  dir: string;
}

/**
 * A real cluster (core + three io-engines with 1 GiB pools) and the built csi-controller as a
 * process on a unix socket, called through a real gRPC client. Stops only what it started.
 */
export function controllerFixture(prefix: string): ControllerFixture {
  const fx = {} as ControllerFixture;
  beforeAll(async () => {
    fx.dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    fx.cluster = await TestCluster.start();
    const { proc, socket } = await startController(fx.dir, fx.cluster.restUrl, fx.cluster.env);
    fx.proc = proc;
    fx.socket = socket;
    fx.csi = new CsiClient(socket);
  }, 120_000);
  afterAll(async () => {
    fx.csi?.close();
    await fx.proc?.kill('SIGTERM');
    await fx.cluster?.stop();
    if (fx.dir) rmSync(fx.dir, { recursive: true, force: true });
  }, 120_000);
  return fx;
}

/** The error of a call that must fail (its gRPC code and details). */
export async function failure(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err, 'the call must fail').toBeDefined();
  return err;
}

/** The call fails with `code`, and its message matches `message` when given. */
export async function refused(p: Promise<unknown>, code: status, message?: RegExp): Promise<string> {
  const err = await failure(p);
  expect({ code: err.code, details: err.details }).toMatchObject({ code });
  if (message) expect(err.details).toMatch(message);
  return err.details;
}
