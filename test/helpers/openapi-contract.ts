/**
 * Holds recorded HTTP exchanges (`recording-proxy.ts`) to an OpenAPI 3.1 document: which
 * operation each request is; whether its path parameters, query (every key, every value) and
 * JSON body are what that operation declares; whether the answer's status is listed for it and
 * its JSON body matches the schema of that status.
 *
 * JSON Schema is checked by ajv (draft 2020-12, OpenAPI 3.1's dialect) with ajv-formats, against
 * the document itself, so every `$ref` resolves where the document says. Every schema the
 * document uses is compiled up front: a document ajv cannot read fails at once, not on the first
 * exchange that happens to need the broken part.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import type { Exchange } from './recording-proxy.ts';

type Json = Record<string, unknown>;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** Where the document is registered in ajv; `$ref`s inside it resolve against this. */
const DOC_ID = 'https://contract.invalid/openapi.json';
/**
 * Keys of an OpenAPI document's root: declared to ajv as keywords that check nothing, so the
 * document can be registered as a schema (its `$ref`s then resolve) while ajv's strict mode still
 * refuses any keyword it does not know inside the schemas themselves.
 */
const DOCUMENT_KEYS = [
  'openapi',
  'info',
  'jsonSchemaDialect',
  'servers',
  'paths',
  'webhooks',
  'components',
  'security',
  'tags',
];
/** OpenAPI 3.1's own schema keywords beside JSON Schema's: annotations for validation. */
const OPENAPI_SCHEMA_KEYWORDS = ['example', 'xml', 'externalDocs', 'discriminator'];

export interface Operation {
  /** `GET /youtube/batch/{jobId}`, as the document spells the path */
  key: string;
  method: string;
  template: string;
  operationId: string | undefined;
  /** JSON pointer of the operation object in the document */
  pointer: string;
  /** the HTTP statuses the document lists for it (`200`, `404`, ...) */
  statuses: string[];
}

export interface Problem {
  /** the exchange's `seq` */
  seq: number;
  /** the operation's key, when the request matched one */
  operation: string | undefined;
  /** what failed: `request.query.features`, `response.body/stats/shares`, `response.status`, ... */
  where: string;
  message: string;
}

export interface Contract {
  /** the path of the document's first server URL (`/v1`): request paths start with it */
  readonly basePath: string;
  readonly operations: readonly Operation[];
  operationOf(method: string, path: string): Operation | undefined;
  /** every way the exchange departs from the document; empty when it conforms */
  check(exchange: Exchange): Problem[];
}

interface Parameter {
  name: string;
  in: string;
  required: boolean;
  explode: boolean;
  /** the parameter's schema, `$ref`s followed, to know how to read a query string value */
  schema: Json;
  validate: ValidateFunction;
}

interface Media {
  mediaType: string;
  validate: ValidateFunction | undefined;
}

interface CompiledOperation extends Operation {
  regex: RegExp;
  pathNames: string[];
  parameters: Parameter[];
  body: { required: boolean; media: Media[] } | undefined;
  responses: Map<string, Media[]>;
  apiKeyHeaders: string[];
}

function escapePointerPart(part: string): string {
  return part.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A JSON pointer as a URI fragment (each part percent-encoded: paths hold `{` and `}`). */
function fragment(pointer: string): string {
  return pointer
    .split('/')
    .map((p) => encodeURIComponent(p))
    .join('/');
}

function at(doc: Json, pointer: string): unknown {
  let node: unknown = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Json)[part];
  }
  return node;
}

/** Follow local `$ref`s from `pointer` to the object they lead to, and its pointer. */
function deref(doc: Json, pointer: string): { node: Json; pointer: string } {
  let p = pointer;
  for (let hops = 0; hops < 20; hops++) {
    const node = at(doc, p);
    if (node === null || typeof node !== 'object') throw new Error(`openapi contract: nothing at ${p}`);
    const ref = (node as Json).$ref;
    if (typeof ref !== 'string') return { node: node as Json, pointer: p };
    if (!ref.startsWith('#/')) throw new Error(`openapi contract: only local $refs are followed, got ${ref}`);
    p = decodeURIComponent(ref.slice(1));
  }
  throw new Error(`openapi contract: $ref loop at ${pointer}`);
}

function mediaTypeOf(contentType: string | string[] | undefined): string | undefined {
  const v = Array.isArray(contentType) ? contentType[0] : contentType;
  return v?.split(';')[0]?.trim().toLowerCase();
}

function firstType(schema: Json): string | undefined {
  const t = schema.type;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return t.find((x): x is string => typeof x === 'string' && x !== 'null');
  return undefined;
}

