import { defineConfig } from 'vitest/config';

// Tests start real servers (etcd, io-engines, FUSE daemons); forks isolate native modules and
// signal handling, and the generous timeouts cover a loaded 2-core CI machine.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ when it is missing or older than the sources: CLI-driven tests run the build.
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
    minWorkers: 1,
  },
});
