#!/usr/bin/env python3
"""Builds docs/RELIABILITY.md from the fault suite's FAULT-SUMMARY lines.

Usage: scripts/reliability.py BUILD_DIR [OUTPUT]   (runs `ctest -L faults` in BUILD_DIR)
Every figure in the document comes from that run; nothing is typed in by hand.
"""
import datetime
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What each scenario injects and what must hold; the figures come from the run.
SCENARIOS = {
    "holder_paused_3x": ("A holder process is frozen with SIGSTOP for 3x its lease; another takes over and writes; the first wakes and writes.",
                         "The late write is rejected as stale."),
    "db_write_delayed_past_takeover": ("A holder's write is held on its way to the database (a fault proxy in front of PostgreSQL, a gate in front of SQLite and the file register) until its lease expired and another holder took over and wrote; then it arrives.",
                                       "The delayed write is rejected as stale; the new holder's append stays."),
    "release_delayed_past_takeover": ("The release of an expired holder reaches Redis only after another owner took the lock.",
                                      "The late release answers not_owner; the new owner's lease stays intact."),
    "renewal_delayed_past_takeover": ("A holder's renewal is delayed (proxy) past its lease; another owner takes over.",
                                      "The renewal answers not_owner, the lease is lost, the late write is rejected."),
    "redis_paused_half_lease": ("Redis is frozen for half the lease.", "The keeper rides it out: the lease is not lost."),
    "redis_paused_3x_lease": ("Redis is frozen for 3x the lease while a holder works.",
                              "The lease is lost (stop token fires); a write after the loss is rejected."),
    "redis_restart_no_persistence": ("Redis restarts with an empty dataset: the fence counter is gone.",
                                     "The next fence follows Redis TIME, above every earlier one: its write is accepted at once, nothing stale."),
    "acquire_reply_lost": ("The reply to an acquisition is dropped by the proxy.",
                           "A retry with the same owner token recovers the lease and its fence; the counter moves once."),
    "redis_unavailable": ("Redis refuses connections, cuts them, or is killed.", "Acquisition fails closed: no lease, no write."),
    "cpu_starvation": ("Busy threads on every core while several holders work.", "No violation; renewals stay in time."),
    "contention_storm": ("50 operations on one resource from 8 threads, each acquiring with backoff.",
                         "No overlap, fences strictly increasing, every operation completes."),
    "worker_killed_after_acquire": ("A queue worker process is SIGKILLed right after its lease was granted; a second worker drains the queue.",
                                    "The lease expires, the entry is reclaimed, the job completes once. Off: a lease that outlives the crash (10 min) - the job never completes within the bound."),
    "worker_killed_mid_mutation": ("A queue worker process is SIGKILLed inside the job's transaction, after its effect, before COMMIT.",
                                   "The database rolls the effect back; the redelivered job applies it once. Off: the effect commits on its own first - it is applied twice."),
    "worker_killed_after_commit": ("A queue worker process is SIGKILLed after the commit, before the acknowledgement.",
                                   "The redelivered job is a duplicate by its idempotency key; one effect. Off: the handler deletes its key - the job runs twice."),
    "failover_lost_writes": ("Master + replica + 3 sentinels (down-after 1 s): replication cut, more ownerships on the master (their fences are lost), holder X acquires and stalls; master SIGKILLed, replica promoted; new holders acquire there and write; X writes late with its pre-failover fence; the old master restarts without persistence and a holder acquires and writes there while it is an empty master.",
                             "Every fence issued after the promotion, and by the empty master, is above every fence issued before: X's write is rejected, the first write after the promotion is accepted, no fence is issued twice, a lease that reached the replica keeps excluding. Off: fences from `SET NX PX` + `INCR` (the store still checks fences) - the counter goes back, fences are issued twice, X's older lease writes after a newer one's."),
    "cluster_failover_lost_writes": ("The same failover on a Redis Cluster of its own (3 masters, one replica each, node timeout 1 s): the master of the scenario's slot has its replica's link cut, then is SIGKILLed; the cluster promotes the replica; X writes late with its pre-failover fence.",
                                     "The same checks as the Sentinel failover: every fence issued after the promotion is above every fence issued before, X's write is rejected, the first write after the promotion is accepted. Off: `SET NX PX` + `INCR` fences - the counter goes back, fences are issued twice, a stale write is accepted."),
    "queue_contention_storm": ("50 queue jobs on one record, 8 worker threads, one lock attempt per delivery, requeue on contention.",
                               "Accepted fences strictly increase, no overlap, one append per job, every job acknowledged. Off: a lock per job instead of per record, store fencing off."),
}

