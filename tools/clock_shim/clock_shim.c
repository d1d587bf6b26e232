// A test tool: LD_PRELOAD this library into a process (redis-server, a sentinel) to skew or
// step its wall clock while it runs. libfaketime hangs redis-server 7.0.15 at start, so the
// suite carries this small shim of its own.
//
// FENCELOCK_CLOCK_FILE names a file whose first 8 bytes are a signed offset in microseconds
// (native byte order). The file is mapped shared, so a test that writes a new offset changes
// the process's wall clock at once: a step, or a skew when written before the server starts.
// Only the wall clock moves (CLOCK_REALTIME and its coarse variant, gettimeofday, time):
// CLOCK_MONOTONIC stays true, as it does when chrony or an operator steps a real clock.
// Without the variable, or with an unreadable file, every call passes through unchanged.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);

static const volatile int64_t no_offset = 0;
static const volatile int64_t* offset_us;  // set once; points at no_offset when unmapped

static const volatile int64_t* offset(void) {
    const volatile int64_t* p = __atomic_load_n(&offset_us, __ATOMIC_ACQUIRE);
    if (p != NULL) return p;
    const volatile int64_t* mapped = &no_offset;
    const char* path = getenv("FENCELOCK_CLOCK_FILE");
    if (path != NULL) {
        const int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            void* m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (m != MAP_FAILED) mapped = (const volatile int64_t*)m;
        }
    }
    const volatile int64_t* expected = NULL;
    // Two threads racing here map the file twice; the loser's mapping stays, harmlessly.
    if (!__atomic_compare_exchange_n(&offset_us, &expected, mapped, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return expected;
    return mapped;
}

static int real_clock_gettime(clockid_t id, struct timespec* ts) {
    static clock_gettime_fn real;
    clock_gettime_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (fn == NULL) {
        fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn(id, ts);
}

static void shift(struct timespec* ts) {
    const int64_t us = *offset();
    int64_t ns = (int64_t)ts->tv_nsec + (us % 1000000) * 1000;
    time_t s = ts->tv_sec + (time_t)(us / 1000000);
    if (ns < 0) {
        ns += 1000000000;
        s -= 1;
    } else if (ns >= 1000000000) {
        ns -= 1000000000;
        s += 1;
    }
    ts->tv_sec = s;
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t id, struct timespec* ts) {
    const int rc = real_clock_gettime(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts);
    return rc;
}

int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
    (void)tz;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
    return 0;
}

time_t time(time_t* out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}
