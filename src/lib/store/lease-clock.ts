import { readFileSync } from 'node:fs';

/*
 * Clocks leases are timed by. A lease must survive a step of the wall clock (NTP correcting it, a
 * VM resumed, `date -s`): timed by wall time, a step of 2 minutes forward expired every lease at
 * once (core lost its single-writer lease and restarted, every io-engine's liveness key went), and
 * a step back kept a dead process's lease alive as much longer (its node read Online, its core's
 * lease held the next core off).
 */

/** CLOCK_MONOTONIC in ms: one clock for every process of the machine, which no step moves. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

let boot: number | undefined;

/**
 * This boot of the machine: 48 bits of the kernel's boot_id (Linux), 0 where it cannot be read.
 * CLOCK_MONOTONIC starts again at each boot, so times on it compare only within one.
 */
export function bootId(): number {
  if (boot === undefined) {
    try {
      const hex = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/[^0-9a-f]/gi, '');
      boot = Number.parseInt(hex.slice(0, 12), 16) || 0;
    } catch {
      boot = 0;
    }
  }
  return boot;
}
