/* fencelock's lease protocol for one resource, for Spin. model/README.md says what is in it,
 * what is left out and why; scripts/check-model.sh checks it and each seeded bug.
 *
 * Properties:
 *   P1 (ltl p1) no two threads believe they hold the lock at the same moment (each believes
 *      from a grant's reply until its own safe_until);
 *   P2 (asserts) every grant's fence is above every fence issued before it, so no two grants
 *      share one, and the store accepts writes only in grant order (a paused holder's late
 *      write after a newer lease's is refused);
 *   P3 (assert) a handed lease whose grantee will never use or give it back blocks the lock
 *      no longer than the grantee's place in the line would have; a grant to the successor
 *      its releaser vouched still waited, no longer than the lease it asked for (what a lease
 *      it took by its own attempt at that moment would). */

#include "config.pml"
#include "state.pml"
#include "scripts.pml"
#include "client.pml"
#include "world.pml"

ltl p1 { [] !(believes(0) && believes(1)) }

init {
    d_step {
        cl[0] = 1;
        prim = 0; up[0] = 1; up[1] = 1;
        names[0] = 0; names[1] = 0; names[2] = 0;
        since[0] = ANCIENT; since[1] = ANCIENT; since[2] = ANCIENT
    };
    /* the choices the environment makes once: who the threads are, the sentinels, the clocks */
    if
    :: cl[1] = 1     /* two threads of one client: grants from its own releases */
    :: cl[1] = 2     /* two clients: grants announced by message */
    fi;
    /* either server's clock may run up to SKEW ahead of the other's */
    do
    :: off[0] + off[1] < SKEW -> off[0]++
    :: off[0] + off[1] < SKEW && off[0] == 0 -> off[1]++
    :: break
    od;
    atomic {
        update_grace();
        run World();
        run Thread(0);
        run Thread(1)
    }
}
