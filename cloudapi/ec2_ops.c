/* ec2_ops.c -- the typed EC2 operations' request builders (wire names from
 * the botocore 2016-11-15 model) and response parsers.  The operations
 * themselves, asynchronous and blocking, are in ec2_async.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include "ec2_int.h"

/* ------------------------------------------------------------ helpers */

enum px_err ec2_client_token(char *buf, size_t len, struct px_error *err)
{
	unsigned char r[16];

	if (len < 33)
		return px_errorf(err, PX_EINVAL, "client token buffer");
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return px_errorf(err, PX_EIO, "getrandom failed");
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(buf + 2 * i, 3, "%02x", r[i]);
	return PX_OK;
}

static void add_list(struct ec2_params *p, const char *name,
		     const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ec2_params_addf(p, v[i], "%s.%zu", name, i + 1);
}

/* A failed add (allocation, a name too long) is sticky in p: report it
 * once the request is built, and release p then. */
static enum px_err params_check(struct ec2_params *p, const char *action,
				struct px_error *err)
{
	enum px_err rc = p->oom;

	if (rc == PX_OK)
		return PX_OK;
	ec2_params_release(p);
	return px_errorf(err, rc, "%s: request parameters", action);
}

static void add_filters(struct ec2_params *p, const struct ec2_filter *f,
			size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ec2_params_addf(p, f[i].name, "Filter.%zu.Name", i + 1);
		for (size_t j = 0; j < f[i].n_values; j++)
			ec2_params_addf(p, f[i].values[j],
					"Filter.%zu.Value.%zu", i + 1, j + 1);
	}
}

static void add_price(struct ec2_params *p, const char *name, int64_t uusd)
{
	char b[32];

	ec2_params_add(p, name, px_format_usd(uusd, b, sizeof b));
}

static void add_tag_spec(struct ec2_params *p, size_t idx, const char *rtype,
			 const struct ec2_tag *t, size_t n)
{
	if (!n)
		return;
	ec2_params_addf(p, rtype, "TagSpecification.%zu.ResourceType", idx);
	for (size_t i = 0; i < n; i++) {
		ec2_params_addf(p, t[i].key, "TagSpecification.%zu.Tag.%zu.Key",
				idx, i + 1);
		ec2_params_addf(p, t[i].value,
				"TagSpecification.%zu.Tag.%zu.Value", idx,
				i + 1);
	}
}

/* LaunchSpecification fields under prefix ("" or "LaunchSpecification."). */
static enum px_err add_spec(struct ec2_params *p, const char *pre,
			    const struct ec2_launch_spec *s,
			    struct px_error *err)
{
	if (!s->image_id || !*s->image_id || !s->instance_type ||
	    !*s->instance_type)
		return px_errorf(err, PX_EINVAL, "launch specification: "
				 "'image_id' and 'instance_type' are "
				 "required");
	ec2_params_addf(p, s->image_id, "%sImageId", pre);
	ec2_params_addf(p, s->instance_type, "%sInstanceType", pre);
	if (s->zone)
		ec2_params_addf(p, s->zone, "%sPlacement.AvailabilityZone",
				pre);
	if (s->key_name)
		ec2_params_addf(p, s->key_name, "%sKeyName", pre);
	if (s->subnet_id)
		ec2_params_addf(p, s->subnet_id, "%sSubnetId", pre);
	if (s->iam_profile_name)
		ec2_params_addf(p, s->iam_profile_name,
				"%sIamInstanceProfile.%s", pre,
				strncmp(s->iam_profile_name, "arn:", 4) ?
				"Name" : "Arn");
	for (size_t i = 0; i < s->n_security_groups; i++)
		ec2_params_addf(p, s->security_group_ids[i],
				"%sSecurityGroupId.%zu", pre, i + 1);
	if (s->user_data_len) {
		size_t n = 4 * ((s->user_data_len + 2) / 3) + 1;
		unsigned char *b;

		if (s->user_data_len > 16 * 1024)
			return px_errorf(err, PX_ETOOBIG, "user data: %zu "
					 "bytes, over 16384",
					 s->user_data_len);
		b = malloc(n);
		if (!b)
			return px_errorf(err, PX_ENOMEM, "user data");
		EVP_EncodeBlock(b, s->user_data, (int)s->user_data_len);
		ec2_params_addf(p, (const char *)b, "%sUserData", pre);
		free(b);
	}
	return PX_OK;
}

