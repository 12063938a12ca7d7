import { useStdout } from 'ink';
import { useEffect, useState } from 'react';

/** The terminal's columns and rows, updated on resize (80×24 when the stream does not say). */
export function useTerminalSize(): { columns: number; rows: number } {
  const { stdout } = useStdout();
  const read = () => ({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  });
  return size;
}
