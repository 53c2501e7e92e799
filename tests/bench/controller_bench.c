/* controller_bench.c -- one controller step at scale (issue 10): a fleet
 * of 1,000 instances over 100 spot markets (10 types x 10 zones, prices
 * changing every 5 minutes for 30 days), BidBrain deciding on every
 * step, a world that confirms launches at once.  Prints the time of a
 * step (ctrl_step + ctrl_cost) as p50, p99 and max over the steps, and the
 * fleet's size.  Built and run by bench_controller.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../agent/controller.h"
#include "../../agent/world/sim.h"

#define NT 10
#define NZ 10
#define DAYS 30
#define STEP_S 300
#define FLEET 1000

static const char *const types[NT] = {
	"c3.large", "c3.xlarge", "c3.2xlarge", "c3.4xlarge", "c3.8xlarge",
	"m3.medium", "m3.large", "m3.xlarge", "m3.2xlarge", "r3.large",
};

static struct ctrl *C;
static int64_t NOW;
static long timers;

static enum px_err w_acquire(void *w, const struct world_req *q,
			     struct px_error *err)
{
	(void)w, (void)err;
	return ctrl_launched(C, NOW, q->id);
}

static enum px_err w_release(void *w, uint64_t id, struct px_error *err)
{
	(void)w, (void)id, (void)err;
	return PX_OK;
}

static enum px_err w_timer(void *w, int64_t t, enum ctrl_timer_kind k,
			   uint64_t id, struct px_error *err)
{
	(void)w, (void)t, (void)k, (void)id, (void)err;
	timers++;
	return PX_OK;
}

static const struct world_ops world = {
	.name = "bench", .acquire = w_acquire, .release = w_release,
	.timer = w_timer,
};

/* BidBrain, after a first step that fills the fleet: 10 per market. */
static const struct pol_env *ENV;
static void *BB;

static enum px_err p_init(const struct pol_env *env, void **st,
			  struct px_error *err)
{
	ENV = env;
	*st = NULL;
	return pol_bidbrain_ops.init(env, &BB, err);
}

static enum px_err p_decide(void *st, const struct pol_input *in,
			    struct pol_actions *out, struct px_error *err)
{
	(void)st;
	if (!(in->why & POL_WHY_START))
		return pol_bidbrain_ops.decide(BB, in, out, err);
	for (size_t m = 0; m < ENV->n_markets; m++) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = (int)m,
			.count = FLEET / (int)ENV->n_markets,
			.bid_uusd = 10 * ENV->types[ENV->markets[m].type].od_uusd,
		};
		if (pol_actions_push(out, &a) != PX_OK)
			return PX_ENOMEM;
	}
	return PX_OK;
}

static void p_fini(void *st)
{
	(void)st;
	pol_bidbrain_ops.fini(BB);
}

static const struct policy_ops pol = {
	.name = "fill-then-bidbrain", .wants = ~0u, .init = p_init,
	.decide = p_decide, .fini = p_fini,
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, const struct px_error *e)
{
	fprintf(stderr, "controller_bench: %s: %s\n", what, e->msg);
	exit(1);
}