enum px_err ec2_build_run_instances(const struct ec2_run_req *req,
				    struct ec2_params *p,
				    struct px_error *err)
{
	char tok[EC2_TOKEN_MAX + 1], b[16];
	int minc = req->min_count > 0 ? req->min_count : 1;
	int maxc = req->max_count > 0 ? req->max_count : minc;
	enum px_err rc;

	ec2_params_init(p, "RunInstances");
	rc = add_spec(p, "", &req->spec, err);
	if (rc != PX_OK)
		goto out_release;
	if (maxc < minc) {
		rc = px_errorf(err, PX_EINVAL, "max_count %d < min_count %d",
			       maxc, minc);
		goto out_release;
	}
	snprintf(b, sizeof b, "%d", minc);
	ec2_params_add(p, "MinCount", b);
	snprintf(b, sizeof b, "%d", maxc);
	ec2_params_add(p, "MaxCount", b);
	if (req->client_token) {
		if (strlen(req->client_token) > EC2_TOKEN_MAX) {
			rc = px_errorf(err, PX_EINVAL, "client token over 64 "
				       "characters");
			goto out_release;
		}
		ec2_params_add(p, "ClientToken", req->client_token);
	} else {
		rc = ec2_client_token(tok, sizeof tok, err);
		if (rc != PX_OK)
			goto out_release;
		ec2_params_add(p, "ClientToken", tok);
	}
	if (req->spot) {
		ec2_params_add(p, "InstanceMarketOptions.MarketType", "spot");
		ec2_params_add(p, "InstanceMarketOptions.SpotOptions."
			       "SpotInstanceType", "one-time");
		if (req->max_price_uusd > 0)
			add_price(p, "InstanceMarketOptions.SpotOptions."
				  "MaxPrice", req->max_price_uusd);
	}
	add_tag_spec(p, 1, "instance", req->tags, req->n_tags);
	return PX_OK;
out_release:
	ec2_params_release(p);
	return rc;
}

enum px_err ec2_build_request_spot(const struct ec2_spot_req *req,
				   struct ec2_params *p,
				   struct px_error *err)
{
	char tok[EC2_TOKEN_MAX + 1], b[16];
	enum px_err rc;

	ec2_params_init(p, "RequestSpotInstances");
	rc = add_spec(p, "LaunchSpecification.", &req->spec, err);
	if (rc != PX_OK)
		goto out_release;
	if (req->bid_uusd > 0)
		add_price(p, "SpotPrice", req->bid_uusd);
	snprintf(b, sizeof b, "%d", req->count > 0 ? req->count : 1);
	ec2_params_add(p, "InstanceCount", b);
	ec2_params_add(p, "Type", "one-time");
	if (req->client_token && strlen(req->client_token) > EC2_TOKEN_MAX) {
		rc = px_errorf(err, PX_EINVAL, "client token over 64 "
			       "characters");
		goto out_release;
	}
	if (!req->client_token) {
		rc = ec2_client_token(tok, sizeof tok, err);
		if (rc != PX_OK)
			goto out_release;
	}
	ec2_params_add(p, "ClientToken",
		       req->client_token ? req->client_token : tok);
	add_tag_spec(p, 1, "spot-instances-request", req->tags, req->n_tags);
	return PX_OK;
out_release:
	ec2_params_release(p);
	return rc;
}

/* A Describe* request over ids or filters (or both).  MaxResults is only
 * allowed (and then set to max_results) without ids. */
enum px_err ec2_build_describe(const char *action, const char *id_name,
			       const char *const *ids, size_t n_ids,
			       const struct ec2_filter *filters,
			       size_t n_filters, int max_results,
			       struct ec2_params *p, struct px_error *err)
{
	char b[16];

	ec2_params_init(p, action);
	add_list(p, id_name, ids, n_ids);
	add_filters(p, filters, n_filters);
	if (!n_ids) {
		snprintf(b, sizeof b, "%d", max_results);
		ec2_params_add(p, "MaxResults", b);
	}
	return params_check(p, action, err);
}

