/**
 * CoreRegistryConfig, key `CoreRegistryConfig/db98f8bb-4afc-45d0-85b9-24c99cc443f2` (docs/mayastor-compat.md
 * §1.14): how io-engine nodes register, plus the legacy-compat flag while v1 NexusInfo
 * keys still exist.
 */
import { bool, type Codec, literals, string } from './codec.js';
import { specCodec } from './common.js';
import { field, optional, struct } from './struct.js';

/** The fixed id the core agent stores its registry config under. */
export const CORE_REGISTRY_CONFIG_ID = 'db98f8bb-4afc-45d0-85b9-24c99cc443f2';

export const registrationModes = ['Automatic', 'Manual'] as const;
export type RegistrationMode = (typeof registrationModes)[number];

export interface CoreRegistryConfig {
  id: string;
  registration: RegistrationMode;
  /** Present (true) only while legacy 1.x compatibility is on. */
  mayastor_compat_v1?: boolean;
}

export const coreRegistryConfigCodec: Codec<CoreRegistryConfig> = struct<CoreRegistryConfig>(
  'CoreRegistryConfig',
  {
    id: field(string),
    registration: field(literals(registrationModes)),
    mayastor_compat_v1: optional(bool, (v) => !v),
  },
);

export const coreRegistryConfig = specCodec<CoreRegistryConfig>(
  'CoreRegistryConfig',
  coreRegistryConfigCodec,
  'id',
  (c) => c.id,
);
