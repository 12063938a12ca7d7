import { Box, type Key, Text, useApp, useInput } from 'ink';
import { createElement as h, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { EventLog, eventLine } from './EventLog.js';
import { Header } from './Header.js';
import { clip } from './layout.js';
import type { DashboardModel } from './model.js';
import { emptyText, nextPanel, PANEL_TITLES, PANELS, type PanelId, panelTable } from './panels.js';
import { filterIds } from './rows.js';
import { TabBar } from './TabBar.js';
import { TablePanel } from './TablePanel.js';
import { makeTheme, type Theme } from './theme.js';
import { useTerminalSize } from './use-terminal-size.js';
import { VolumeDetails, volumeDetailLines } from './VolumeDetails.js';
import { clampIndex, visibleWindow } from './window.js';

export interface DashboardProps {
  model: DashboardModel;
  /** Where the data comes from (the store's endpoint), shown in the header. */
  source: string;
  /** Fixed size (tests); default the terminal's, following resizes. */
  width?: number;
  height?: number;
  theme?: Theme;
}

const NO_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
} as Key;

const perPanel = <T>(v: T) => Object.fromEntries(PANELS.map((p) => [p, v])) as Record<PanelId, T>;

/**
 * `storctl dashboard`: a header, the panel tabs, the active panel (only its visible rows
 * rendered), the newest events, and a key line. Every line is cut to the width, never wrapped,
 * and the whole view is one line shorter than the terminal, so a frame never scrolls it.
 */
