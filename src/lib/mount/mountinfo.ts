import { readFile } from 'node:fs/promises';

/** One line of /proc/self/mountinfo (proc(5)), with paths decoded. */
export interface MountEntry {
  id: number;
  parentId: number;
  /** major:minor of the mounted device. */
  device: string;
  root: string;
  mountPoint: string;
  mountOptions: string[];
  optionalFields: string[];
  fsType: string;
  source: string;
  superOptions: string[];
}

/** The kernel escapes space, tab, newline and backslash in paths as \NNN (octal). */
export function decodeMountPath(raw: string): string {
  return raw.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

export function parseMountInfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    // A malformed line is skipped, not logged: mount options may carry secrets.
    if (sep < 6 || fields.length < sep + 3) continue;
    entries.push({
      id: Number(fields[0]),
      parentId: Number(fields[1]),
      device: fields[2],
      root: decodeMountPath(fields[3]),
      mountPoint: decodeMountPath(fields[4]),
      mountOptions: fields[5].split(','),
      optionalFields: fields.slice(6, sep),
      fsType: fields[sep + 1],
      source: decodeMountPath(fields[sep + 2]),
      superOptions: (fields[sep + 3] ?? '').split(','),
    });
  }
  return entries;
}

/**
 * Read the mount table. The file is generated while it is read, so a table that changes during the
 * read can come out torn; read until two reads agree (as mount-utils does), at most a few times.
 */
export async function readMountTable(path = '/proc/self/mountinfo'): Promise<MountEntry[]> {
  let previous = await readFile(path, 'utf8');
  for (let i = 0; i < 5; i++) {
    const current = await readFile(path, 'utf8');
    if (current === previous) break;
    previous = current;
  }
  return parseMountInfo(previous);
}

/** All entries mounted exactly at `target` (stacked mounts come last). */
export function mountsAt(table: MountEntry[], target: string): MountEntry[] {
  return table.filter((m) => m.mountPoint === target);
}
