/* A thread of a client: the acquire loop (AcquireLoop), the keeper's renewals, release, and
 * writes to the fenced store. An attempt is sent at ts and executes at some later step,
 * possibly ticks later, on the master it was sent to (or never, if that master crashed
 * meanwhile); its reply is read in that same step. Folding the reply's delay into the
 * request's, and running renew and release in the step that sends them, only makes a thread
 * believe earlier or longer than a real one could, the stricter test of exclusion. A thread
 * that takes no step is paused while the clock goes on; one paused in HOLD past its
 * safe_until may still write to the store with its old fence. The thread's clock is `now`:
 * clock drift is modelled on Redis's side (world.pml, a key may go DRIFT ticks early). */

inline clear_call(t) {
    seen[t] = 0; rts[t] = 0; su[t] = 0; hf[t] = 0; hg[t] = 0; wrote[t] = 0; ts[t] = 0; sinc[t] = 0;
    gm_o[t] = 0; gm_f[t] = 0; gm_t[t] = 0; gm_g[t] = 0;
    og_o[t] = 0; og_f[t] = 0; og_t[t] = 0; og_s[t] = 0; og_g[t] = 0
}

inline send(t) { ts[t] = now; sinc[t] = inc }

/* safe_until counts from the request's send (protocol.cpp): Redis started the TTL later. */
inline got(t, a_fence, a_grant, a_ttl) {
    hf[t] = a_fence; hg[t] = a_grant; su[t] = ts[t] + a_ttl - MARGIN; wrote[t] = 0;
    seen[t] = 0; rts[t] = 0;
    gm_o[t] = 0; gm_f[t] = 0; gm_t[t] = 0; gm_g[t] = 0;
    og_o[t] = 0; og_f[t] = 0; og_t[t] = 0; og_s[t] = 0; og_g[t] = 0;
    ts[t] = 0; sinc[t] = 0;
    pc[t] = HOLD;
    printf("t=%d thread %d holds fence %d, safe until %d\n", now, t, hf[t], su[t])
}

inline refused(t, a_fence) {
    seen[t] = a_fence; rts[t] = ts[t]; ts[t] = 0; sinc[t] = 0; pc[t] = WAITING;
    printf("t=%d thread %d refused, saw fence %d\n", now, t, a_fence)
}

/* The keeper: safe_until only moves forward, and a confirmation after it revives nothing. */
inline renewed(t, a_ttl) {
    if
    :: now < su[t] ->
        if
        :: ts[t] + a_ttl - MARGIN > su[t] -> su[t] = ts[t] + a_ttl - MARGIN
        :: else -> skip
        fi;
        ts[t] = 0; sinc[t] = 0
    :: else -> lost(t)
    fi
}

inline lost(t) { printf("t=%d thread %d done\n", now, t); pc[t] = IDLE; clear_call(t) }

/* A direct grant is taken without a round trip only when (AcquireLoop::trusted): no grace
 * holds; told by the own client's release: now < its send + ttl - margin; told by a message:
 * its fence is above the one the last refused attempt saw (a), and now < that attempt's send
 * + ttl - margin (b). Otherwise the thread confirms: it attempts again (the grant is dropped
 * here, and WAITING's retry is the attempt). */
#ifdef BUG_TRUST_STALE_GRANT
#define fresh(t) 1
#else
#define fresh(t) (gm_f[t] > seen[t])
#endif

