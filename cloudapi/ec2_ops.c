/* ec2_ops.c -- typed EC2 operations: request builders (wire names from the
 * botocore 2016-11-15 model), response parsers, pagination, and the
 * blocking wrappers used by CLIs and tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include "ec2.h"

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
				"%sIamInstanceProfile.Name", pre);
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
	TXT(ec2_xml_child(n, "stateReason"), "code", i->state_reason);
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

/* ------------------------------------------------------------ blocking */

/* Run p (a template without NextToken) page after page; page_fn consumes
 * each response. */
typedef enum px_err (*page_fn)(const xmlNode *root, void *ctx,
			       struct px_error *err);

static enum px_err paginate(struct ec2_client *c, const struct ec2_params *p,
			    page_fn fn, void *ctx, struct px_error *err,
			    struct ec2_aws_error *ret_aws)
{
	char *token = NULL;
	enum px_err rc = PX_OK;
	int pages = 0;

	do {
		struct ec2_params q;
		struct ec2_response resp;
		char *next = NULL;

		ec2_params_init(&q, p->kv[1]);
		for (size_t i = 2; i < p->n; i++)
			ec2_params_add(&q, p->kv[2 * i], p->kv[2 * i + 1]);
		q.retry_not_found = p->retry_not_found;
		if (token && *token)
			ec2_params_add(&q, "NextToken", token);
		rc = ec2_call(c, &q, &resp, err, ret_aws);
		if (rc != PX_OK)
			break;
		rc = fn(resp.root, ctx, err);
		if (rc == PX_OK)
			rc = ec2_parse_next_token(resp.root, &next, err);
		ec2_response_release(&resp);
		free(token);
		token = next;
		if (rc == PX_OK && ++pages > 100000)
			rc = px_errorf(err, PX_ETOOBIG, "over 100000 pages");
	} while (rc == PX_OK && token && *token);
	free(token);
	return rc;
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

/* One call, parsed by fn into ctx. */
static enum px_err one_call(struct ec2_client *c, struct ec2_params *p,
			    page_fn fn, void *ctx, struct px_error *err,
			    struct ec2_aws_error *ret_aws)
{
	struct ec2_response resp;
	enum px_err rc = ec2_call(c, p, &resp, err, ret_aws);

	if (rc != PX_OK)
		return rc;
	rc = fn ? fn(resp.root, ctx, err) : PX_OK;
	ec2_response_release(&resp);
	return rc;
}

static enum px_err inst_page(const xmlNode *root, void *ctx,
			     struct px_error *err)
{
	return ec2_parse_instances(root, ctx, err);
}

static enum px_err sir_page(const xmlNode *root, void *ctx,
			    struct px_error *err)
{
	return ec2_parse_spot_requests(root, ctx, err);
}

enum px_err ec2_run_instances(struct ec2_client *c,
			      const struct ec2_run_req *req,
			      struct ec2_instance_list *ret,
			      struct px_error *err,
			      struct ec2_aws_error *ret_aws)
{
	struct ec2_instance_list l = { 0 };
	struct ec2_params p;
	enum px_err rc;

	rc = ec2_build_run_instances(req, &p, err);
	if (rc != PX_OK)
		return rc;
	rc = one_call(c, &p, inst_page, &l, err, ret_aws);
	if (rc != PX_OK) {
		ec2_instance_list_release(&l);
		return rc;
	}
	*ret = l;
	return PX_OK;
}

enum px_err ec2_request_spot_instances(struct ec2_client *c,
				       const struct ec2_spot_req *req,
				       struct ec2_spot_request_list *ret,
				       struct px_error *err,
				       struct ec2_aws_error *ret_aws)
{
	struct ec2_spot_request_list l = { 0 };
	struct ec2_params p;
	enum px_err rc;

	rc = ec2_build_request_spot(req, &p, err);
	if (rc != PX_OK)
		return rc;
	rc = one_call(c, &p, sir_page, &l, err, ret_aws);
	if (rc != PX_OK) {
		ec2_spot_request_list_release(&l);
		return rc;
	}
	*ret = l;
	return PX_OK;
}

/* A Describe* call over ids or filters, every page into list via page:
 * MaxResults is only allowed (and then set to the maximum) without ids. */
struct describe_req {
	const char *action;
	const char *id_name;          /* e.g. "InstanceId" */
	const char *const *ids;
	size_t n_ids;
	const struct ec2_filter *filters;
	size_t n_filters;
	bool retry_not_found;
	page_fn page;
};

static enum px_err describe_all(struct ec2_client *c,
				const struct describe_req *d, void *list,
				struct px_error *err,
				struct ec2_aws_error *ret_aws)
{
	struct ec2_params p;
	enum px_err rc;

