import * as grpc from '@grpc/grpc-js';
import { loadProto, lookupService } from './proto.js';

type Call = (
  req: unknown,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;

const services = new Map<string, grpc.ServiceClientConstructor>();

/** The client constructor of `service` in `proto/<file>`, loaded once per process. */
export function serviceClient(file: string, service: string): grpc.ServiceClientConstructor {
  const key = `${file}#${service}`;
  let ctor = services.get(key);
  if (!ctor) {
    ctor = lookupService(loadProto(file), service);
    services.set(key, ctor);
  }
  return ctor;
}

/**
 * Channel options of every storctl gRPC client. A connection of its own (local subchannel pool):
 * grpc-js shares one per address across a process's clients by default, so a client made for a
 * daemon restarted on the same address inherited the old client's connection, still backing off
 * from the attempts that failed while the daemon was gone, and failed every call at once ("No
 * connection established") until its next attempt. And at most 5 s between reconnect attempts
 * (grpc-js: 120 s), so a daemon back from a longer outage is reached within seconds.
 */
export const CLIENT_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.use_local_subchannel_pool': 1,
  'grpc.max_reconnect_backoff_ms': 5_000,
};

/**
 * A plain (insecure, loopback or cluster-internal) gRPC client of one storctl service whose unary
 * calls resolve with the response or reject with the grpc ServiceError (its `code` to act on).
 */
export class UnaryClient {
  readonly client: grpc.Client;

  constructor(
    file: string,
    service: string,
    readonly endpoint: string,
    private readonly timeoutMs: number,
  ) {
    const Ctor = serviceClient(file, service);
    this.client = new Ctor(endpoint, grpc.credentials.createInsecure(), CLIENT_CHANNEL_OPTIONS);
  }

  call<T>(method: string, req: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    return new Promise((resolve, reject) => {
      (this.client as unknown as Record<string, Call>)[method].call(
        this.client,
        req,
        { deadline: Date.now() + timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res as T)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