proctype Thread(byte t) {
end:
    do
    /* acquire(): a fresh token; refused before sending inside the grace */
    :: d_step { pc[t] == IDLE && calls[t] < acqs(t) && up[prim] && !ingrace ->
        own[t] = token(t, calls[t]); calls[t]++; send(t); pc[t] = ACQ }
    /* the attempt executes on the master it was sent to, or fails (fail closed) */
    :: d_step { pc[t] == ACQ ->
        if
        :: sinc[t] == inc -> s_ = prim; o_ = own[t]; acquire(t)
        :: else -> pc[t] = WAITING; ts[t] = 0; sinc[t] = 0
        fi }
    /* the waiter's timer (or a wake-up): attempt again with the same token */
    :: d_step { pc[t] == WAITING && up[prim] && !ingrace -> send(t); pc[t] = ACQ }
    /* a grant from this client's own release */
    :: d_step { pc[t] == WAITING && og_o[t] != 0 ->
        if
        :: !ingrace && now < og_s[t] + og_t[t] - MARGIN ->
            ts[t] = og_s[t]; got(t, og_f[t], og_g[t], og_t[t])
        :: else -> og_o[t] = 0; og_f[t] = 0; og_t[t] = 0; og_s[t] = 0; og_g[t] = 0
        fi }
    /* a grant message from another client's release */
    :: d_step { pc[t] == WAITING && gm_o[t] != 0 ->
        if
        :: gm_o[t] == own[t] && !ingrace && fresh(t) && now < rts[t] + gm_t[t] - MARGIN ->
            ts[t] = rts[t]; got(t, gm_f[t], gm_g[t], gm_t[t])
        :: else -> gm_o[t] = 0; gm_f[t] = 0; gm_t[t] = 0; gm_g[t] = 0
        fi }
    /* giving up (deadline, stop): leave_line, best effort, so it may be lost */
    :: d_step { pc[t] == WAITING ->
        if
        :: up[prim] -> printf("t=%d thread %d leaves the line\n", now, t); s_ = prim; o_ = own[t]; leave_line()
        :: else -> skip
        fi;
        gaveup[own[t]] = 1; lost(t) }
    :: d_step { pc[t] == WAITING ->
        printf("t=%d thread %d gives up, its leave_line lost\n", now, t); gaveup[own[t]] = 1; lost(t) }
    /* holding: write to the store. A thread paused since it last checked valid() writes
     * here after its safe_until too, with its old fence: the store must refuse it. */
    :: d_step { pc[t] == HOLD && !wrote[t] ->
        wrote[t] = 1;
        if
        :: hf[t] > store_fence ->
            assert(hg[t] > store_grant);   /* P2: the store accepts leases in grant order */
            store_fence = hf[t]; store_grant = hg[t];
            printf("t=%d thread %d writes with fence %d: accepted\n", now, t, hf[t])
        :: else -> printf("t=%d thread %d writes with fence %d: stale\n", now, t, hf[t])
        fi }
    /* the keeper renews (sent and executed in one step: a later execution only shortens
     * safe_until, so it cannot help break exclusion) */
    :: d_step { pc[t] == HOLD && up[prim] -> send(t); s_ = prim; o_ = own[t]; renew(t) }
    :: d_step { pc[t] == HOLD && now >= su[t] -> lost(t) }
    /* release (one step, like renew); a grant to a waiter of this client comes back in the
     * reply and goes to that waiter through the local line if it still waits */
    :: d_step { pc[t] == HOLD ->
        if
        :: up[prim] ->
            printf("t=%d thread %d releases\n", now, t);
            send(t); s_ = prim; o_ = own[t];
            /* the successor it names: its client's other thread, if that one waits now */
#ifdef BUG_VOUCH_ANY
            vouch_ = (cl[1 - t] == cl[t] -> own[1 - t] : 0);
#else
            vouch_ = (cl[1 - t] == cl[t] && pc[1 - t] == WAITING -> own[1 - t] : 0);
#endif
            release(t); vouch_ = 0;
            if
            :: res_o != 0 && pc[thread_of(res_o)] == WAITING && own[thread_of(res_o)] == res_o ->
                t2_ = thread_of(res_o);
                og_o[t2_] = res_o; og_f[t2_] = res_f; og_t[t2_] = res_t; og_s[t2_] = ts[t]; og_g[t2_] = res_g
            :: else -> skip
            fi
        :: else -> skip   /* failed: the lease runs out */
        fi;
        lost(t) }
    od
}
