import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const REDACTED = '<redacted>';

/** Names whose values are secrets, wherever they appear (JSON fields, key=value, env names). */
const SECRET_NAME =
  /(secret|passw(or)?d|token|credential|private[_-]?key|access[_-]?key|key[_-]?id|authorization|api[_-]?key)/i;

/**
 * Takes secrets out of text before it goes into a support bundle: every known secret value (from
 * the environment, the mounter's credential files, a secrets file) wherever it appears, the values
 * of fields and variables named like secrets, and AWS access key ids by their shape.
 */
export class Redactor {
  private readonly values = new Set<string>();

  /** Remember a secret value (short ones would redact ordinary words: 6 characters at least). */
  add(value: string | undefined): void {
    const v = value?.trim();
    if (v && v.length >= 6) this.values.add(v);
  }

  /** Values of environment variables named like secrets (AWS_SECRET_ACCESS_KEY, …). */
  addEnvironment(env: NodeJS.ProcessEnv): void {
    for (const [name, value] of Object.entries(env)) if (SECRET_NAME.test(name)) this.add(value);
  }

  /**
   * Values in credential files (s3fs passwd `ACCESS:SECRET` lines, `KEY=VALUE` env files, a
   * secrets file): learnt so they are found anywhere, never copied into the bundle themselves.
   */
  async addCredentialFiles(paths: string[]): Promise<void> {
    for (const path of paths) {
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n')) {
        const kv = /^\s*[A-Za-z_][A-Za-z0-9_]*\s*=\s*(.*?)\s*$/.exec(line);
        if (kv) this.add(kv[1]);
        else for (const part of line.split(':')) this.add(part);
      }
    }
  }

  /** Every regular file below a directory (credential files are all secret). */
  async addCredentialDir(dir: string): Promise<void> {
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    await this.addCredentialFiles(names.map((n) => join(dir, n)));
  }

  redact(text: string): string {
    let out = text;
    // Longest first: a value containing another is replaced whole.
    for (const v of [...this.values].sort((a, b) => b.length - a.length)) out = out.split(v).join(REDACTED);
    // "secretAccessKey": "…" and 'password': '…' in JSON or JS-ish text…
    out = out.replace(
      /(?<!\\)("|')([A-Za-z0-9_.-]*)\1(\s*:\s*)("|')((?:\\.|(?!\4).)*)\4/g,
      (m, q, name, sep, vq) => (SECRET_NAME.test(name) ? `${q}${name}${q}${sep}${vq}${REDACTED}${vq}` : m),
    );
    // …and inside a JSON string, as a store dump line holds a stored value: \"password\":\"…\".
    out = out.replace(/\\"([A-Za-z0-9_.-]*)\\"(\s*:\s*)\\"((?:(?!\\").)*)\\"/g, (m, name, sep) =>
      SECRET_NAME.test(name) ? `\\"${name}\\"${sep}\\"${REDACTED}\\"` : m,
    );
    // NAME=value and --name value / --name=value on command lines and in env dumps.
    out = out.replace(/\b([A-Za-z0-9_.-]+)(=)([^\s"',&]+)/g, (m, name, eq) =>
      SECRET_NAME.test(name) ? `${name}${eq}${REDACTED}` : m,
    );
    // AWS access key ids have a recognisable shape.
    out = out.replace(/\b(AKIA|ASIA)[A-Z0-9]{16}\b/g, REDACTED);
    return out;
  }
}
