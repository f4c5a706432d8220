/* The phases of the dlopen edge programs (edge_memcpy_during_dlopen.c,
 * edge_register_during_load.c): the main thread's cycles each have two
 * phases, its dlopen (2c) and its dlclose (2c+1). The main thread announces
 * a phase and waits until the busy thread has seen it (enter_phase); the
 * busy thread then starts at most PER_PHASE calls of that phase and waits
 * for the next one (phase_turn). So the busy thread's calls start before
 * each registration and each shutdown whatever the scheduler does, and its
 * work is bounded by counts, never by time. One program includes this once:
 * the state is the program's own. */
#include <stdatomic.h>
#include <time.h>

static atomic_int stop;
static atomic_int phase;    /* 2c: cycle c's dlopen; 2c+1: its dlclose */
static atomic_int ack = -1; /* the phase the busy thread's calls are in */

static void short_pause(void) {
  const struct timespec pause = {0, 100000};
  nanosleep(&pause, NULL);
}

/* The busy thread's place in the phases. */
struct phase_budget {
  int seen, used;
};
#define PHASE_BUDGET_INIT {-1, 0}

/* 1: the busy thread may start another call now (at most per_phase in one
   phase); 0: it waited for the next phase (or stop), so look again. */
static int phase_turn(struct phase_budget *b, int per_phase) {
  int now = atomic_load(&phase);
  if (now != b->seen) {
    b->seen = now;
    b->used = 0;
    /* The main thread waits for this before its dlopen or dlclose. */
    atomic_store(&ack, now);
  }
  if (b->used == per_phase) {
    while (atomic_load(&phase) == now && !atomic_load(&stop))
      short_pause();
    return 0;
  }
  b->used++;
  return 1;
}

/* Announces phase p and waits until the busy thread has seen it (its first
   call of the phase is about to start): a count, not a clock. */
static void enter_phase(int p) {
  atomic_store(&phase, p);
  while (atomic_load(&ack) != p)
    short_pause();
}
