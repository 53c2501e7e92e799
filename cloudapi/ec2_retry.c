/* ec2_retry.c -- the AWS SDKs' standard retry mode: which failures are
 * retried, full-jitter exponential backoff, and the retry token bucket.
 * Pure functions; the call state machine in ec2_http.c uses them.
 */
#include <string.h>

#include "ec2_int.h"

static const char *const throttle_codes[] = {
	"Throttling", "ThrottlingException", "ThrottledException",
	"RequestThrottledException", "TooManyRequestsException",
	"ProvisionedThroughputExceededException",
	"TransactionInProgressException", "RequestLimitExceeded",
	"BandwidthLimitExceeded", "LimitExceededException",
	"RequestThrottled", "SlowDown", "EC2ThrottledException",
};

static const char *const transient_codes[] = {
	"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete",
};

static bool in_list(const char *code, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(code, v[i]) == 0)
			return true;
	return false;
}

bool ec2_retry_is_throttle(const char *code)
{
	return code && in_list(code, throttle_codes,
			       sizeof throttle_codes / sizeof *throttle_codes);
}

bool ec2_retry_is_retryable(long http_status, const char *code,
			    bool retry_not_found)
{
	size_t n;

	if (http_status == 0)
		return true; /* connection error or timeout */
	if (http_status == 500 || http_status == 502 || http_status == 503 ||
	    http_status == 504)
		return true;
	if (!code || !*code)
		return false;
	if (ec2_retry_is_throttle(code))
		return true;
	if (in_list(code, transient_codes,
		    sizeof transient_codes / sizeof *transient_codes))
		return true;
	n = strlen(code);
	return retry_not_found && n > 9 &&
	       strcmp(code + n - 9, ".NotFound") == 0;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t ec2_retry_delay_us(int attempt, uint64_t base_us, uint64_t cap_us,
			    uint64_t *rng)
{
	uint64_t ceil_us = base_us;
	uint64_t r;

	if (attempt < 1)
		attempt = 1;
	for (int i = 1; i < attempt && ceil_us < cap_us; i++)
		ceil_us = ceil_us > UINT64_MAX / 2 ? UINT64_MAX : ceil_us * 2;
	if (ceil_us > cap_us)
		ceil_us = cap_us;
	if (ceil_us == 0)
		return 0;
	/* rand in [0,1) with 53 bits, scaled without floating point error
	 * mattering: the result is < ceil_us. */
	r = splitmix64(rng) >> 11;
	return (uint64_t)((double)r / 9007199254740992.0 * (double)ceil_us);
}

void ec2_quota_init(struct ec2_quota *q)
{
	q->tokens = EC2_QUOTA_MAX;
}

bool ec2_quota_acquire(struct ec2_quota *q, bool timeout, int *ret_cost)
{
	int cost = timeout ? EC2_QUOTA_TIMEOUT_COST : EC2_QUOTA_RETRY_COST;

	if (q->tokens < cost)
		return false;
	q->tokens -= cost;
	*ret_cost = cost;
	return true;
}

void ec2_quota_success(struct ec2_quota *q, int retry_cost)
{
	q->tokens += retry_cost > 0 ? retry_cost : 1;
	if (q->tokens > EC2_QUOTA_MAX)
		q->tokens = EC2_QUOTA_MAX;
}
