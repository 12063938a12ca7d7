import { describe, expect, it } from 'vitest';
import { shareProtocol } from '../../../src/daemons/core/ops/volume-share.js';
import { callbackUrl } from '../../../src/daemons/core/watches.js';

describe('volume extras: boundary validation', () => {
  it('a watch callback is an absolute http(s) URL without credentials', () => {
    expect(callbackUrl('http://127.0.0.1:8080/hook?x=1')).toBe('http://127.0.0.1:8080/hook?x=1');
    expect(callbackUrl('https://example.org')).toBe('https://example.org/');
    for (const bad of [
      null,
      '',
      '/relative',
      'ftp://h/x',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'http://user:pw@h/',
      `http://h/${'a'.repeat(3000)}`,
    ]) {
      expect(() => callbackUrl(bad), String(bad)).toThrow(/callback/);
    }
  });

  it('volumes are shared over nbd only; Mayastor protocols and unknown ones are 400s that say so', () => {
    expect(shareProtocol('nbd')).toBe('nbd');
    expect(() => shareProtocol('nvmf')).toThrow(/not supported.*nbd/);
    expect(() => shareProtocol('iscsi')).toThrow(/not supported.*nbd/);
    expect(() => shareProtocol('bogus')).toThrow(/unknown share protocol/);
    for (const protocol of ['nvmf', 'iscsi', 'bogus']) {
      let thrown: unknown;
      try {
        shareProtocol(protocol);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, protocol).toMatchObject({ status: 400 });
    }
  });
});