BACKENDS = ["file", "sqlite", "postgres"]
BACKEND_NOTE = ("Backends: `file` is the in-test fenced register the checker was first built against; `sqlite` and "
                "`postgres` are the real `FencedStore`, where every write is one guarded transaction that also appends "
                "to a log table (`fault_accepted`), so the accepted-writes log comes from the database, committed with "
                "the write or not at all; the negative control sets `StoreOptions::enforce_fencing = false`. Every "
                "scenario runs on SQLite; PostgreSQL runs those where the store decides the outcome (holder paused, DB "
                "write delayed, Redis restart, both storms, the three kills); the lock-protocol scenarios (release, "
                "renewal, Redis paused, lost reply, Redis down, starvation) run on the file register and SQLite only. "
                "Queue scenarios need a FencedStore and skip the file register. The failover scenario runs on both stores; its "
                "negative control keeps the store's fence check and swaps the fence source instead.")

FAILURE_MODEL = """## Failure model

fencelock is designed to stay safe under: worker pauses of any length (GC, SIGSTOP, CPU
starvation), worker crashes at any point of a job, lost or delayed requests and replies (to
Redis and to the database), Redis pauses, restarts and unavailability (it fails closed), and
clock-rate drift within `clock_drift_factor`, on one Redis master with `maxmemory-policy
noeviction` (checked on every connection: any other policy is refused).

What it does **not** protect against:
- A target that cannot check a fence (an email, a third-party API without conditional writes):
  fencing cannot reject a stale call there. Use idempotency keys, an outbox or a mediator.
- Servers whose clocks disagree by more than the failover time. A fence is max(counter + 1,
  Redis TIME in us), so a failover that loses the last increments, or a restart without
  persistence, still issues fences above every earlier one (the failover and restart scenarios
  measure this) provided the promoted server's clock is not behind the old master's by more
  than the failover took. A grant whose counter leads the server's clock by more than 1 s is
  logged and counted (`fencelock_clock_behind_total`), so such a lag is seen, not prevented.
  The lease itself is not linearizable under asynchronous replication: a lease that had not
  reached the replica can be granted again after a failover (Sentinel's failover grace waits
  it out; Cluster has none); the fence is what keeps the data safe.
- Server clocks that step instead of slewing. Redis expires keys by its wall clock, so a forward
  step ends every lease early; the keeper notices within about a second on a single server or a
  Sentinel master (a step on Cluster at the next renewal) and stops the holders, but a second
  holder may already have been granted meanwhile: the fence keeps the data safe.
- Two stores written under one fence without a shared transaction: each store checks the fence
  on its own; make one of them the source of truth.
- Code that ignores the stop token and keeps writing to an unfenced side channel.
- Read-modify-write with a plain read: a fenced *write* alone does not stop an older holder's
  write that lands between a newer holder's read and its write; use `claim` or `transact`
  (docs/STORE.md).
"""

