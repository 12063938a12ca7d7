import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultClusterId } from '../../../src/lib/cluster-id.js';

describe('default cluster id: the machine id, else dummy-uuid', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-machine-id-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it('a 32-hex-digit machine id (with its trailing newline) is the cluster id', () => {
    expect(defaultClusterId(file('good', '0123456789abcdef0123456789ABCDEF\n'))).toBe(
      '0123456789abcdef0123456789ABCDEF',
    );
  });

  it.each([
    ['no file', join(dir, 'missing')],
    ['an empty file (systemd before first boot)', file('empty', '')],
    ['"uninitialized"', file('uninit', 'uninitialized\n')],
    ['too short', file('short', '0123456789abcdef\n')],
    ['not hex', file('nothex', 'zz23456789abcdef0123456789abcdef\n')],
    ['a directory', dir],
  ])('%s: dummy-uuid', (_what, path) => {
    expect(defaultClusterId(path)).toBe('dummy-uuid');
  });
});
