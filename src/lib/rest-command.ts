import { Flags } from '@oclif/core';
import type { Input, ParserOutput } from '@oclif/core/interfaces';
import { StorctlCommand } from './command.js';
import { RestClient } from './rest/client.js';
import { resolveRestUrl } from './rest/endpoint.js';

// biome-ignore lint/suspicious/noExplicitAny: mirrors oclif's own definition (as in command.ts)
type FlagOutput = { [name: string]: any };
// biome-ignore lint/suspicious/noExplicitAny: mirrors oclif's own definition (as in command.ts)
type ArgOutput = { [name: string]: any };

/**
 * Base of the operator commands that call core's REST API (`volume …`, `node …`, `pool …`,
 * `snapshot …`, `get block-devices`): the `--rest` flag and `this.client`, a client of core created
 * on first use and closed when the command ends, whether it succeeded or failed.
 */
export abstract class RestCommand extends StorctlCommand {
  static override baseFlags = {
    ...StorctlCommand.baseFlags,
    rest: Flags.string({
      description: 'core REST URL (default: the cluster `storctl up` started, else http://127.0.0.1:8081)',
      env: 'STORCTL_REST',
    }),
  };

  private restFlag: string | undefined;
  private restClient: RestClient | undefined;

  protected override async parse<F extends FlagOutput, B extends FlagOutput, A extends ArgOutput>(
    options?: Input<F, B, A>,
    argv?: string[],
  ): Promise<ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv);
    this.restFlag = (parsed.flags as { rest?: string }).rest;
    return parsed;
  }

  /** Core's REST API at `--rest` / STORCTL_REST, else the cluster `storctl up` started, else the default. */
  protected get client(): RestClient {
    this.restClient ??= new RestClient(resolveRestUrl(this.restFlag));
    return this.restClient;
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    try {
      await this.restClient?.close();
    } finally {
      this.restClient = undefined;
    }
    return super.finally(err);
  }
}