# Holes a hostile review reproduced against real servers, each closed with a regression test
# that failed before its fix (what it printed then is the "before" column).
HARDENING = """## Safety regressions

Each row is a hole a hostile review of the single-server product reproduced against a real
redis-server or PostgreSQL, and the regression test that failed before the fix and passes now
(ctest names; `-R` selects one).

| hole | regression test | before the fix | after |
|---|---|---|---|
| eviction deleted fence counters and leases | `EvictionTest.*`, `QueueEvictionTest.*`, `CliTest.AnEvictingRedisIsRefusedWithExitFourNamingThePolicy`, `Handshake.*` | connections served allkeys-lru / volatile-lru servers | every policy but noeviction refused in the handshake, message names it, exit 4, Redis unchanged |
| NUL / invalid UTF-8 names on PostgreSQL | `Backends/TextTest.*`, `Redis/EnqueueTextTest.*`, store and queue CLI bad-input tests | `write R\\0x` accepted into row `R`; `k\\0a`, `k\\0b` one key | refused as `invalid_input` before any write, same on SQLite and PostgreSQL |
| loss reported after the command timeout | `LateLoss.LossFiresAtSafeUntilWhileARenewalIsStuckForTheWholeCommandTimeout`, `LateLoss.RunSignalsItsCommandBeforeACompetitorCanAcquire` | loss 5335 ms into a stall of a 1 s lease, competitor acquired at 1004 ms | loss at 898 ms, competitor at 1000 ms; run's command signalled before the competitor acquired |
| command outlived a killed `run` / `worker` | `RunTest.SigkillOfFencelockKillsCmdAtOnce`, `...KillsCmdsWholeGroup`, `...SigusrToFencelockIsForwarded...`, `RunTest.EveryTerminatingSignalIsForwardedToCmd`, `Backends/QueueCliTest.KilledWorkerTakesItsHandlersDown/*` | command and its children kept running; SIGUSR1 killed run | command group gone within 100 ms; every terminating signal forwarded |
| transact lowered last_fence | `Backends/TransactEndedTest.*` | COMMIT in a mutation: reported committed, last_fence 9 -> 5, stale fence 7 accepted | `transaction_broken`, last_fence unchanged, the stale write rejected |
| fences above 2^53 collided | `ScriptSafetyTest.FencesReach2To53Minus1Exactly...`, `...CountersPast2To53AreRefused...` | two owners got 9007199254740996 | exact fences up to 2^53 - 1 (JSON-safe), then refused with nothing written |\n| fences went backwards after losing Redis writes | `FenceClockTest.*` (restart without persistence, counter set back), failover scenario | fence 1 after a restart; 11-15 issued twice after a failover | a fence is max(counter + 1, Redis TIME in us): above every fence issued before |
| max hold did not bound holding | `ScriptSafetyTest.ARenewalAskingForAnyLeaseNeverOutlivesMaxHoldPlusTheGrantedLease` | renewal under a 2 s max hold set a 20 h TTL | TTL capped at acquired + max hold + granted lease |
| lock without TTL, unchecked arguments | `ScriptSafetyTest.OutOfRangeArgumentsAreRefusedBeforeAnyWrite`, `Limits.*`, `CliTest.BadInputExitsTwoAndChangesNothing` | lease 1e17 ms wrote `lease_ms 1e+17` and no TTL | every argument checked before any write; CLI exit 2 past the documented bounds |
| leave_line named a lapsed waiter | `ScriptSafetyTest.LeaveLineNamesTheFirstLiveWaiterNotALapsedOne` | message named the lapsed place | one live-waiter rule for acquire, release and leave_line |
| failed acquire removed the fair head's place | `ScriptSafetyTest.AFailedAcquireKeepsTheFairHeadsPlace`, `...CorruptCountersFailWithNothingChanged` | the head's place was gone | Redis snapshot unchanged |
| durations wrapped the clock | `ParseDuration.LongestDurationIsAYear`, `CliTest.BadInputExitsTwoAndChangesNothing` | `--wait 10000000h` gave up after one attempt | refused as input (exit 2) |
| second review: COMMIT, stale write, BEGIN inside a mutation | `Backends/TransactEndedTest.StatementsThatEndOrRestartTheTransactionAreRefusedBeforeTheyRun/*` | transact(10) reported committed with the stale fence-7 value | statements that end or restart the transaction refused before they run; state checked after every statement |
| second review: SQLite ran the first of several statements | `Backends/TransactEndedTest.SeveralStatementsInOneCallAreRefusedOnBothBackends/*` | half the mutation silently lost on SQLite | refused on both backends, nothing changed |
| second review: a line key of the wrong type | `ScriptSafetyTest.ALineKeyOfTheWrongTypeFailsEveryScriptWithNothingChanged` | a fence burned with no lease; half a place; released, then failed | type-checked by reads before the first write |
| second review: on_lost after release() returned; release() blocked by a stuck renewal | `LateLoss.OnLostNeverRunsAfterReleaseReturned`, `LateLoss.ReleaseDoesNotWaitForAStuckRenewal` | on_lost ran after release() returned; release waited up to the command timeout | release waits for running loss callbacks only, never for the network |
| second review: CMD's children outlived CMD and the lease | `RunTest.WhatIsLeftOfCmdsGroupDiesBeforeTheLeaseIsReleased` | left running, reported as stragglers | killed before the lease is released |
| password fragments in messages | `SecretTest.PostgresPasswordNeverReachesTheOutput`, `DatabaseUrl.RedactedHidesEveryByteOfThePassword` | a password with `@` broke the URL and libpq printed part of it | own URL parser, libpq keyword/value pairs, every message scrubbed |
"""


