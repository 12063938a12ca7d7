import { parentPort } from 'node:worker_threads';
import { validatePage } from './page-validator.js';

/** Worker thread of PageValidator: one verdict per page, in order. */
parentPort?.on('message', ({ keys, values }: { keys: string[]; values: string[] }) => {
  try {
    parentPort?.postMessage(validatePage(keys, values));
  } catch (err) {
    parentPort?.postMessage({ error: (err as Error).message });
  }
});