/** A query string value as the type its schema names (form style: the text of a number or boolean). */
function coerce(raw: string, type: string | undefined): unknown {
  if ((type === 'number' || type === 'integer') && /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) return Number(raw);
  if (type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true';
  return raw;
}

function describe(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const detail = e.keyword === 'enum' || e.keyword === 'const' ? ` ${JSON.stringify(e.params)}` : '';
    return `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message ?? e.keyword}${detail} [schema ${e.schemaPath.replace(`${DOC_ID}#`, '#')}]`;
  });
}

export function createContract(document: Json): Contract {
  const doc = structuredClone(document);
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
  formatsPlugin.default(ajv);
  ajv.addVocabulary([...DOCUMENT_KEYS, ...OPENAPI_SCHEMA_KEYWORDS]);
  ajv.addSchema(doc, DOC_ID);
  const compile = (pointer: string) => ajv.compile({ $ref: `${DOC_ID}#${fragment(pointer)}` });

  const servers = doc.servers as Array<{ url: string }> | undefined;
  const basePath =
    servers?.[0] === undefined ? '' : new URL(servers[0].url, 'http://x.invalid').pathname.replace(/\/+$/, '');
  const securitySchemes = (at(doc, '/components/securitySchemes') ?? {}) as Record<string, Json>;

  function apiKeyHeadersOf(requirements: unknown): string[] {
    if (!Array.isArray(requirements)) return [];
    const out: string[] = [];
    for (const req of requirements as Array<Record<string, unknown>>) {
      for (const name of Object.keys(req)) {
        const scheme = securitySchemes[name];
        if (scheme?.type === 'apiKey' && scheme.in === 'header' && typeof scheme.name === 'string')
          out.push(scheme.name.toLowerCase());
      }
    }
    return out;
  }

  function mediaOf(contentPointer: string): Media[] {
    const content = at(doc, contentPointer);
    if (content === null || typeof content !== 'object') return [];
    return Object.keys(content as Json).map((mediaType) => {
      const schemaPointer = `${contentPointer}/${escapePointerPart(mediaType)}/schema`;
      return {
        mediaType: mediaType.toLowerCase(),
        validate: at(doc, schemaPointer) === undefined ? undefined : compile(schemaPointer),
      };
    });
  }

  const operations: CompiledOperation[] = [];
  const paths = (doc.paths ?? {}) as Record<string, Json>;
  for (const template of Object.keys(paths)) {
    const itemPointer = `/paths/${escapePointerPart(template)}`;
    for (const method of HTTP_METHODS) {
      const op = paths[template]![method] as Json | undefined;
      if (op === undefined) continue;
      const pointer = `${itemPointer}/${method}`;
      // path-level parameters first, an operation's own of the same name and place replace them
      const byKey = new Map<string, Parameter>();
      for (const listPointer of [`${itemPointer}/parameters`, `${pointer}/parameters`]) {
        const list = at(doc, listPointer);
        if (!Array.isArray(list)) continue;
        list.forEach((_, i) => {
          const { node, pointer: pp } = deref(doc, `${listPointer}/${i}`);
          const schema = node.schema === undefined ? {} : deref(doc, `${pp}/schema`).node;
          byKey.set(`${String(node.in)}:${String(node.name)}`, {
            name: String(node.name),
            in: String(node.in),
            required: node.required === true || node.in === 'path',
            explode: node.explode !== false,
            schema,
            validate: node.schema === undefined ? ajv.compile({}) : compile(`${pp}/schema`),
          });
        });
      }
      let body: CompiledOperation['body'];
      if (op.requestBody !== undefined) {
        const { node, pointer: bp } = deref(doc, `${pointer}/requestBody`);
        body = { required: node.required === true, media: mediaOf(`${bp}/content`) };
      }
      const responses = new Map<string, Media[]>();
      for (const status of Object.keys((op.responses ?? {}) as Json)) {
        const { pointer: rp } = deref(doc, `${pointer}/responses/${escapePointerPart(status)}`);
        responses.set(status, mediaOf(`${rp}/content`));
      }
      const pathNames: string[] = [];
      const source = template
        .split(/(\{[^}]+\})/)
        .map((part) => {
          const m = /^\{([^}]+)\}$/.exec(part);
          if (m) {
            pathNames.push(m[1]!);
            return '([^/]+)';
          }
          return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        })
        .join('');
      operations.push({
        key: `${method.toUpperCase()} ${template}`,
        method: method.toUpperCase(),
        template,
        operationId: typeof op.operationId === 'string' ? op.operationId : undefined,
        pointer,
        statuses: [...responses.keys()],
        regex: new RegExp(`^${source}$`),
        pathNames,
        parameters: [...byKey.values()],
        body,
        responses,
        apiKeyHeaders: apiKeyHeadersOf(op.security ?? doc.security),
      });
    }
  }

  function operationOf(method: string, path: string): CompiledOperation | undefined {
    if (!path.startsWith(`${basePath}/`)) return undefined;
    const rel = path.slice(basePath.length);
    // a template without parameters wins over one whose parameter would match the same segment
    const candidates = operations.filter((o) => o.method === method.toUpperCase() && o.regex.test(rel));
    return candidates.find((o) => o.pathNames.length === 0) ?? candidates[0];
  }

  function checkRequest(ex: Exchange, op: CompiledOperation, problem: (where: string, message: string) => void): void {
    const req = ex.request;
    const rel = req.path.slice(basePath.length);
    const m = op.regex.exec(rel)!;
    for (const header of op.apiKeyHeaders) {
      const v = req.headers[header];
      if (v === undefined || v === '')
        problem(`request.headers.${header}`, 'the API key header the document requires is missing');
    }
    for (const p of op.parameters) {
      if (p.in === 'path') {
        const i = op.pathNames.indexOf(p.name);
        const value = coerce(decodeURIComponent(m[i + 1] ?? ''), firstType(p.schema));
        if (!p.validate(value)) for (const d of describe(p.validate.errors)) problem(`request.path.${p.name}`, d);
        continue;
      }
      if (p.in !== 'query') continue;
      const values = req.query[p.name];
      if (values === undefined) {
        if (p.required) problem(`request.query.${p.name}`, 'required, but not sent');
        continue;
      }
      let value: unknown;
      if (firstType(p.schema) === 'array') {
        const items = (p.schema.items ?? {}) as Json;
        const raw = p.explode ? values : values.flatMap((v) => v.split(','));
        value = raw.map((v) => coerce(v, firstType(items)));
      } else {
        if (values.length > 1)
          problem(`request.query.${p.name}`, `sent ${values.length} times, but it is not an array`);
        value = coerce(values[0]!, firstType(p.schema));
      }
      if (!p.validate(value))
        for (const d of describe(p.validate.errors))
          problem(`request.query.${p.name}`, `${JSON.stringify(value)}: ${d}`);
    }
    const declared = new Set(op.parameters.filter((p) => p.in === 'query').map((p) => p.name));
    for (const name of Object.keys(req.query)) {
      if (!declared.has(name)) problem(`request.query.${name}`, 'not a parameter of this operation');
    }
    if (op.body === undefined) {
      if (req.body !== '') problem('request.body', 'a body was sent, but the operation takes none');
      return;
    }
    if (req.body === '') {
      if (op.body.required) problem('request.body', 'required, but not sent');
      return;
    }
    const mediaType = mediaTypeOf(req.headers['content-type']);
    const media = op.body.media.find((x) => x.mediaType === mediaType);
    if (media === undefined) {
      problem(
        'request.headers.content-type',
        `${String(mediaType)} is not one of ${op.body.media.map((x) => x.mediaType).join(', ')}`,
      );
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(req.body);
    } catch {
      problem('request.body', 'not JSON');
      return;
    }
    if (media.validate && !media.validate(json))
      for (const d of describe(media.validate.errors)) problem('request.body', d);
  }

  function checkAnswer(ex: Exchange, op: CompiledOperation, problem: (where: string, message: string) => void): void {
    const answer = ex.answer;
    if (answer === undefined) {
      problem('response', `no answer: ${ex.error ?? 'unknown'}`);
      return;
    }
    const status = String(answer.status);
    const range = `${status[0]}XX`;
    const listed = op.responses.get(status) ?? op.responses.get(range) ?? op.responses.get('default');
    if (listed === undefined) {
      problem('response.status', `${status} is not listed for this operation (listed: ${op.statuses.join(', ')})`);
      return;
    }
    if (listed.length === 0) return;
    const mediaType = mediaTypeOf(answer.headers['content-type']);
    const media = listed.find((x) => x.mediaType === mediaType);
    if (media === undefined) {
      problem(
        'response.headers.content-type',
        `${String(mediaType)} is not one of ${listed.map((x) => x.mediaType).join(', ')}`,
      );
      return;
    }
    if (!media.validate) return;
    let json: unknown;
    try {
      json = JSON.parse(answer.body);
    } catch {
      problem('response.body', 'not JSON');
      return;
    }
    if (!media.validate(json)) for (const d of describe(media.validate.errors)) problem('response.body', d);
  }

  function check(ex: Exchange): Problem[] {
    const problems: Problem[] = [];
    const op = operationOf(ex.request.method, ex.request.path);
    const problem = (where: string, message: string) =>
      problems.push({ seq: ex.seq, operation: op?.key, where, message });
    if (op === undefined) {
      problem('request', `${ex.request.method} ${ex.request.path} is no operation of the document`);
      return problems;
    }
    checkRequest(ex, op, problem);
    checkAnswer(ex, op, problem);
    return problems;
  }

  const publicOps: Operation[] = operations.map(({ key, method, template, operationId, pointer, statuses }) => ({
    key,
    method,
    template,
    operationId,
    pointer,
    statuses,
  }));
  return { basePath, operations: publicOps, operationOf: (m, p) => operationOf(m, p), check };
}
