/* What the threads do not control: time, key expiry, replication, crashes and Sentinel's
 * failovers, and the failover grace the client estimates from the sentinels' answers. */

inline copy_server(a, b) {
    node[b].owner = node[a].owner; node[b].fence = node[a].fence; node[b].exp = node[a].exp;
    node[b].handed = node[a].handed; node[b].counter = node[a].counter; node[b].g = node[a].g;
    node[b].bound = node[a].bound;
    i_ = 1;
    do
    :: i_ < NO -> node[b].dl[i_] = node[a].dl[i_]; node[b].arr[i_] = node[a].arr[i_]; i_++
    :: else -> break
    od;
    skip  /* a d_step must not end on a loop's break */
}

/* The master expires keys by its own clock; lapsed places are dropped (first_live would). */
inline tidy(s) {
    if
    :: node[s].owner != 0 && clk(s) >= node[s].exp -> del_lock(s)
    :: else -> skip
    fi;
    i_ = 1;
    do
    :: i_ < NO ->
        if
        :: node[s].dl[i_] != 0 && node[s].dl[i_] <= clk(s) -> drop_place(s, i_)
        :: else -> skip
        fi;
        i_++
    :: else -> break
    od;
    skip  /* a d_step must not end on a loop's break */
}

/* The client's grace (SentinelTopology): a new grant waits until GRACE after the master
 * became master, by the sentinels' role-reported-time. The fix: the youngest age among a
 * majority that names the master. Which majority answers is not ours to choose, so the
 * model takes the least safe one: of three that agree, the second youngest; of two, the
 * younger. No majority: no age, the whole grace. */
inline update_grace() {
#if GRACE == 0
    ingrace = 0
#else
    cnt_ = (names[0] == prim) + (names[1] == prim) + (names[2] == prim);
    e0_ = (names[0] == prim -> since[0] : 32000);
    e1_ = (names[1] == prim -> since[1] : 32000);
    e2_ = (names[2] == prim -> since[2] : 32000);
#ifdef BUG_OLDEST_SENTINEL_AGE
    /* The oldest age among the answers that name the master ("every answer errs late"). */
    if
    :: e1_ < e0_ -> e0_ = e1_
    :: else -> skip
    fi;
    if
    :: e2_ < e0_ -> e0_ = e2_
    :: else -> skip
    fi;
    ingrace = (cnt_ == 0 || now < e0_ + GRACE)
#else
    /* The least safe majority is the two oldest answers; its youngest is the second
     * smallest since: max(min(e0, e1), min(max(e0, e1), e2)). Absent ones sort last. */
    if
    :: e1_ < e0_ -> lo_ = e1_; hi_ = e0_
    :: else -> lo_ = e0_; hi_ = e1_
    fi;
    if
    :: e2_ < hi_ -> hi_ = e2_
    :: else -> skip
    fi;
    if
    :: hi_ > lo_ -> e1_ = hi_
    :: else -> e1_ = lo_
    fi;
    ingrace = (cnt_ < 2 || now < e1_ + GRACE)
#endif
#endif
}

/* A promotion: the sentinels that saw it name the new master from now; sentinel 2 may not. */
inline sentinels_promote() {
    /* how sentinel 2 fares is chosen at the first failover, and stays */
    if
    :: fo == 1 ->
        if
        :: s3mode = S3_GOOD
        :: s3mode = S3_CUT
#ifndef SENTINEL_CLOCKS_STAY
        :: s3mode = S3_STEPPED
#endif
        fi
    :: else -> skip
    fi;
    names[0] = prim; since[0] = now;
    names[1] = prim; since[1] = now;
    if
    :: s3mode == S3_GOOD -> names[2] = prim; since[2] = now
    :: s3mode == S3_STEPPED -> names[2] = prim; since[2] = ANCIENT
    :: else -> skip   /* cut off: still names whom it named, since when it did */
    fi
}

proctype World() {
end:
    do
    /* a tick: the master expires what ran out, and P3 is checked */
    :: d_step { now < H ->
        now++;
        printf("t=%d tick\n", now);
        if
        :: up[prim] -> tidy(prim)
        :: else -> skip
        fi;
        update_grace();
        /* P3: a handed lease nobody will use or give back blocks the lock no longer than
         * its grantee's place would have (finding 7: the lock sits idle a whole lease), or,
         * granted to a successor its releaser vouched waited, than a lease that successor
         * took by its own attempt at the release. */
        p3_overdue = (up[prim] && node[prim].owner != 0 && node[prim].bound != 0 &&
                      gaveup[node[prim].owner] && clk(prim) >= node[prim].bound);
        assert(!p3_overdue) }
#if DRIFT > 0
    /* Redis's clock ran fast: the key goes up to DRIFT ticks early */
    :: d_step { up[prim] && node[prim].owner != 0 && clk(prim) + DRIFT >= node[prim].exp ->
        printf("t=%d server %d expires the lease early (its clock runs fast)\n", now, prim); del_lock(prim) }
#endif
    /* asynchronous replication: the replica catches up to the master as it is now */
    :: d_step { fo < MAXFO && up[prim] && up[1 - prim] ->
        printf("t=%d server %d replicates to %d\n", now, prim, 1 - prim); copy_server(prim, 1 - prim) }
    /* the master dies; what it had not replicated is lost with it */
    :: d_step { fo < MAXFO && up[prim] && up[1 - prim] -> up[prim] = 0; inc++; crashed_at = now;
        printf("t=%d server %d crashes\n", now, prim) }
    /* Sentinel promotes the replica, at least D ticks later */
    :: atomic { !up[prim] && now >= crashed_at + D ->
        prim = 1 - prim; fo++; tidy(prim); sentinels_promote(); update_grace();
        printf("t=%d server %d promoted; sentinel 2 mode %d (0 good, 1 cut off, 2 clock stepped); grace: %d\n", now, prim, s3mode, ingrace) }
    /* the old master comes back as a replica and resynchronises (full copy) */
    :: d_step { fo < MAXFO && up[prim] && !up[1 - prim] ->
        printf("t=%d server %d restarts as a replica\n", now, 1 - prim);
        up[1 - prim] = 1; copy_server(prim, 1 - prim) }
    od
}
