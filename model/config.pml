/* Sizes of the model, and the seeded bugs (scripts/check-model.sh turns them on with -D).
 * Time is in ticks; one tick is about the shortest failover, so leases, places and the grace
 * are a few ticks each. Everything is small on purpose: each configuration must be searched
 * exhaustively on a 2-core CI machine in seconds. Every size below can be set with -D.
 *
 * Two configurations, because both at once do not fit:
 *   default (failover): two failovers, one call per thread, no clock drift, lease 2;
 *   -DLINE: no failover, two calls of thread 0 (so it can come back and queue behind the
 *           fair line, or take the lock from a waiter whose grant lapsed), drift 1, lease 3. */

#ifdef LINE
#define CFG_H 6
#define CFG_MAXFO 0
#define CFG_ACQS0 2
#define CFG_L 3
#define CFG_DRIFT 1
#else
#define CFG_H 5
#define CFG_MAXFO 2
#define CFG_ACQS0 1
#define CFG_L 2
#define CFG_DRIFT 0
#endif

#ifndef H
#define H      CFG_H      /* horizon: time stops at tick H */
#endif
#ifndef MAXFO
#define MAXFO  CFG_MAXFO  /* failovers; two let a master come back (A -> B -> A, finding 1) */
#endif
#ifndef ACQS0
#define ACQS0  CFG_ACQS0  /* acquire() calls of thread 0: a fresh owner token each */
#endif
#ifndef ACQS1
#define ACQS1  1          /* and of thread 1 */
#endif
#ifndef L
#define L      CFG_L      /* the lease, and what a renewal asks for */
#endif
#ifndef DRIFT
#define DRIFT  CFG_DRIFT  /* Redis's clock may run fast: a key may vanish DRIFT ticks early */
#endif
#ifndef SLOT
#define SLOT   2          /* a place in the line lasts SLOT ticks after its waiter's last attempt */
#endif
#ifndef D
#define D      1          /* a failover takes at least D ticks (down-after plus the election) */
#endif
#ifndef SKEW
#define SKEW   0          /* one server's clock may run up to SKEW ticks ahead; below D, as
                             "Fences across failover" assumes */
#endif
#ifndef K
#define K      4          /* fence clock term = K * server clock: K is more than the grants
                             one tick can hold ("far fewer than one per microsecond") */
#endif
#define NT     2                    /* threads: two clients, or two threads of one client */
#define NO     (1 + ACQS0 + ACQS1)  /* owner tokens 1..NO-1; 0 is "none" */
#define ANCIENT (-10)               /* since when the first master has been master */

/* safe_until = send + ttl - MARGIN: the client's drift allowance (clock_drift_factor). */
#ifdef BUG_NO_DRIFT_MARGIN
#define MARGIN 0
#else
#define MARGIN DRIFT
#endif

/* The failover grace covers the longest lease (DESIGN.md, "The failover grace"). */
#ifdef BUG_NO_GRACE
#define GRACE  0
#else
#define GRACE  L
#endif

/* Seeded bugs, each where the rule it breaks is modelled:
 *   BUG_OLDEST_SENTINEL_AGE  the grace takes the oldest age any sentinel naming the master
 *                            reports, "every answer errs late" (finding 1)
 *   BUG_UNBOUNDED_OWN_GRANT  a grant to a waiter of the releasing client is the whole lease,
 *                            not bounded by the waiter's place (finding 7)
 *   BUG_VOUCH_ANY            the release vouches for its client's other thread whether or not
 *                            it still waits (it may have given up, its leave_line lost)
 *   BUG_NO_CLOCK_TERM        fence = counter + 1, a plain INCR
 *   BUG_NO_GRACE             the promoted master grants at once
 *   BUG_TRUST_STALE_GRANT    a grant message is trusted without comparing its fence with the
 *                            one the waiter's last refused attempt saw (check (a))
 *   BUG_NO_DRIFT_MARGIN      safe_until = send + ttl, no drift allowance
 * Switches that narrow a search to one story:
 *   SENTINEL_CLOCKS_STAY     no sentinel's wall clock steps forward, so the only too-old
 *                            answer left is a sentinel cut off through A -> B -> A
 *   STORE_CHECK_ONLY         no check at the grant, so only the store's check of the grant
 *                            order can catch a fence that went back */
