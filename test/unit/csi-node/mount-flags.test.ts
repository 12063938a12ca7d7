import { describe, expect, it } from 'vitest';
import { mountFlagProblem } from '../../../src/daemons/csi-node/mount-flags.js';

describe('mount flags a CO may pass for a block volume', () => {
  it('accepts the options mount(8) and the filesystem document', () => {
    for (const f of ['noatime', 'ro', 'discard', 'data=ordered', 'errors=remount-ro', 'commit=30', 'nofail'])
      expect(mountFlagProblem('ext4', f)).toBeUndefined();
    for (const f of ['noatime', 'nouuid', 'inode64', 'logbsize=256k', 'allocsize=64m'])
      expect(mountFlagProblem('xfs', f)).toBeUndefined();
  });

  it('names what it refuses: unknown options, bad values, another filesystem’s option, binds', () => {
    expect(mountFlagProblem('ext4', 'NaN')).toMatch(/'NaN' is not an ext4 mount option/);
    expect(mountFlagProblem('ext4', 'nouuid')).toMatch(/not an ext4 mount option/);
    expect(mountFlagProblem('xfs', 'data=ordered')).toMatch(/not an xfs mount option/);
    expect(mountFlagProblem('ext4', 'data=bogus')).toMatch(/has a value ext4 does not accept/);
    expect(mountFlagProblem('ext4', 'commit=')).toMatch(/has a value/);
    expect(mountFlagProblem('ext4', 'bind')).toMatch(/is not allowed/);
    expect(mountFlagProblem('ext4', '__proto__')).toMatch(/not an ext4 mount option/);
    expect(mountFlagProblem('ext4', 'constructor=1')).toMatch(/not an ext4 mount option/);
  });
});
