/** Plain shapes of the csi.v1 messages the node plugins use (proto-loader: keepCase, enums as names). */

export interface VolumeCapability {
  block?: Record<string, never> | null;
  mount?: { fs_type?: string; mount_flags?: string[]; volume_mount_group?: string } | null;
  access_mode?: { mode?: string } | null;
  access_type?: 'block' | 'mount';
}

export interface NodePublishVolumeRequest {
  volume_id: string;
  publish_context: Record<string, string>;
  staging_target_path: string;
  target_path: string;
  volume_capability?: VolumeCapability | null;
  readonly: boolean;
  secrets: Record<string, string>;
  volume_context: Record<string, string>;
}

export interface NodeUnpublishVolumeRequest {
  volume_id: string;
  target_path: string;
}