enum px_err ec2_build_id_call(const char *action, const char *id_name,
			      const char *const *ids, size_t n_ids,
			      struct ec2_params *p, struct px_error *err)
{
	if (!n_ids)
		return px_errorf(err, PX_EINVAL, "%s: no ids", action);
	if (n_ids > 1000)
		return px_errorf(err, PX_EINVAL, "%s: %zu ids, over 1000",
				 action, n_ids);
	ec2_params_init(p, action);
	add_list(p, id_name, ids, n_ids);
	return params_check(p, action, err);
}

enum px_err ec2_build_create_tags(const char *const *resource_ids,
				  size_t n_ids, const struct ec2_tag *tags,
				  size_t n_tags, struct ec2_params *p,
				  struct px_error *err)
{
	if (!n_ids || !n_tags || n_ids > 1000 || n_tags > 50)
		return px_errorf(err, PX_EINVAL, "CreateTags: %zu resources, "
				 "%zu tags (1..1000, 1..50)", n_ids, n_tags);
	ec2_params_init(p, "CreateTags");
	add_list(p, "ResourceId", resource_ids, n_ids);
	for (size_t i = 0; i < n_tags; i++) {
		ec2_params_addf(p, tags[i].key, "Tag.%zu.Key", i + 1);
		ec2_params_addf(p, tags[i].value, "Tag.%zu.Value", i + 1);
	}
	return params_check(p, "CreateTags", err);
}

/* ------------------------------------------------------------ parsers */

static bool is_item(const xmlNode *n)
{
	return n->type == XML_ELEMENT_NODE &&
	       strcmp((const char *)n->name, "item") == 0;
}

static size_t count_items(const xmlNode *set)
{
	size_t n = 0;

	if (set)
		for (const xmlNode *k = set->children; k; k = k->next)
			n += is_item(k);
	return n;
}

static enum px_err parse_time_field(const xmlNode *n, const char *name,
				    int64_t *ret, struct px_error *err)
{
	char b[64];
	enum px_err rc = ec2_xml_text(n, name, b, sizeof b, err);

	*ret = 0;
	if (rc != PX_OK || !b[0])
		return rc;
	if (px_parse_time(b, strlen(b), ret) != PX_OK)
		return px_errorf(err, PX_EPROTO, "field '%s': bad time '%s'",
				 name, b);
	return PX_OK;
}

static enum px_err parse_tags(const xmlNode *n, struct ec2_tag **ret,
			      size_t *ret_n, struct px_error *err)
{
	const xmlNode *set = ec2_xml_child(n, "tagSet");
	size_t cnt = count_items(set), i = 0;
	struct ec2_tag *v;
	enum px_err rc = PX_OK;

	*ret = NULL;
	*ret_n = 0;
	if (!cnt)
		return PX_OK;
	v = px_calloc(cnt, sizeof *v);
	if (!v)
		return px_errorf(err, PX_ENOMEM, "tags");
	for (const xmlNode *k = set->children; k && rc == PX_OK; k = k->next) {
		if (!is_item(k))
			continue;
		rc = ec2_xml_text(k, "key", v[i].key, sizeof v[i].key, err);
		if (rc == PX_OK)
			rc = ec2_xml_text(k, "value", v[i].value,
					  sizeof v[i].value, err);
		i++;
	}
	if (rc != PX_OK) {
		free(v);
		return rc;
	}
	*ret = v;
	*ret_n = cnt;
	return PX_OK;
}

#define TXT(node, name, field) \
	(rc == PX_OK ? (rc = ec2_xml_text(node, name, field, sizeof field, \
					  err)) : rc)

int64_t ec2_transition_time(const char *reason)
{
	/* "User initiated (2026-11-27 04:00:00 GMT)": the last parenthesis
	 * holds the time, always in GMT.  Other reasons carry none. */
	static const char tail[] = " GMT)";
	const char *open = strrchr(reason, '(');
	size_t n;
	int64_t t;

	if (!open)
		return -1;
	open++;
	n = strlen(open);
	if (n < sizeof tail ||
	    strcmp(open + n - (sizeof tail - 1), tail) != 0)
		return -1;
	n -= sizeof tail - 1;
	/* exactly "YYYY-MM-DD HH:MM:SS": px_parse_time alone would also
	 * take a bare date or an offset */
	if (n != 19 || open[10] != ' ' ||
	    px_parse_time(open, n, &t) != PX_OK)
		return -1;
	return t;
}

