import type { Tone } from './rows.js';

/**
 * Colours of the dashboard: only the terminal's own named colours (they follow its light or dark
 * palette), never white or black text. With NO_COLOR set (any value) no colour is used at all: the
 * selection is shown by a `>` marker, which is there in colour too.
 */
export interface Theme {
  color: boolean;
  tone(t: Tone): string | undefined;
  accent: string | undefined;
}

export function makeTheme(env: NodeJS.ProcessEnv = process.env): Theme {
  const color = !('NO_COLOR' in env && env.NO_COLOR !== undefined && env.NO_COLOR !== '');
  return {
    color,
    accent: color ? 'cyan' : undefined,
    tone: (t) => (!color || !t ? undefined : t === 'ok' ? 'green' : t === 'bad' ? 'red' : 'yellow'),
  };
}