# Regression scenarios of the hostile review's findings (safety round 3) that live outside the
# summary table: the fault suite's own print their figures below; the others run in the
# integration, Sentinel and Cluster suites against real servers.
REGRESSIONS = [
    ("LateLoss.ACommandIgnoringSigtermIsGoneBeforeACompetitorCanAcquire (faults)",
     "`run --lease 8s --grace 2s` whose command ignores SIGTERM and writes a tick every 20 ms; its renewals stall (proxy).",
     "The command's last tick comes before the competitor's grant (SIGKILL at safe-until)."),
    ("RunClockTest.AForwardStepOfTheServersClockStopsTheCommandBeforeTheNextHolderStarts (integration)",
     "redis-server's wall clock steps 120 s forward (clock shim) under `run --lease 30s`.",
     "The command is gone within 2.5 s (`loss_reason` clock_step); a second run then acquires."),
    ("ClusterKeeper.AForwardStepOfOneMastersClockLosesOnlyItsLeasesAtOnce (cluster)",
     "One master of a 3-master cluster steps its wall clock 120 s forward (clock shim) while a 30 s lease is kept on each.",
     "That master's lease is lost as clock_step before its first renewal; the other two are kept."),
    ("KeeperClockTest.ARenewalsReplyAheadOfTheLastReadingLosesEveryLeaseOnThatServerAtOnce (integration)",
     "The server's wall clock steps 120 s forward while a 300 ms and a 60 s lease are kept; clock probes every 10 min only.",
     "The short lease's renewal reply (server TIME) calls for a probe: the 60 s lease is lost as clock_step."),
    ("FenceClockTest.AGrantOnAServerWhoseClockSteppedBackSaysHowFarBehindItIs (integration)",
     "The server's clock steps 60 s back after a grant.",
     "The next grant reports the clock 59-61 s behind its counter (redis_clock_behind, fencelock_clock_behind_total)."),
    ("FailoverGrace.ASentinelWhoseClockSteppedForwardCannotShortenTheGrace (sentinel)",
     "A failover that loses a lease; the sentinel the client asks first then steps its clock 60 s forward.",
     "The new master still refuses inside the grace (youngest age of a majority), and grants after the lost lease ran out."),
    ("ClusterFailover.OnlyAReplicatedLeaseSurvivesAMasterFailover (cluster)",
     "A cluster master with an unreplicated and a replica-acknowledged lease is killed; its replica is promoted.",
     "The unreplicated lease is granted again at once (Cluster has no grace: documented); the acknowledged one is refused to others."),
    ("RunTreeTest.* (integration)",
     "Processes outside the command's group: GNU timeout's child, a `set -m` job, a setsid orphan of a double fork.",
     "Each is gone at lease loss, at the command's exit and when fencelock is SIGKILLed."),
    ("DirectHandoffTest.AGrantToAWaiterOfTheReleasingClientIsBoundedByItsPlaceToo (integration)",
     "A waiter of the releasing client with a 1.5 s place and a 60 s lease is granted the lock by that client's release.",
     "The grant ends with the waiter's place, not a whole lease later."),
]


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def value(v):
    return json.dumps(v) if isinstance(v, bool) else str(v)


def figures(data):
    skip = {"scenario", "backend", "fencing", "protection", "violations", "stale_accepted", "topology"}
    return ", ".join(f"{k}={value(v)}" for k, v in data.items() if k not in skip and not k.startswith("v_"))