static enum px_err parse_instance(const xmlNode *n, struct ec2_instance *i,
				  struct px_error *err)
{
	const xmlNode *st = ec2_xml_child(n, "instanceState");
	enum px_err rc = PX_OK;
	char code[16];

	TXT(n, "instanceId", i->id);
	TXT(n, "imageId", i->image_id);
	TXT(n, "instanceType", i->type);
	TXT(ec2_xml_child(n, "placement"), "availabilityZone", i->zone);
	TXT(st, "name", i->state);
	TXT(st, "code", code);
	TXT(ec2_xml_child(n, "stateReason"), "code", i->state_reason_code);
	ec2_xml_text_cut(n, "reason", i->transition_reason,
			 sizeof i->transition_reason);
	i->transition_s = ec2_transition_time(i->transition_reason);
	TXT(n, "privateIpAddress", i->private_ip);
	TXT(n, "ipAddress", i->public_ip);
	TXT(n, "instanceLifecycle", i->lifecycle);
	TXT(n, "spotInstanceRequestId", i->spot_request_id);
	TXT(n, "clientToken", i->client_token);
	if (rc == PX_OK)
		rc = parse_time_field(n, "launchTime", &i->launch_time_s, err);
	if (rc == PX_OK)
		i->state_code = code[0] ? (int)strtol(code, NULL, 10) & 0xff :
			-1;
	if (rc == PX_OK && !i->id[0])
		rc = px_errorf(err, PX_EPROTO, "instance without instanceId");
	if (rc == PX_OK)
		rc = parse_tags(n, &i->tags, &i->n_tags, err);
	return rc;
}

void ec2_instance_list_release(struct ec2_instance_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].tags);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Append the instances of one instancesSet to l. */
static enum px_err append_instances(const xmlNode *set,
				    struct ec2_instance_list *l,
				    struct px_error *err)
{
	size_t cnt = count_items(set);
	struct ec2_instance *v;

	if (!cnt)
		return PX_OK;
	v = px_reallocarray(l->v, l->n + cnt, sizeof *v);
	if (!v)
		return px_errorf(err, PX_ENOMEM, "instances");
	l->v = v;
	for (const xmlNode *k = set->children; k; k = k->next) {
		enum px_err rc;

		if (!is_item(k))
			continue;
		memset(&l->v[l->n], 0, sizeof l->v[l->n]);
		rc = parse_instance(k, &l->v[l->n], err);
		if (rc != PX_OK) {
			free(l->v[l->n].tags);
			return rc;
		}
		l->n++;
	}
	return PX_OK;
}

enum px_err ec2_parse_instances(const xmlNode *root,
				struct ec2_instance_list *ret,
				struct px_error *err)
{
	const xmlNode *rs = ec2_xml_child(root, "reservationSet");
	enum px_err rc = PX_OK;

	if (rs) {
		for (const xmlNode *k = rs->children; k && rc == PX_OK;
		     k = k->next)
			if (is_item(k))
				rc = append_instances(
					ec2_xml_child(k, "instancesSet"), ret,
					err);
	} else {
		rc = append_instances(ec2_xml_child(root, "instancesSet"), ret,
				      err);
	}
	return rc;
}

void ec2_spot_request_list_release(struct ec2_spot_request_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].tags);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static enum px_err parse_sir(const xmlNode *n, struct ec2_spot_request *r,
			     struct px_error *err)
{
	const xmlNode *st = ec2_xml_child(n, "status");
	enum px_err rc = PX_OK;
	char price[32];