int main(void)
{
	static struct market_set ms;
	static struct ondemand_entry odv[NT];
	struct ondemand_table od = {.v = odv, .n = NT};
	static struct jobspec job;
	struct sim_plan *plan;
	struct px_error e = {0};
	char js[4096], zones[NZ][16];
	size_t off;
	const int64_t t0 = 1456790400, span = (int64_t)DAYS * 86400;
	int64_t step0 = t0 + 14 * 86400;   /* two weeks of history first */
	size_t nsteps = (size_t)((span - 14 * 86400) / STEP_S) - 1;
	double *dt = malloc(nsteps * sizeof *dt);
	uint64_t rng = 88172645463325252ull;

	market_set_init(&ms);
	for (int z = 0; z < NZ; z++)
		snprintf(zones[z], sizeof zones[z], "us-east-1%c", 'a' + z);
	for (int t = 0; t < NT; t++) {
		int64_t od_u = 100000 * (t + 1);

		snprintf(odv[t].region, sizeof odv[t].region, "us-east-1");
		snprintf(odv[t].type, sizeof odv[t].type, "%s", types[t]);
		odv[t].uusd_per_hour = od_u;
		for (int z = 0; z < NZ; z++) {
			double p = 0.3 * od_u;

			for (int64_t s = t0; s <= t0 + span; s += STEP_S) {
				rng ^= rng << 13, rng ^= rng >> 7,
				rng ^= rng << 17;
				p *= 1.0 + ((double)(rng % 2001) - 1000) / 2e4;
				if (p < 0.1 * od_u)
					p = 0.1 * od_u;
				if (p > 2.0 * od_u)
					p = 2.0 * od_u;
				if (market_set_add(&ms, zones[z], types[t], s,
						   (int64_t)p, &e) != PX_OK)
					die("market", &e);
			}
		}
	}
	if (market_set_seal(&ms, &e) != PX_OK)
		die("seal", &e);
	off = (size_t)snprintf(js, sizeof js, "{\"name\": \"bench\", "
		"\"region\": \"us-east-1\", \"work_hours\": 1000000, "
		"\"reference_type\": \"c3.large\", \"instances\": %d, "
		"\"reliable\": {\"type\": \"c3.large\", \"count\": 10}, "
		"\"spot\": {\"max_instances\": %d, \"types\": [", FLEET, FLEET);
	for (int t = 0; t < NT; t++)
		off += (size_t)snprintf(js + off, sizeof js - off, "%s\"%s\"",
					t ? ", " : "", types[t]);
	off += (size_t)snprintf(js + off, sizeof js - off, "], \"zones\": [");
	for (int z = 0; z < NZ; z++)
		off += (size_t)snprintf(js + off, sizeof js - off, "%s\"%s\"",
					z ? ", " : "", zones[z]);
	snprintf(js + off, sizeof js - off, "]}}");
	if (jobspec_parse(js, strlen(js), "bench", &job, &e) != PX_OK)
		die("job", &e);
	struct sim_setup su = {.ms = &ms, .od = &od, .job = &job,
			       .billing = BILLING_LEGACY_HOURLY};
	if (sim_plan_new(&su, &plan, &e) != PX_OK)
		die("plan", &e);
	struct ctrl_setup cs = {
		.env = sim_plan_env(plan), .ms = &ms, .policy = &pol,
		.world = &world, .start_s = step0,
		.window_end_s = t0 + span,
	};
	if (ctrl_new(&cs, &C, &e) != PX_OK)
		die("controller", &e);
	struct ctrl_progress pg = {0};

	NOW = step0;
	if (ctrl_step(C, NOW, POL_WHY_START, &pg) != PX_OK)
		die("start", ctrl_error(C));
	size_t fleet0 = ctrl_fleet(C)->n, nmin = fleet0, nmax = fleet0;

	for (size_t i = 0; i < nsteps; i++) {
		double a;

		NOW += STEP_S;
		a = now_us();
		if (ctrl_step(C, NOW, POL_WHY_PRICE | POL_WHY_TICK, &pg) !=
		    PX_OK)
			die("step", ctrl_error(C));
		ctrl_cost(C, NOW);
		dt[i] = now_us() - a;
		if (ctrl_fleet(C)->n < nmin)
			nmin = ctrl_fleet(C)->n;
		if (ctrl_fleet(C)->n > nmax)
			nmax = ctrl_fleet(C)->n;
	}
	qsort(dt, nsteps, sizeof *dt, cmp);
	printf("%zu %zu %zu %zu %zu %.1f %.1f %.1f %lld\n", ENV->n_markets,
	       fleet0, nmin, nmax, nsteps, dt[nsteps / 2],
	       dt[(size_t)(nsteps * 0.99)], dt[nsteps - 1],
	       (long long)ctrl_cost(C, NOW));
	ctrl_free(C);
	sim_plan_free(plan);
	market_set_release(&ms);
	free(dt);
	return 0;
}
