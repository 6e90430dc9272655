/**
 * `videosite-ingest simulator`: run the embedded upstream simulator until SIGINT/SIGTERM.
 * stdout gets one line saying where it listens; logs go to stderr.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig, SIMULATOR_DEV_API_KEY } from '../config.ts';
import { createLogger, loggingFor } from '../log.ts';
import { DEFAULT_SIMULATOR_HOST, DEFAULT_SIMULATOR_PORT, type SimulatorSettingsInput } from '../simulator/options.ts';
import { startSimulator } from '../simulator/server.ts';
import { intArg, numberArg, parseDurationMs } from './args.ts';
import { serveUntilSignal } from './serve-until-signal.ts';

export interface SimulatorFlags {
  port: number;
  host: string;
  seed?: number;
  platform?: string;
  apiKey?: string;
  channels?: number;
  channelSizes?: number[];
  transcriptChunks?: number;
  itemsPerSecond?: number;
  queued?: number;
  jobLifetime?: number;
  retention?: number;
  latencyMs?: number;
  errorRate?: number;
  badGatewayRate?: number;
  resetRate?: number;
  truncateRate?: number;
  schemaViolationRate?: number;
  clockSpeed?: number;
  rateLimit?: number;
}

function platformArg(value: string): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(value)) {
    throw new InvalidArgumentError('expected a path segment of lowercase letters, digits and dashes.');
  }
  return value;
}

function sizesArg(value: string): number[] {
  const parse = intArg(0, 100_000);
  return value.split(',').map((s) => parse(s.trim()));
}

const rate = numberArg(0, 1);

/** The simulator options a set of flags asks for (the key comes from the flag or the environment). */
export function simulatorOptionsFromFlags(flags: SimulatorFlags, envApiKey: string): SimulatorSettingsInput {
  const catalog: NonNullable<SimulatorSettingsInput['catalog']> = {};
  if (flags.channels !== undefined) catalog.channels = flags.channels;
  if (flags.channelSizes !== undefined) catalog.channelSizes = flags.channelSizes;
  if (flags.transcriptChunks !== undefined) {
    // a spread of about 10% around the asked size, so transcripts are not all alike
    const n = flags.transcriptChunks;
    catalog.transcriptChunks = { min: Math.max(1, Math.floor(n * 0.9)), max: Math.max(1, Math.ceil(n * 1.1)) };
  }
  const jobs: NonNullable<SimulatorSettingsInput['jobs']> = {};
  if (flags.itemsPerSecond !== undefined) jobs.itemsPerSecond = flags.itemsPerSecond;
  if (flags.queued !== undefined) jobs.queuedMs = flags.queued;
  if (flags.jobLifetime !== undefined) jobs.lifetimeMs = flags.jobLifetime;
  if (flags.retention !== undefined) jobs.retentionMs = flags.retention;
  const faults: NonNullable<SimulatorSettingsInput['faults']> = {};
  if (flags.errorRate !== undefined) faults.errorRate = flags.errorRate;
  if (flags.badGatewayRate !== undefined) faults.badGatewayRate = flags.badGatewayRate;
  if (flags.resetRate !== undefined) faults.resetRate = flags.resetRate;
  if (flags.truncateRate !== undefined) faults.truncateRate = flags.truncateRate;
  if (flags.schemaViolationRate !== undefined) faults.schemaViolationRate = flags.schemaViolationRate;
  const out: SimulatorSettingsInput = {
    port: flags.port,
    host: flags.host,
    apiKey: flags.apiKey ?? envApiKey,
    catalog,
    jobs,
    faults,
  };
  if (flags.seed !== undefined) out.seed = flags.seed;
  if (flags.platform !== undefined) out.platform = flags.platform;
  if (flags.latencyMs !== undefined) out.latencyMs = flags.latencyMs;
  if (flags.clockSpeed !== undefined) out.clockSpeed = flags.clockSpeed;
  if (flags.rateLimit !== undefined) {
    out.rateLimit = { requestsPerSecond: flags.rateLimit, burst: Math.max(1, Math.ceil(flags.rateLimit)) };
  }
  return out;
}