	TXT(n, "spotInstanceRequestId", r->id);
	TXT(n, "state", r->state);
	TXT(st, "code", r->status_code);
	TXT(st, "message", r->status_message);
	TXT(ec2_xml_child(n, "fault"), "code", r->fault_code);
	TXT(n, "instanceId", r->instance_id);
	TXT(ec2_xml_child(n, "launchSpecification"), "instanceType", r->type);
	TXT(n, "launchedAvailabilityZone", r->zone);
	TXT(n, "spotPrice", price);
	if (rc == PX_OK)
		rc = parse_time_field(n, "createTime", &r->create_time_s, err);
	if (rc == PX_OK)
		rc = parse_time_field(st, "updateTime", &r->update_time_s,
				      err);
	r->price_uusd = -1;
	if (rc == PX_OK && price[0] &&
	    px_parse_usd(price, strlen(price), &r->price_uusd) != PX_OK)
		rc = px_errorf(err, PX_EPROTO, "field 'spotPrice': bad price "
			       "'%s'", price);
	if (rc == PX_OK && !r->id[0])
		rc = px_errorf(err, PX_EPROTO, "spot request without id");
	if (rc == PX_OK)
		rc = parse_tags(n, &r->tags, &r->n_tags, err);
	return rc;
}

enum px_err ec2_parse_spot_requests(const xmlNode *root,
				    struct ec2_spot_request_list *ret,
				    struct px_error *err)
{
	const xmlNode *set = ec2_xml_child(root, "spotInstanceRequestSet");
	size_t cnt = count_items(set);
	struct ec2_spot_request *v;

	if (!cnt)
		return PX_OK;
	v = px_reallocarray(ret->v, ret->n + cnt, sizeof *v);
	if (!v)
		return px_errorf(err, PX_ENOMEM, "spot requests");
	ret->v = v;
	for (const xmlNode *k = set->children; k; k = k->next) {
		enum px_err rc;

		if (!is_item(k))
			continue;
		memset(&ret->v[ret->n], 0, sizeof ret->v[ret->n]);
		rc = parse_sir(k, &ret->v[ret->n], err);
		if (rc != PX_OK) {
			free(ret->v[ret->n].tags);
			return rc;
		}
		ret->n++;
	}
	return PX_OK;
}

enum px_err ec2_parse_next_token(const xmlNode *root, char **ret,
				 struct px_error *err)
{
	const xmlNode *n = ec2_xml_child(root, "nextToken");
	xmlChar *s = n ? xmlNodeGetContent(n) : NULL;
	char *out;

	if (s && strlen((const char *)s) > 64 * 1024) {
		xmlFree(s);
		return px_errorf(err, PX_ETOOBIG, "nextToken over 64 KiB");
	}
	out = strdup(s ? (const char *)s : "");
	xmlFree(s);
	if (!out)
		return px_errorf(err, PX_ENOMEM, "nextToken");
	*ret = out;
	return PX_OK;
}

enum px_err ec2_parse_spot_prices(const xmlNode *root, uint64_t *index,
				  trace_record_fn fn, void *ctx,
				  struct px_error *err)
{
	const xmlNode *set = ec2_xml_child(root, "spotPriceHistorySet");

	if (!set)
		return PX_OK;
	for (const xmlNode *k = set->children; k; k = k->next) {
		char zone[EC2_NAME_MAX], type[EC2_NAME_MAX], prod[EC2_NAME_MAX];
		char price[32];
		struct trace_record r;
		enum px_err rc = PX_OK;

		if (!is_item(k))
			continue;
		memset(&r, 0, sizeof r);
		TXT(k, "availabilityZone", zone);
		TXT(k, "instanceType", type);
		TXT(k, "productDescription", prod);
		TXT(k, "spotPrice", price);
		if (rc == PX_OK)
			rc = parse_time_field(k, "timestamp", &r.t_s, err);
		if (rc == PX_OK && (!zone[0] || !type[0] || !prod[0] ||
				    !price[0]))
			rc = px_errorf(err, PX_EPROTO, "price record %llu: "
				       "missing field",
				       (unsigned long long)*index);
		if (rc == PX_OK && px_parse_usd(price, strlen(price),
						&r.price_uusd) != PX_OK)
			rc = px_errorf(err, PX_EPROTO, "price record %llu: "
				       "bad spotPrice '%s'",
				       (unsigned long long)*index, price);
		if (rc != PX_OK)
			return rc;
		r.zone = zone;
		r.type = type;
		r.product = prod;
		r.index = (*index)++;
		rc = fn(&r, ctx, err);
		if (rc != PX_OK)
			return rc;
	}
	return PX_OK;
}
