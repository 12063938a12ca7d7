import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../src/daemons/core/rest/openapi.js';

/**
 * The CLI's REST client types (src/lib/rest/types.ts) are checked against the OpenAPI document core
 * serves, so the two cannot drift apart silently: every field a TS interface declares exists in the
 * schema, a field the TS declares non-optional is required by the schema, nested objects, arrays,
 * maps and string-literal unions are checked the same way (a literal must be in the schema's enum).
 */

type Schema = Record<string, unknown>;

/** Interface in types.ts → schema of the document it mirrors. */
const MIRRORS: Record<string, string> = {
  Volume: 'Volume',
  Nexus: 'Nexus',
  Node: 'Node',
  Pool: 'Pool',
  Replica: 'Replica',
  VolumeSnapshot: 'VolumeSnapshot',
  OnlineReplicaSnapshot: 'OnlineReplicaSnapshotState',
  CreateVolumeRequest: 'CreateVolumeBody',
  PublishRequest: 'PublishVolumeBody',
  BlockDevice: 'BlockDevice',
  RebuildRecord: 'RebuildRecord',
  RebuildHistory: 'RebuildHistory',
};

const schemas = openApiDocument.components.schemas as Record<string, Schema>;

function resolve(s: Schema): Schema {
  let out = s;
  while (typeof out.$ref === 'string') out = schemas[out.$ref.split('/').pop()!];
  return out;
}

const file = fileURLToPath(new URL('../../../src/lib/rest/types.ts', import.meta.url));
const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
const interfaces = new Map<string, ts.InterfaceDeclaration>();
source.forEachChild((n) => {
  if (ts.isInterfaceDeclaration(n)) interfaces.set(n.name.text, n);
});

function propName(n: ts.PropertyName): string {
  return ts.isIdentifier(n) || ts.isStringLiteral(n) ? n.text : n.getText();
}

/** Differences between a TS type and a schema, as `path: what` lines. */
function compare(type: ts.TypeNode | undefined, raw: Schema, path: string, out: string[]): void {
  if (!type) return;
  const schema = resolve(raw);
  if (ts.isParenthesizedTypeNode(type)) {
    compare(type.type, raw, path, out);
    return;
  }
  if (ts.isUnionTypeNode(type)) {
    const parts = type.types.filter(
      (t) =>
        !(t.kind === ts.SyntaxKind.UndefinedKeyword) &&
        !(ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword),
    );
    const literals = parts.filter((t) => ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal));
    if (literals.length === parts.length) {
      const allowed = schema.enum as string[] | undefined;
      for (const l of literals) {
        const v = ((l as ts.LiteralTypeNode).literal as ts.StringLiteral).text;
        if (!allowed) out.push(`${path}: '${v}' but the schema has no enum`);
        else if (!allowed.includes(v))
          out.push(`${path}: '${v}' is not in the schema's enum [${allowed.join(', ')}]`);
      }
      return;
    }
    for (const p of parts) compare(p, raw, path, out);
    return;
  }
  if (ts.isLiteralTypeNode(type) && ts.isStringLiteral(type.literal)) {
    const allowed = schema.enum as string[] | undefined;
    if (!allowed?.includes(type.literal.text))
      out.push(`${path}: '${type.literal.text}' is not in the schema's enum`);
    return;
  }
  if (ts.isArrayTypeNode(type)) {
    if (schema.type !== 'array') out.push(`${path}: an array in TS, ${String(schema.type)} in the schema`);
    else compare(type.elementType, schema.items as Schema, `${path}[]`, out);
    return;
  }
  if (ts.isTypeReferenceNode(type)) {
    const name = type.typeName.getText();
    if (name === 'Record') {
      const value = type.typeArguments?.[1];
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
        compare(value, schema.additionalProperties as Schema, `${path}{}`, out);
      else out.push(`${path}: a map in TS, not in the schema`);
      return;
    }
    const decl = interfaces.get(name);
    if (decl) members(decl.members, schema, path, out);
    else out.push(`${path}: unknown type ${name}`);
    return;
  }
  if (ts.isTypeLiteralNode(type)) {
    members(type.members, schema, path, out);
    return;
  }
  const kinds: Partial<Record<ts.SyntaxKind, string[]>> = {
    [ts.SyntaxKind.StringKeyword]: ['string'],
    [ts.SyntaxKind.NumberKeyword]: ['integer', 'number'],
    [ts.SyntaxKind.BooleanKeyword]: ['boolean'],
  };
  const want = kinds[type.kind];
  if (want && !want.includes(String(schema.type)))
    out.push(`${path}: ${type.getText()} in TS, ${String(schema.type)} in the schema`);
}

function members(list: ts.NodeArray<ts.TypeElement>, schema: Schema, path: string, out: string[]): void {
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  for (const m of list) {
    if (!ts.isPropertySignature(m)) continue; // index signatures: the rest of the body, unchecked
    const name = propName(m.name);
    const where = `${path}.${name}`;
    if (!props[name]) {
      out.push(`${where}: not in the schema`);
      continue;
    }
    if (!m.questionToken && !required.includes(name))
      out.push(`${where}: required in TS, optional in the schema`);
    compare(m.type, props[name], where, out);
  }
}

describe('REST client types (src/lib/rest/types.ts) against the OpenAPI document', () => {
  it('mirrors every exported interface', () => {
    expect([...interfaces.keys()].sort()).toEqual(Object.keys(MIRRORS).sort());
  });

  for (const [iface, schema] of Object.entries(MIRRORS))
    it(`${iface} matches ${schema}`, () => {
      const out: string[] = [];
      members(interfaces.get(iface)!.members, resolve(schemas[schema]), iface, out);
      expect(out).toEqual([]);
    });

  it('reports drift (the check is not vacuous)', () => {
    const fake = ts.createSourceFile(
      'x.ts',
      "interface X { spec: { uuid: string; nope: number; status: 'Creating' | 'Weird' }; state?: { size: string } }",
      ts.ScriptTarget.Latest,
      true,
    );
    const decl = fake.statements[0] as ts.InterfaceDeclaration;
    const out: string[] = [];
    members(decl.members, resolve(schemas.Volume), 'X', out);
    expect(out.join('\n')).toMatch(/X\.spec\.nope: not in the schema/);
    expect(out.join('\n')).toMatch(/'Weird' is not in the schema's enum/);
    expect(out.join('\n')).toMatch(/X\.state\.size: string in TS, integer/);
  });
});
