/* The Lua scripts, one inline each (src/coordinator/redis/scripts/*.lua). Each runs inside one d_step, as a
 * script runs atomically in Redis, on server s_ (the master), with its clock clk(s_).
 * Leaves out what only costs or formats: the lean path, sleepers, holder metadata, max hold. */

inline del_lock(s) {
    node[s].owner = 0; node[s].fence = 0; node[s].exp = 0; node[s].handed = 0; node[s].g = 0; node[s].bound = 0
}

inline drop_place(s, o) { node[s].dl[o] = 0; node[s].arr[o] = 0 }

/* ZADD NX keeps the arrival; the deadline moves on with every attempt. */
inline take_place(s, o) {
    if
    :: node[s].dl[o] == 0 -> node[s].arr[o] = clk(s)
    :: else -> skip
    fi;
    node[s].dl[o] = clk(s) + SLOT
}

/* lib/line.lua first_live: the earliest live place (lapsed ones are dropped at each tick). */
inline first_live(s) {
    fl_ = 0; i_ = 1;
    do
    :: i_ < NO ->
        if
        :: node[s].dl[i_] > clk(s) && (fl_ == 0 || node[s].arr[i_] < node[s].arr[fl_]) -> fl_ = i_
        :: else -> skip
        fi;
        i_++
    :: else -> break
    od;
    skip  /* a d_step must not end on a loop's break */
}

/* lib/fence.lua next_fence: max(counter + 1, TIME in us). */
inline next_fence(s) {
#ifdef BUG_NO_CLOCK_TERM
    new_fence = node[s].counter + 1
#else
    new_fence = (node[s].counter + 1 > K * clk(s) -> node[s].counter + 1 : K * clk(s))
#endif
}

/* Writes the lease (lib/lease.lua write_lease) and the counter. P2: every grant's fence is
 * above every fence issued before it, on whichever server, in real-time order. */
inline issue(s, o, a_ttl, h, bnd) {
#ifndef STORE_CHECK_ONLY
    assert(new_fence > max_fence_issued);
#endif
    max_fence_issued = new_fence;
    grants++;
    node[s].counter = new_fence;
    node[s].owner = o; node[s].fence = new_fence; node[s].exp = clk(s) + a_ttl; node[s].handed = h;
    node[s].g = grants; node[s].bound = bnd;
    printf("t=%d server %d grants token %d fence %d ttl %d handed %d\n", now, s, o, new_fence, a_ttl, h)
}

/* lib/handoff.lua hand_on, the lock free: grant the first live waiter (every waiting attempt
 * here opted in to direct grants). rc: the releasing client, 0 for leave_line. A grant to a
 * waiter of rc is told by the reply (res_*), any other by the message gm_*. The TTL is at
 * most what is left of the grantee's place, except for the successor rc vouches for (vouch_). */
inline hand_on(s, rc) {
    res_o = 0;
    first_live(s);
    if
    :: fl_ != 0 ->
        own_ = (rc != 0 && cl[thread_of(fl_)] == rc);
        next_fence(s);
        ttl_ = node[s].dl[fl_] - clk(s);
        if
        :: ttl_ > L -> ttl_ = L
        :: else -> skip
        fi;
#ifdef BUG_UNBOUNDED_OWN_GRANT
        if
        :: own_ -> ttl_ = L
        :: else -> skip
        fi;
#endif
        /* the releaser's successor, which its client vouches waits now, gets the whole
         * lease. The ghost bound reads the truth, not the vouch: a grantee that does wait
         * now is bounded as a lease it took by its own attempt at this moment would be. */
        if
        :: own_ && fl_ == vouch_ -> ttl_ = L
        :: else -> skip
        fi;
        bnd_ = node[s].dl[fl_];
        if
        :: own_ && pc[thread_of(fl_)] == WAITING && own[thread_of(fl_)] == fl_ -> bnd_ = clk(s) + L
        :: else -> skip
        fi;
        issue(s, fl_, ttl_, 1, bnd_);
        drop_place(s, fl_);
        t2_ = thread_of(fl_);
        if
        :: own_ -> res_o = fl_; res_f = new_fence; res_t = ttl_; res_g = grants
        :: else -> gm_o[t2_] = fl_; gm_f[t2_] = new_fence; gm_t[t2_] = ttl_; gm_g[t2_] = grants
        fi
    :: else -> skip
    fi
}

/* acquire.lua, a waiting fair attempt by token o_ of thread t. Sets the thread's next state:
 * HOLD with the lease, or WAITING with the fence the refusal saw. */
inline acquire(t) {
    if
    :: live(s_) && node[s_].owner == o_ ->   /* already ours: handed to us by a release */
        ttl_ = node[s_].exp - clk(s_);
        got(t, node[s_].fence, node[s_].g, ttl_)
    :: live(s_) && node[s_].owner != o_ ->
        take_place(s_, o_);
        refused(t, node[s_].fence)
    :: else ->
        first_live(s_);
        if
        :: fl_ != 0 && fl_ != o_ ->        /* queued: an earlier fair waiter's turn */
            take_place(s_, o_);
            refused(t, node[s_].counter)
        :: else ->
            next_fence(s_);
            issue(s_, o_, L, 0, 0);
            drop_place(s_, o_);
            got(t, new_fence, grants, L)
        fi
    fi
}

/* renew.lua: owner-checked; extends the TTL, never the fence. */
inline renew(t) {
    if
    :: live(s_) && node[s_].owner == o_ ->
        node[s_].exp = clk(s_) + L;
        printf("t=%d server %d renews token %d\n", now, s_, o_);
        renewed(t, L)
    :: else -> lost(t)
    fi
}

/* release.lua: compare-and-delete, then serve the next waiter. */
inline release(t) {
    res_o = 0;
    if
    :: live(s_) && node[s_].owner == o_ ->
        del_lock(s_);
        hand_on(s_, cl[t])
    :: else -> skip
    fi
}

/* leave_line.lua: give up the place, give back a lease handed to us, serve the next waiter. */
inline leave_line() {
    holds_ = (live(s_) && node[s_].owner == o_ && node[s_].handed);
    if
    :: node[s_].dl[o_] != 0 || holds_ ->
        drop_place(s_, o_);
        if
        :: holds_ -> del_lock(s_)
        :: else -> skip
        fi;
        if
        :: !live(s_) -> hand_on(s_, 0)
        :: else -> skip
        fi
    :: else -> skip
    fi
}
