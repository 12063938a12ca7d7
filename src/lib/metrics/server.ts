import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenError } from '../listen-error.js';
import { registry } from './registry.js';

export interface MetricsAddress {
  host: string;
  port: number;
}

export interface MetricsServer {
  /** `http://host:port/metrics` */
  url: string;
  close(): Promise<void>;
}

/**
 * Serve this process's registry at `GET /metrics` (Prometheus text format). Says where on stdout, as
 * one JSON line (`msg: "metrics listening"`) before the daemon's ready line: `storctl up` reads it.
 */
export async function startMetricsServer(address: MetricsAddress, component: string): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
    );
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  }).catch((err: Error) => {
    throw listenError('metrics', `${address.host}:${address.port}`, '--metrics-address', err, {
      orOff: true,
    });
  });
  const a = server.address() as AddressInfo;
  const url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/metrics`;
  process.stdout.write(
    `${JSON.stringify({ level: 'info', time: new Date().toISOString(), component, msg: 'metrics listening', url })}\n`,
  );
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
