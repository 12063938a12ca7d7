import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import type { CoreEvent } from '../catalog/events.js';
import { clip } from './layout.js';

/** One event as a log line: time of day, resource/id (uuids shortened), action, message. */
export function eventLine(e: CoreEvent): string {
  const time = /T(\d\d:\d\d:\d\d)/.exec(e.time)?.[1] ?? e.time;
  const id = /^[0-9a-f-]{36}$/.test(e.id) ? e.id.slice(0, 8) : e.id;
  return `${time} ${e.resource}/${id} ${e.action} ${e.message}`;
}

/**
 * The newest events that fit, newest last; `back` lines scrolled up from the newest. Only the lines
 * shown are rendered.
 */
export function EventLog({
  events,
  width,
  height,
  back = 0,
  title = true,
}: {
  events: CoreEvent[];
  width: number;
  height: number;
  back?: number;
  title?: boolean;
}) {
  const rows = Math.max(0, height - (title ? 1 : 0));
  const end = Math.max(0, events.length - back);
  const shown = events.slice(Math.max(0, end - rows), end);
  return h(
    Box,
    { flexDirection: 'column', height, overflow: 'hidden' },
    title
      ? h(
          Text,
          { bold: true, wrap: 'truncate' },
          clip(`Events (${events.length}${back ? `, ${back} back` : ''})`, width),
        )
      : null,
    ...(shown.length
      ? shown.map((e, i) => h(Text, { key: `${end}-${i}`, wrap: 'truncate' }, clip(eventLine(e), width)))
      : [h(Text, { key: 'none', dimColor: true }, 'no events yet')]),
  );
}
