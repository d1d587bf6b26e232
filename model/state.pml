/* The state: two Redis servers, the sentinels' view, the threads, the fenced store, and the
 * ghosts the properties read. All global, so the properties can see everything. */

/* One server's keys for resource R. The replica holds a copy of what the primary had when it
 * last replicated: replication is asynchronous, so the copy is some earlier state, never a mix. */
typedef Server {
    byte owner;      /* lock:{R} owner token, 0: no lease */
    byte fence;      /* lock:{R} fence */
    byte exp;        /* when the lease expires, on the clock of the server judging it (a
                        replica keeps the absolute time, as PEXPIREAT replicates it) */
    bit  handed;     /* lock:{R} handed: a release or leave_line granted it directly */
    byte counter;    /* fence:{R} */
    byte dl[NO];     /* waiter-deadlines:{R}: the place lapses at this time; 0: no place */
    byte arr[NO];    /* waiters:{R}: arrival time (ties go to the smaller token) */
    byte g;          /* ghost: which grant (in real-time order) this lease is */
    byte bound;      /* ghost: a handed lease's bound, its grantee's place deadline at
                        the grant; 0: not handed */
}
Server node[2];

byte now;            /* real time, in ticks */
byte off[2];         /* how far each server's clock runs ahead of real time */
#define clk(s) (now + off[s])
#define live(s) (node[s].owner != 0 && clk(s) < node[s].exp)

byte prim;           /* the master the sentinels name */
bit  up[2];
byte inc;            /* crashes so far: a request sent before a crash never executes */
byte crashed_at;
byte fo;             /* failovers so far */

/* Sentinels: which server each names, and since when it says that server is master (the
 * client reads now - since as role-reported-time). Sentinels 0 and 1 see every failover; 2
 * may be cut off (keeps its old view) or have its wall clock stepped forward (too old an age). */
byte  names[3];
short since[3];
byte  s3mode;
#define S3_GOOD    0
#define S3_CUT     1
#define S3_STEPPED 2
bit  ingrace;        /* the client's estimate: a new grant now would be inside the grace */

/* Threads. pc: */
#define IDLE    0    /* no acquire() under way */
#define ACQ     1    /* an acquire attempt sent, not executed yet */
#define WAITING 2    /* refused, in the fair line; waits for a grant, its timer, or gives up */
#define HOLD    3    /* believes it holds the lease until su */
byte pc[NT];
byte cl[NT];         /* client id: both threads of one client, or one client each */
byte calls[NT];      /* acquire() calls started */
byte own[NT];        /* the owner token of the current call */
byte ts[NT];         /* when the request in flight was sent (the thread's clock) */
byte sinc[NT];       /* inc when it was sent */
byte rts[NT];        /* when the last refused attempt was sent */
byte seen[NT];       /* the fence the last refused attempt saw */
byte su[NT];         /* safe_until */
byte hf[NT];         /* the held lease's fence */
byte hg[NT];         /* ghost: the held lease's grant number */
bit  wrote[NT];      /* the held lease wrote to the store already */
#define believes(t) (pc[t] == HOLD && now < su[t])
#define token(t, k) (1 + ((t) == 0 -> 0 : ACQS0) + (k))
#define thread_of(o) ((o) > ACQS0 -> 1 : 0)
#define acqs(t) ((t) == 0 -> ACQS0 : ACQS1)
/* Ghost: the token's waiter gave up (left the line, or tried to): a lease handed to it now
 * is used by nobody, and given back only if its leave_line got through. */
bit gaveup[NO];

/* A grant announced by the release message (another client's release): token, fence, ttl. */
byte gm_o[NT]; byte gm_f[NT]; byte gm_t[NT]; byte gm_g[NT];
/* A grant of the thread's own client's release, handed over through the local line, with
 * the release's send time (DirectGrant::release_sent). */
byte og_o[NT]; byte og_f[NT]; byte og_t[NT]; byte og_s[NT]; byte og_g[NT];

/* The fenced store: last accepted fence, and (ghost) the grant that wrote it. */
byte store_fence;
byte store_grant;

/* Ghosts: grants so far, the largest fence issued. */
byte grants;
byte max_fence_issued;

/* Scratch for the scripts; hidden, so never part of a state. */
hidden byte i_, s_, o_, fl_, new_fence, ttl_, t2_, cnt_;
hidden short e0_, e1_, e2_, lo_, hi_;
hidden byte res_o, res_f, res_t, res_g;
hidden byte own_, holds_, p3_overdue, vouch_, bnd_;