	ec2_params_init(&p, d->action);
	add_list(&p, d->id_name, d->ids, d->n_ids);
	add_filters(&p, d->filters, d->n_filters);
	if (!d->n_ids)
		ec2_params_add(&p, "MaxResults", "1000");
	p.retry_not_found = d->retry_not_found;
	rc = p.oom ? px_errorf(err, p.oom, "request parameters") :
		paginate(c, &p, d->page, list, err, ret_aws);
	ec2_params_release(&p);
	return rc;
}

enum px_err ec2_describe_spot_requests(struct ec2_client *c,
				       const char *const *ids, size_t n_ids,
				       const struct ec2_filter *filters,
				       size_t n_filters, bool retry_not_found,
				       struct ec2_spot_request_list *ret,
				       struct px_error *err,
				       struct ec2_aws_error *ret_aws)
{
	struct ec2_spot_request_list l = { 0 };
	const struct describe_req d = {
		.action = "DescribeSpotInstanceRequests",
		.id_name = "SpotInstanceRequestId", .ids = ids, .n_ids = n_ids,
		.filters = filters, .n_filters = n_filters,
		.retry_not_found = retry_not_found, .page = sir_page,
	};
	enum px_err rc;

	rc = describe_all(c, &d, &l, err, ret_aws);
	if (rc != PX_OK) {
		ec2_spot_request_list_release(&l);
		return rc;
	}
	*ret = l;
	return PX_OK;
}

enum px_err ec2_describe_instances(struct ec2_client *c,
				   const char *const *ids, size_t n_ids,
				   const struct ec2_filter *filters,
				   size_t n_filters, bool retry_not_found,
				   struct ec2_instance_list *ret,
				   struct px_error *err,
				   struct ec2_aws_error *ret_aws)
{
	struct ec2_instance_list l = { 0 };
	const struct describe_req d = {
		.action = "DescribeInstances", .id_name = "InstanceId",
		.ids = ids, .n_ids = n_ids, .filters = filters,
		.n_filters = n_filters, .retry_not_found = retry_not_found,
		.page = inst_page,
	};
	enum px_err rc;

	rc = describe_all(c, &d, &l, err, ret_aws);
	if (rc != PX_OK) {
		ec2_instance_list_release(&l);
		return rc;
	}
	*ret = l;
	return PX_OK;
}

static enum px_err id_call(struct ec2_client *c, const char *action,
			   const char *name, const char *const *ids,
			   size_t n_ids, struct px_error *err,
			   struct ec2_aws_error *ret_aws)
{
	struct ec2_params p;

	if (!n_ids)
		return px_errorf(err, PX_EINVAL, "%s: no ids", action);
	if (n_ids > 1000)
		return px_errorf(err, PX_EINVAL, "%s: %zu ids, over 1000",
				 action, n_ids);
	ec2_params_init(&p, action);
	add_list(&p, name, ids, n_ids);
	return one_call(c, &p, NULL, NULL, err, ret_aws);
}

enum px_err ec2_cancel_spot_requests(struct ec2_client *c,
				     const char *const *ids, size_t n_ids,
				     struct px_error *err,
				     struct ec2_aws_error *ret_aws)
{
	return id_call(c, "CancelSpotInstanceRequests",
		       "SpotInstanceRequestId", ids, n_ids, err, ret_aws);
}

enum px_err ec2_terminate_instances(struct ec2_client *c,
				    const char *const *ids, size_t n_ids,
				    struct px_error *err,
				    struct ec2_aws_error *ret_aws)
{
	return id_call(c, "TerminateInstances", "InstanceId", ids, n_ids,
		       err, ret_aws);
}

enum px_err ec2_create_tags(struct ec2_client *c,
			    const char *const *resource_ids, size_t n_ids,
			    const struct ec2_tag *tags, size_t n_tags,
			    struct px_error *err,
			    struct ec2_aws_error *ret_aws)
{
	struct ec2_params p;

	if (!n_ids || !n_tags || n_ids > 1000 || n_tags > 50)
		return px_errorf(err, PX_EINVAL, "CreateTags: %zu resources, "
				 "%zu tags (1..1000, 1..50)", n_ids, n_tags);
	ec2_params_init(&p, "CreateTags");
	add_list(&p, "ResourceId", resource_ids, n_ids);
	for (size_t i = 0; i < n_tags; i++) {
		ec2_params_addf(&p, tags[i].key, "Tag.%zu.Key", i + 1);
		ec2_params_addf(&p, tags[i].value, "Tag.%zu.Value", i + 1);
	}
	return one_call(c, &p, NULL, NULL, err, ret_aws);
}
