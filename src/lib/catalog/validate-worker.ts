import { parentPort } from 'node:worker_threads';
import { type VolumePresenter, validatePage } from './page-validator.js';

/** Worker thread of PageValidator: one verdict per page, in order, after an optional presenter. */
let present: VolumePresenter | undefined;
parentPort?.on('message', (msg: { present: VolumePresenter } | { keys: string[]; values: string[] }) => {
  if ('present' in msg) {
    present = msg.present;
    return;
  }
  try {
    parentPort?.postMessage(validatePage(msg.keys, msg.values, present));
  } catch (err) {
    parentPort?.postMessage({ error: (err as Error).message });
  }
});
