// Runs one npm lock library through one scenario of bench/compare.sh and prints one JSON object
// with the same keys as `fencelock bench`:
//
//   node run.mjs --lib node-redlock --url redis://127.0.0.1:PORT --scenario distinct|hot
//                --clients N --duration-ms MS [--lease-ms MS] [--retry-ms MS]
//
// distinct: N async loops, each acquiring and releasing its own resource back to back.
// hot:      N contenders on one resource; each waits for the lock (the library's retry loop),
//           releases it at once and starts wanting it again.
// All loops share one ioredis connection with its default options, as a Node service would.
// Like `fencelock bench`, loops stop when the duration is up; the cycles in flight then finish
// and count, and the rate divides by the time until every loop has stopped.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';

import { LOCKERS, PACKAGES } from './locks.mjs';

const MAX_ERRORS = 1000; // a loop that keeps failing stops instead of spinning

function parseOptions() {
  const { values } = parseArgs({
    options: {
      lib: { type: 'string' },
      url: { type: 'string', default: 'redis://127.0.0.1:6379' },
      scenario: { type: 'string', default: 'distinct' },
      clients: { type: 'string', default: '1' },
      'duration-ms': { type: 'string', default: '5000' },
      'lease-ms': { type: 'string', default: '10000' },
      'retry-ms': { type: 'string', default: '10' },
    },
  });
  const options = {
    lib: values.lib,
    url: values.url,
    scenario: values.scenario,
    clients: Number(values.clients),
    durationMs: Number(values['duration-ms']),
    leaseMs: Number(values['lease-ms']),
    retryMs: Number(values['retry-ms']),
  };
  if (!(options.lib in LOCKERS)) throw new Error(`--lib must be one of ${Object.keys(LOCKERS).join(', ')}`);
  if (!['distinct', 'hot'].includes(options.scenario)) throw new Error('--scenario must be distinct or hot');
  for (const key of ['clients', 'durationMs', 'leaseMs', 'retryMs']) {
    if (!Number.isInteger(options[key]) || options[key] < (key === 'retryMs' ? 0 : 1)) {
      throw new Error(`${key} must be a positive integer`);
    }
  }
  return options;
}

function packageVersion(name) {
  const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return `${name}@${JSON.parse(readFileSync(url, 'utf8')).version}`;
}

// Same rule as `fencelock bench`: the element at floor(p * (n - 1)) of the sorted samples.
function percentile(sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.floor(p * (sorted.length - 1))];
}

function sortedSamples(perLoop) {
  const all = new Float64Array(perLoop.reduce((n, s) => n + s.length, 0));
  let at = 0;
  for (const samples of perLoop) {
    all.set(samples, at);
    at += samples.length;
  }
  return all.sort();
}

const micros = (since) => Math.floor((performance.now() - since) * 1000);

// Counts every command this process sends (commands_sent_per_*). ioredis routes each command,
// scripts included, through sendCommand.
function countCommands(redis) {
  const counter = { commands: 0 };
  const send = redis.sendCommand;
  redis.sendCommand = function (...args) {
    counter.commands += 1;
    return send.apply(this, args);
  };
  return counter;
}

// The server's command counter, which counts the calls scripts make too: `fencelock bench`
// reports commands_per_acquisition this way, so the peers do the same.
async function serverCommands(redis) {
  const info = await redis.info('stats');
  return Number(/^total_commands_processed:(\d+)/m.exec(info)[1]);
}

async function runLoops(options, body) {
  let stopping = false;
  const timer = setTimeout(() => { stopping = true; }, options.durationMs);
  const started = performance.now();
  const loops = Array.from({ length: options.clients }, async (_, index) => {
    const state = { index, samples: [], errors: 0, firstError: undefined };
    while (!stopping && state.errors < MAX_ERRORS) {
      try {
        await body(state);
      } catch (error) {
        state.errors += 1;
        state.firstError ??= String(error?.message ?? error);
      }
    }
    return state;
  });
  const states = await Promise.all(loops);
  clearTimeout(timer);
  const elapsed = (performance.now() - started) / 1000;
  const errors = states.reduce((n, s) => n + s.errors, 0);
  const firstError = states.find((s) => s.firstError)?.firstError;
  return { states, elapsed, errors, firstError };
}

