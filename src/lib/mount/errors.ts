/**
 * Why the S3 endpoint refused a mount, read from the FUSE daemon's own output: s3fs's start-up check
 * (`bucket or key not found`, `invalid credentials`) and Mountpoint for S3's (S3 error codes in its
 * message). `undefined` for anything else (the endpoint unreachable, the daemon crashed …).
 */
export type MountRefusal = 'no-such-bucket' | 'credentials-refused';

const NO_SUCH_BUCKET = [/bucket or key not found/i, /NoSuchBucket/, /bucket\b.*\bdoes not exist/i];
const CREDENTIALS_REFUSED = [
  /invalid credentials/i,
  /InvalidAccessKeyId/,
  /SignatureDoesNotMatch/,
  /AccessDenied/,
  /ExpiredToken/,
  /InvalidToken/,
];

export function mountRefusal(output: string): MountRefusal | undefined {
  if (NO_SUCH_BUCKET.some((re) => re.test(output))) return 'no-such-bucket';
  if (CREDENTIALS_REFUSED.some((re) => re.test(output))) return 'credentials-refused';
  return undefined;
}

/** The FUSE daemon did not mount; `output` is what it printed (its log). */
export class MountFailedError extends Error {
  /** What the S3 endpoint refused, when the output says so (a client mistake, not a fault). */
  readonly refusal: MountRefusal | undefined;
  constructor(
    /** What failed, without the refusal's advice and the daemon output. */
    readonly reason: string,
    readonly output: string,
    bucket?: string,
  ) {
    const refusal = mountRefusal(output);
    const why =
      refusal === 'no-such-bucket'
        ? `bucket${bucket ? ` '${bucket}'` : ''} not found at the S3 endpoint: check volume_context.bucketName and the endpoint (--s3-endpoint), or create the bucket; `
        : refusal === 'credentials-refused'
          ? `the S3 endpoint refused the credentials${bucket ? ` for bucket '${bucket}'` : ''}: check the access key and secret (node-publish secret, or the driver's AWS_* keys / --secrets-file); `
          : '';
    super(output ? `${why}${reason}; FUSE daemon output: ${output}` : `${why}${reason}`);
    this.name = 'MountFailedError';
    this.refusal = refusal;
  }
}

/** The target is already published with different, incompatible settings. */
export class MountConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MountConflictError';
  }
}
