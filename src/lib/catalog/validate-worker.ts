import { parentPort } from 'node:worker_threads';
import { type PageMessage, type VolumePresenter, validatePageMessage } from './page-validator.js';

/** Worker thread of PageValidator: one verdict per page, in order, after an optional presenter. */
let present: VolumePresenter | undefined;
parentPort?.on('message', (msg: { present: VolumePresenter } | PageMessage) => {
  if ('present' in msg) {
    present = msg.present;
    return;
  }
  try {
    parentPort?.postMessage(validatePageMessage(msg, present));
  } catch (err) {
    parentPort?.postMessage({ error: (err as Error).message });
  }
});