export function Dashboard({ model, source, width, height, theme: given }: DashboardProps) {
  const snapshot = useSyncExternalStore(model.subscribe, model.getSnapshot);
  const terminal = useTerminalSize();
  const theme = useMemo(() => given ?? makeTheme(), [given]);
  const { exit } = useApp();
  const cols = Math.max(40, width ?? terminal.columns);
  const total = Math.max(12, height ?? terminal.rows - 1);
  const [active, setActive] = useState<PanelId>('volumes');
  // The selected row by id (it stays put when rows are added above it), and by index for when it goes.
  const [selected, setSelected] = useState(() =>
    perPanel<{ id: string | null; index: number }>({ id: null, index: 0 }),
  );
  const [filters, setFilters] = useState(() => perPanel(''));
  const [filtering, setFiltering] = useState(false);
  const [details, setDetails] = useState<string | null>(null);
  const [detailScroll, setDetailScroll] = useState(0);
  const [eventsBack, setEventsBack] = useState(0);
  const starts = useRef(perPanel(0));

  const barWidth = Math.max(8, Math.min(30, cols - 66));
  const compact = cols < 100;
  const tables = useMemo(() => {
    const o = { barWidth, compact };
    return {
      nodes: panelTable('nodes', snapshot, o),
      pools: panelTable('pools', snapshot, o),
      volumes: panelTable('volumes', snapshot, o),
      switchovers: panelTable('switchovers', snapshot, o),
      mounts: panelTable('mounts', snapshot, o),
    };
  }, [snapshot, barWidth, compact]);
  const table = active === 'events' ? null : tables[active];
  const ids = useMemo(() => (table ? filterIds(table, filters[active]) : []), [table, filters, active]);
  const eventsFilter = filters.events.toLowerCase();
  const shownEvents = useMemo(
    () =>
      eventsFilter
        ? snapshot.events.filter((e) => eventLine(e).toLowerCase().includes(eventsFilter))
        : snapshot.events,
    [snapshot, eventsFilter],
  );
  const detailLines = useMemo(
    () => (details ? volumeDetailLines(snapshot, details) : null),
    [snapshot, details],
  );

  const eventsHeight = active === 'events' || details ? 0 : total >= 20 ? Math.floor(total / 4) : 3;
  const mainHeight = total - 3 - eventsHeight;
  const pageRows = Math.max(1, mainHeight - 1);
  const at = selected[active].id === null ? -1 : ids.indexOf(selected[active].id!);
  const sel = at >= 0 ? at : clampIndex(selected[active].index, ids.length);
  const win = visibleWindow(ids.length, sel, pageRows, starts.current[active]);
  starts.current[active] = win.start;

  const move = (delta: number) => {
    if (details) {
      const max = Math.max(0, (detailLines?.length ?? 0) - (mainHeight - 1));
      setDetailScroll((s) => Math.max(0, Math.min(max, s + delta)));
    } else if (active === 'events')
      setEventsBack((b) => Math.max(0, Math.min(snapshot.events.length - 1, b - delta)));
    else {
      const index = clampIndex(sel + delta, ids.length);
      setSelected((s) => ({ ...s, [active]: { id: ids[index] ?? null, index } }));
    }
  };

  // The handler of the latest render, whichever one Ink has registered: a key pressed right after a
  // frame acts on what that frame shows.
  const handler = useRef(onInput);
  handler.current = onInput;
  useInput((input: string, key: Key) => handler.current(input, key));

  // Keys typed faster than a frame (or sent in one write) arrive as one string: take them one by one.
  function onInput(input: string, key: Key) {
    if (!filtering && input.length > 1 && !input.includes('\u001B'))
      for (const c of input) onKey(c, { ...NO_KEY, tab: c === '\t', return: c === '\r' });
    else onKey(input, key);
  }

  function onKey(input: string, key: Key) {
    if (filtering) {
      if (key.return) setFiltering(false);
      else if (key.escape) {
        setFiltering(false);
        setFilters((f) => ({ ...f, [active]: '' }));
      } else if (key.backspace || key.delete) setFilters((f) => ({ ...f, [active]: f[active].slice(0, -1) }));
      else if (input && !key.ctrl && !key.meta && !key.tab && !key.upArrow && !key.downArrow)
        setFilters((f) => ({ ...f, [active]: f[active] + input }));
      return;
    }
    if (input === 'q') return exit();
    if (key.upArrow) return move(-1);
    if (key.downArrow) return move(1);
    if (key.pageUp) return move(-pageRows);
    if (key.pageDown) return move(pageRows);
    if (key.home) return move(-Number.MAX_SAFE_INTEGER / 2);
    if (key.end) return move(Number.MAX_SAFE_INTEGER / 2);
    if (details) {
      if (key.escape || key.backspace || key.delete || key.return || key.leftArrow) setDetails(null);
      return;
    }
    if (key.tab || key.rightArrow || key.leftArrow) {
      setActive((a) => nextPanel(a, (key.tab && key.shift) || key.leftArrow ? -1 : 1));
      return;
    }
    const digit = Number(input);
    if (Number.isInteger(digit) && digit >= 1 && digit <= PANELS.length) return setActive(PANELS[digit - 1]);
    if (input === '/') return setFiltering(true);
    if (key.escape && filters[active]) return setFilters((f) => ({ ...f, [active]: '' }));
    if (key.return && (active === 'volumes' || active === 'switchovers') && ids[sel]) {
      setDetails(ids[sel]);
      setDetailScroll(0);
    }
  }

  const tabs = PANELS.map((id) => ({
    id,
    title: PANEL_TITLES[id],
    count: id === 'events' ? snapshot.events.length : tables[id].ids.length,
  }));
  const main = details
    ? h(VolumeDetails, {
        lines: detailLines,
        volumeId: details,
        scroll: detailScroll,
        width: cols,
        height: mainHeight,
      })
    : active === 'events'
      ? h(EventLog, { events: shownEvents, width: cols, height: mainHeight, back: eventsBack })
      : h(TablePanel, {
          table: table!,
          ids,
          selected: sel,
          start: win.start,
          end: win.end,
          width: cols,
          height: mainHeight,
          theme,
          empty: emptyText(active, snapshot, filters[active]),
        });
  const filter = filters[active];
  const keysLine = details
    ? '↑↓ scroll · esc back · q quit'
    : filtering
      ? `/${filter}▏  enter keep · esc clear`
      : `${filter ? `filter '${filter}' (esc clears) · ` : ''}tab/←→ panel · ↑↓ move · / filter · enter details · q quit`;
  return h(
    Box,
    { flexDirection: 'column', width: cols, height: total },
    h(Header, { snapshot, source, width: cols, theme }),
    h(TabBar, { tabs, active, theme }),
    main,
    eventsHeight ? h(EventLog, { events: snapshot.events, width: cols, height: eventsHeight }) : null,
    h(
      Text,
      { dimColor: !filtering, color: filtering ? theme.accent : undefined, wrap: 'truncate' },
      clip(keysLine, cols),
    ),
  );
}
