/**
 * An NVMe qualified name as Mayastor's `HostNqn` (an alias of `NvmeNqn`) deserializes it
 * (openebs/mayastor-control-plane `control-plane/stor-port/src/types/v0/transport/nvme_nqn.rs`,
 * `TryFrom<&str> for NvmeNqn`): 11 to 223 bytes, and either `nqn.2014-08.org.nvmexpress:uuid:<uuid>`
 * or `nqn.<yyyy-mm>.<domain>:<name>` with a domain of at most 63 bytes and a name. A value upstream's
 * serde refuses, storctl's codec refuses too, naming the rule it breaks.
 */
import { type Codec, describeValue, FieldError, string } from './codec.js';

const UUID_FORM_PREFIX = 'nqn.2014-08.org.nvmexpress:uuid:';
const MIN_LEN = 11;
const MAX_LEN = 223;
const DOMAIN_MAX_LEN = 63;
/** The forms Rust's `uuid::Uuid::parse_str` takes: hyphenated, simple, braced, urn. */
const RUST_UUID_RE =
  /^(?:urn:uuid:)?(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\})$/i;
const NUMERIC = /^\p{N}$/u;

/** Why `value` is not an NQN upstream accepts, or null when it is one. */
export function nqnProblem(value: string): string | null {
  const len = Buffer.byteLength(value);
  if (len > MAX_LEN) return `longer than ${MAX_LEN} bytes`;
  if (len < MIN_LEN) return `shorter than ${MIN_LEN} bytes`;
  const parts = value.split(UUID_FORM_PREFIX);
  if (parts.length === 2 && parts[0] === '')
    return RUST_UUID_RE.test(parts[1]) ? null : `'${UUID_FORM_PREFIX}' not followed by a uuid`;
  if (!value.startsWith('nqn.')) return "no 'nqn.' prefix";
  const rest = value.slice('nqn.'.length);
  // The date: four characters (the first three digits, as upstream checks), '-', two digits.
  const c = Array.from(rest);
  if (c.length < 7 || c[4] !== '-') return "no 'yyyy-mm' date after 'nqn.'";
  if (![c[0], c[1], c[2], c[5], c[6]].every((d) => NUMERIC.test(d))) return "an invalid 'yyyy-mm' date";
  const date = c.slice(0, 7).join('');
  if (!rest.startsWith(`${date}.`)) return "no '.' after the 'yyyy-mm' date";
  const [domain, ...name] = rest.slice(date.length + 1).split(':');
  if (Buffer.byteLength(domain) > DOMAIN_MAX_LEN) return `a domain longer than ${DOMAIN_MAX_LEN} bytes`;
  if (domain === '') return 'no domain';
  if (name.every((n) => n === '')) return "no ':<name>' after the domain";
  return null;
}

const EXPECTED = `an NVMe NQN (nqn.yyyy-mm.<domain>:<name> or ${UUID_FORM_PREFIX}<uuid>)`;

/** Mayastor's `HostNqn`: a string that parses as an NVMe NQN (stored as it was written). */
export const nvmeNqn: Codec<string> = {
  expected: EXPECTED,
  decode: (raw) => {
    const text = string.decode(raw);
    const why = nqnProblem(text);
    if (why) throw new FieldError(`expected ${EXPECTED}, got ${describeValue(raw)}: ${why}`);
    return text;
  },
  encode: (v) => v,
};
