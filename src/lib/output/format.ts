import { UsageError } from '../errors.js';
import { parseCustomColumns, parseJsonPathTemplate, type Template } from './template.js';

export const outputFormats = ['table', 'wide', 'json', 'yaml'] as const;
/** `jsonpath` and `custom-columns` carry a template (OutputSpec.template); listings only. */
export type OutputFormat = (typeof outputFormats)[number] | 'jsonpath' | 'custom-columns';

export interface OutputSpec {
  format: OutputFormat;
  template?: Template;
}

export const OUTPUT_FORMS = [...outputFormats, 'jsonpath=TEMPLATE', 'custom-columns=SPEC'];

/** Parse the value of `-o`: a plain format, or `jsonpath=…`/`custom-columns=…` with their template. */
export function parseOutput(text: string): OutputSpec {
  if ((outputFormats as readonly string[]).includes(text)) return { format: text as OutputFormat };
  const eq = text.indexOf('=');
  const name = eq < 0 ? text : text.slice(0, eq);
  if (name === 'jsonpath' || name === 'custom-columns') {
    const source = eq < 0 ? '' : text.slice(eq + 1);
    return {
      format: name,
      template: name === 'jsonpath' ? parseJsonPathTemplate(source) : parseCustomColumns(source),
    };
  }
  throw new UsageError(`Expected --output=${text} to be one of: ${OUTPUT_FORMS.join(', ')}`);
}

/** Formats that print a table (a header line, `--no-headers`, `No resources found.`). */
export const isTabular = (format: OutputFormat): boolean =>
  format === 'table' || format === 'wide' || format === 'custom-columns';
