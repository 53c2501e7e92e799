/* sim_fixture.h -- the synthetic world that test_sim.c and
 * test_sim_oracle.c run the simulator in: a market set the test fills
 * (add) and seals, a job parsed from a few fields on top of fixed ones
 * (job_from: reference type c3.xlarge, linear scaling, no startup), and
 * on-demand prices of 1 USD/h for c3.2xlarge and 0.5 USD/h for c3.xlarge
 * in us-east-1.  Each test runs in its own process (Criterion), so one
 * set of globals serves every test of both files. */
#ifndef PX_TESTS_SIM_FIXTURE_H
#define PX_TESTS_SIM_FIXTURE_H

#include <stdint.h>

#include "../../agent/world/sim.h"

extern struct market_set ms;
extern struct jobspec job;
extern struct ondemand_table od;

/* One record of market (z, t): price p micro-USD from time ts. */
void add(const char *z, const char *t, int64_t ts, int64_t p);
/* A random walk with spikes past on-demand over 2 zones x 2 types
 * (c3.xlarge, c3.2xlarge), 6 days, drawn from seed x. */
void sim_volatile_market(uint64_t x);
/* job from the fixed fields and extra (JSON members, comma-separated). */
void job_from(const char *extra);
/* The suites' .init and .fini. */
void sim_fixture_setup(void);
void sim_fixture_teardown(void);

#endif
