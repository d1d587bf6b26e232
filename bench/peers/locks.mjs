// The npm lock libraries that bench/compare.sh runs beside fencelock, behind one small interface:
//
//   const locker = LOCKERS[name](redis, { leaseMs, retryMs, wait })
//   const held = await locker.acquire(resource)   // throws when not acquired
//   await locker.release(held)                    // throws when not released
//   locker.attempts                               // acquire attempts sent so far, for all callers
//
// `wait: false` (the distinct scenarios) makes one attempt and fails on contention; `wait: true`
// (the hot scenario) retries with the library's own retry loop until it gets the lock. Every
// library gets the same lease, a fresh random owner value per acquisition (each library makes its
// own), and no automatic extension: fencelock's bench does not renew either.
//
// Retry settings in the hot scenario (documented in bench/README.md):
// - node-redlock and @sesamecare-oss/redlock: retryCount -1 (retry until acquired),
//   retryDelay = retryMs, retryJitter = retryMs / 2. Their default of 200 ms +- 100 ms would cap
//   a hot lock at a few dozen handoffs per second, so we give them the faster setting people use
//   for short critical sections.
// - redis-semaphore Mutex: retryInterval = retryMs (its own default is 10 ms), attempts
//   unlimited (its default) and acquireTimeout one hour, so a contender keeps waiting.
import Redlock from 'redlock';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Mutex } from 'redis-semaphore';

const HOUR_MS = 3_600_000;

// Both redlocks share one API: acquire(resources, duration) resolves to a Lock whose `attempts`
// holds one entry per attempt, the successful one included.
function redlockLocker(RedlockClass, redis, { leaseMs, retryMs, wait }) {
  const redlock = new RedlockClass([redis], {
    retryCount: wait ? -1 : 0,
    retryDelay: retryMs,
    retryJitter: Math.floor(retryMs / 2),
  });
  const locker = {
    attempts: 0,
    async acquire(resource) {
      let lock;
      try {
        lock = await redlock.acquire([resource], leaseMs);
      } catch (error) {
        locker.attempts += error.attempts?.length ?? 1;
        throw error;
      }
      locker.attempts += lock.attempts.length;
      return lock;
    },
    // retryCount 0: a release that finds another owner must fail, not retry forever.
    async release(lock) {
      await redlock.release(lock, { retryCount: 0 });
    },
  };
  return locker;
}

function semaphoreLocker(redis, { leaseMs, retryMs, wait }) {
  const options = {
    lockTimeout: leaseMs,
    acquireTimeout: wait ? HOUR_MS : leaseMs,
    acquireAttemptsLimit: wait ? Number.POSITIVE_INFINITY : 1,
    retryInterval: retryMs,
    refreshInterval: 0, // no automatic extension
  };
  // The Mutex sends one `SET key id PX lease NX` per attempt and nothing else while acquiring,
  // so counting SETs on this client counts its attempts.
  const locker = { attempts: 0 };
  const counting = new Proxy(redis, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === 'set') {
        return (...args) => {
          locker.attempts += 1;
          return value.apply(target, args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  locker.acquire = async (resource) => {
    const mutex = new Mutex(counting, resource, options);
    await mutex.acquire();
    return mutex;
  };
  locker.release = async (mutex) => {
    await mutex.release();
  };
  return locker;
}

export const LOCKERS = {
  'node-redlock': (redis, options) => redlockLocker(Redlock, redis, options),
  'sesame-redlock': (redis, options) => redlockLocker(SesameRedlock, redis, options),
  'redis-semaphore': semaphoreLocker,
};

// The npm package each locker comes from, for the report.
export const PACKAGES = {
  'node-redlock': 'redlock',
  'sesame-redlock': '@sesamecare-oss/redlock',
  'redis-semaphore': 'redis-semaphore',
};