export function registerSimulatorCommand(program: Command): void {
  program
    .command('simulator')
    .summary('run the embedded upstream simulator (every endpoint, synthetic catalog, faults)')
    .description(
      'Run the embedded upstream simulator: every endpoint of the API over a deterministic synthetic ' +
        'catalog, batch jobs on a controllable clock, accounts with credits, and fault injection. ' +
        `The documented development key ${SIMULATOR_DEV_API_KEY} (plan pro) is accepted unless --api-key ` +
        'or SIMULATOR_API_KEY names another. The admin API (no key) lives under /__admin/: catalog, clock, ' +
        'faults, script, stats, accounts/{key}, jobs, videos/{id} (GET; POST edits it: metadata, transcript languages and revisions, fate).',
    )
    .option('--port <n>', 'port to listen on (0 = any free port)', intArg(0, 65_535), DEFAULT_SIMULATOR_PORT)
    .option('--host <host>', 'interface to listen on', DEFAULT_SIMULATOR_HOST)
    .option('--seed <n>', 'seed of the synthetic catalog (default 1)', intArg(0, 2 ** 32 - 1))
    .option('--platform <segment>', 'platform path segment (default videosite)', platformArg)
    .option('--api-key <key>', 'the API key to accept instead of the development key (never printed)')
    .option('--channels <n>', 'number of channels (default 3)', intArg(0, 1000))
    .option('--channel-sizes <list>', 'exact regular-video counts of the first channels, e.g. 300,5000', sizesArg)
    .option(
      '--transcript-chunks <n>',
      'about this many chunks per transcript (default 3..12; 150 for ~20 KB)',
      intArg(1, 10_000),
    )
    .option(
      '--items-per-second <n>',
      'batch items finished per simulated second (default 100)',
      numberArg(0.001, 1_000_000),
    )
    .option('--queued <duration>', 'time a new batch stays queued, e.g. 1s (default 1s)', parseDurationMs)
    .option('--job-lifetime <duration>', 'unfinished batches expire after this, e.g. 1h (default 1h)', parseDurationMs)
    .option('--retention <duration>', 'results are kept this long after a batch ends (default 24h)', parseDurationMs)
    .option('--latency-ms <n>', 'delay before every answer, ms (default 0)', intArg(0, 600_000))
    .option('--error-rate <r>', 'share of requests answered 500, 0..1 (default 0)', rate)
    .option('--bad-gateway-rate <r>', 'share of requests answered 502 with HTML, 0..1 (default 0)', rate)
    .option('--reset-rate <r>', 'share of requests handled, then reset without answer, 0..1 (default 0)', rate)
    .option('--truncate-rate <r>', 'share of answers cut short, 0..1 (default 0)', rate)
    .option('--schema-violation-rate <r>', 'share of 2xx answers that break their schema, 0..1 (default 0)', rate)
    .option('--clock-speed <f>', 'simulated seconds per real second (default 1)', numberArg(0, 1_000_000))
    .option('--rate-limit <n>', 'requests per second allowed per key (default 1000)', numberArg(0.001, 1_000_000))
    .action(async (flags: SimulatorFlags) => {
      const config = loadConfig();
      const log = createLogger({ ...loggingFor(config, { longRunning: true }), name: 'simulator' });
      await serveUntilSignal(
        async () => {
          const sim = await startSimulator({
            ...simulatorOptionsFromFlags(flags, config.simulatorApiKey),
            logger: log,
          });
          // the development key is public and documented; any other key is the user's secret
          const shownKey = sim.apiKey === SIMULATOR_DEV_API_KEY ? sim.apiKey : '(as configured, not shown)';
          process.stdout.write(
            `simulator listening on ${sim.baseUrl} (platform ${sim.platform}, api key ${shownKey})\n`,
          );
          return sim;
        },
        (signal) => log.info({ event: 'simulator.stopping', signal }, 'simulator stopping'),
      );
    });
}
