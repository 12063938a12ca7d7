export const outputFormats = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof outputFormats)[number];
