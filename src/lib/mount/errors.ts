/** The FUSE daemon did not mount; `output` is what it printed (its log). */
export class MountFailedError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(output ? `${message}; FUSE daemon output: ${output}` : message);
    this.name = 'MountFailedError';
  }
}

/** The target is already published with different, incompatible settings. */
export class MountConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MountConflictError';
  }
}
