/**
 * OpenTelemetry traces, on only when OTEL_EXPORTER_OTLP_ENDPOINT is set (`config.tracing`).
 *
 * Off, nothing but `@opentelemetry/api` is loaded: its global tracer is a no-op whose spans cost a
 * few allocations, and the SDK and the exporter are never imported (the dynamic `import()` in
 * `startTracing` is the only reference to them; test/integration/tracing.test.ts checks it). On,
 * `startTracing` registers a NodeTracerProvider (AsyncLocalStorage context, W3C traceparent
 * propagation) that sends batches of spans to the collector over OTLP/HTTP JSON; the exporter
 * reads OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS and the rest of the standard
 * variables itself.
 *
 * The pipeline wraps its steps in `withSpan`; a job queued for another process carries the
 * trace's `traceparent` in its data (`traceCarrier`, the optional `trace` field of the payloads),
 * and the worker runs it under `withTraceParent`, so that a batch submitted by `backfill` and
 * polled by a daemon is one trace. No span attribute is ever a secret: the API key, headers and
 * query strings are never recorded (src/api/http.ts records the path only).
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';

import { setLogLineFields } from './log.ts';

export { SpanKind, type Attributes, type Span };

/** The instrumentation scope of every span of this program. */
export const TRACER_NAME = 'videosite-ingest';

export interface TracingSettings {
  endpoint: string;
  serviceName: string;
}

interface Provider {
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

let provider: Provider | undefined;

/** Whether spans are recorded and exported (startTracing ran). */
export function tracingOn(): boolean {
  return provider !== undefined;
}

/**
 * Load the SDK and the exporter and register them globally. Call once, before the command runs;
 * `settings` undefined (OTEL_EXPORTER_OTLP_ENDPOINT unset) does nothing and imports nothing.
 */
export async function startTracing(settings: TracingSettings | undefined): Promise<void> {
  if (settings === undefined || provider !== undefined) return;
  const [node, base, otlp, resources, semconv] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const p = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: settings.serviceName }),
    spanProcessors: [new base.BatchSpanProcessor(new otlp.OTLPTraceExporter())],
  });
  p.register();
  provider = p;
  setLogLineFields(traceLogFields);
}

/** Export what is buffered and stop; bounded, a collector that does not answer cannot hold the exit. */
export async function shutdownTracing(timeoutMs = 5_000): Promise<void> {
  const p = provider;
  if (p === undefined) return;
  provider = undefined;
  setLogLineFields(undefined);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    p.shutdown().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

export function tracer() {
  return trace.getTracer(TRACER_NAME);
}

/** The error's class only: a message may quote a URL or a body. */
function markFailed(span: Span, e: unknown): void {
  const type = e instanceof Error ? e.name : typeof e;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/**
 * Run `fn` in a span named `name`, a child of the active one; the span ends when `fn` settles,
 * marked failed (the error's class, not its message) when it throws.
 */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  opts: { kind?: SpanKind; root?: boolean } = {},
): Promise<T> {
  const options = { attributes, kind: opts.kind ?? SpanKind.INTERNAL, root: opts.root ?? false };
  return tracer().startActiveSpan(name, options, async (span) => {
    try {
      return await fn(span);
    } catch (e: unknown) {
      markFailed(span, e);
      throw e;
    } finally {
      span.end();
    }
  });
}

/** The W3C trace context a queued job carries (the `trace` field of its payload). */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string | undefined;
}

/** The active trace as a job's `trace` field; undefined when tracing is off or no span is active. */
export function traceCarrier(): TraceCarrier | undefined {
  if (!tracingOn()) return undefined;
  const c: Record<string, string> = {};
  propagation.inject(context.active(), c);
  if (c.traceparent === undefined) return undefined;
  return c.tracestate === undefined
    ? { traceparent: c.traceparent }
    : { traceparent: c.traceparent, tracestate: c.tracestate };
}

/** `{ trace }` to spread into a job's data, or nothing. */
export function traceField(): { trace?: TraceCarrier } {
  const t = traceCarrier();
  return t === undefined ? {} : { trace: t };
}

/** Run `fn` with the trace a job carried as its parent (none: the active context). */
export function withTraceParent<T>(carrier: TraceCarrier | undefined, fn: () => Promise<T>): Promise<T> {
  if (carrier === undefined || !tracingOn()) return fn();
  return context.with(propagation.extract(ROOT_CONTEXT, carrier), fn);
}

/** pino's `mixin` while tracing is on: the active span's IDs on every log line. */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (span === undefined) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** Attributes on the active span (none: nothing). */
export function setSpanAttributes(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}