async function distinct(options, locker, counter) {
  const run = await runLoops(options, async (state) => {
    const resource = `fencelock-bench-peer:${state.index}`;
    const t0 = performance.now();
    const held = await locker.acquire(resource);
    await locker.release(held);
    state.samples.push(micros(t0));
  });
  const sorted = sortedSamples(run.states.map((s) => s.samples));
  return {
    scenario: 'distinct',
    clients: options.clients,
    duration_s: run.elapsed,
    cycles: sorted.length,
    cycles_per_sec: sorted.length / run.elapsed,
    p50_us: percentile(sorted, 0.5),
    p99_us: percentile(sorted, 0.99),
    max_us: sorted.length ? sorted[sorted.length - 1] : 0,
    errors: run.errors,
    commands_sent_per_cycle: sorted.length ? counter.commands / sorted.length : null,
    ...(run.firstError ? { first_error: run.firstError } : {}),
  };
}

// wait = from the moment a contender starts wanting the lock until it holds it.
async function hot(options, locker, counter, redis) {
  const resource = 'fencelock-bench-peer:hot';
  const before = await serverCommands(redis);
  counter.commands = 0;
  const run = await runLoops(options, async (state) => {
    const t0 = performance.now();
    const held = await locker.acquire(resource);
    state.samples.push(micros(t0));
    await locker.release(held);
  });
  const sent = counter.commands;
  const after = await serverCommands(redis);
  const perContender = run.states.map((s) => s.samples.length);
  const acquisitions = perContender.reduce((a, b) => a + b, 0);
  const sorted = sortedSamples(run.states.map((s) => s.samples));
  const min = Math.min(...perContender);
  const max = Math.max(...perContender);
  return {
    scenario: 'hot',
    clients: options.clients,
    duration_s: run.elapsed,
    acquisitions,
    handoffs_per_sec: acquisitions / run.elapsed,
    wait_p50_us: percentile(sorted, 0.5),
    wait_p99_us: percentile(sorted, 0.99),
    wait_max_us: sorted.length ? sorted[sorted.length - 1] : 0,
    failed_attempts_per_success: acquisitions ? (locker.attempts - acquisitions) / acquisitions : null,
    // Less the first INFO, which the second one counts.
    commands_per_acquisition: acquisitions ? (after - before - 1) / acquisitions : null,
    commands_sent_per_acquisition: acquisitions ? sent / acquisitions : null,
    fairness: min > 0 ? max / min : null, // null: some contender never got the lock
    acquisitions_min: min,
    acquisitions_max: max,
    errors: run.errors,
    retry_ms: options.retryMs,
    ...(run.firstError ? { first_error: run.firstError } : {}),
  };
}

async function main() {
  const options = parseOptions();
  const redis = new Redis(options.url);
  redis.on('error', (error) => console.error(`ioredis: ${error.message}`));
  try {
    await redis.ping(); // connected and ready before the clock starts
    const counter = countCommands(redis);
    const locker = LOCKERS[options.lib](redis, {
      leaseMs: options.leaseMs,
      retryMs: options.retryMs,
      wait: options.scenario === 'hot',
    });
    const result = options.scenario === 'hot'
      ? await hot(options, locker, counter, redis)
      : await distinct(options, locker, counter);
    result.library = packageVersion(PACKAGES[options.lib]);
    result.client = packageVersion('ioredis');
    result.connections = 1;
    console.log(JSON.stringify(result));
  } finally {
    redis.disconnect();
  }
}

main().catch((error) => {
  console.error(`run.mjs: ${error?.stack ?? error}`);
  process.exit(1);
});