def caught(data):
    """Which properties found the negative control's violations."""
    found = [f"{k[2:]}={v}" for k, v in data.items() if k.startswith("v_") and v]
    return ", ".join(found) if found else "nothing"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    output = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "RELIABILITY.md")
    started = time.monotonic()
    run = subprocess.run(["ctest", "-L", "faults", "-V", "-j2"], cwd=build, capture_output=True, text=True)
    wall = time.monotonic() - started
    lines = [l.split("FAULT-SUMMARY ", 1)[1] for l in run.stdout.splitlines() if "FAULT-SUMMARY " in l]
    results = {}
    for line in lines:
        data = json.loads(line)
        results[(data["scenario"], data.get("backend", "file"), data["fencing"])] = data
    summary = [l.strip() for l in run.stdout.splitlines() if "tests passed" in l]
    commit = git("rev-parse", "--short", "HEAD")
    dirty = " plus uncommitted changes in the working tree" if git("status", "--porcelain", "--untracked-files=no") else ""
    today = datetime.date.today().isoformat()

    out = ["# Reliability: fault scenarios and what they measured", "",
           f"Generated by `scripts/reliability.py` from a run of the fault suite (`ctest -L faults -j2`) on {today}, "
           f"commit `{commit}`{dirty}. Suite result: {summary[0] if summary else 'unknown'} "
           f"(wall time {wall:.0f} s on {os.cpu_count()} cores).", "",
           "Every scenario runs twice per backend: with the protection on (the history checker must find no violation) "
           "and as a **negative control** with it off (the checker must find at least one, which proves it can). The "
           "checker verifies: accepted fences strictly increase per resource; no two lease holders overlap; the final "
           "state equals exactly the acknowledged writes; one effect per idempotency key; every operation (and every "
           "queue job, enqueue to acknowledgement) completes within a bound. Where the fence source itself is under test "
           "(the failover), also: no fence issued to two acquisitions (`unique_fence`), and no write of an older lease "
           "accepted after a newer lease's write, leases ordered by when they were granted (`lease_order`; such a write "
           "counts as a stale write accepted).", "", BACKEND_NOTE, "",
           FAILURE_MODEL, "## Scenarios", "", "| scenario | injection | expected |", "|---|---|---|"]
    for name, (injection, expected) in SCENARIOS.items():
        out.append(f"| {name} | {injection} | {expected} |")
    out += ["", "## Results", "",
            "| scenario | backend | protected: violations / stale writes accepted | negative control: violations / stale accepted (what is off; which checks caught it) | figures (protected run) |",
            "|---|---|---|---|---|"]
    names = list(SCENARIOS) + sorted({s for s, _, _ in results} - set(SCENARIOS))
    for name in names:
        ran = [b for b in BACKENDS if (name, b, True) in results or (name, b, False) in results]
        if not ran:
            out.append(f"| {name} | | not run | not run | |")
        for backend in ran:
            on, off = results.get((name, backend, True)), results.get((name, backend, False))
            on_cell = f"{on['violations']} / {on['stale_accepted']}" if on else "not run"
            off_cell = (f"{off['violations']} / {off['stale_accepted']} (off: {off.get('protection', '')}; "
                        f"caught by {caught(off)})" if off else "not run")
            out.append(f"| {name} | {backend} | {on_cell} | {off_cell} | {figures(on) if on else ''} |")
    figure_lines = sorted({l.split("[figures] ", 1)[1].strip() for l in run.stdout.splitlines() if "[figures] " in l})
    out += ["", "## Regression scenarios of safety round 3", "", "| test | injection | must hold |", "|---|---|---|"]
    out += [f"| {name} | {injection} | {expected} |" for name, injection, expected in REGRESSIONS]
    out += ["", "Figures the fault suite's other tests printed in this run:", ""]
    out += [f"- {l}" for l in figure_lines]
    out += ["", HARDENING, "## Raw lines", "", "```"] + sorted(lines) + ["```", ""]
    with open(output, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {output}: {len(results)} scenario runs, {summary[0] if summary else 'no ctest summary'}, {wall:.0f} s")
    return 0 if run.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
