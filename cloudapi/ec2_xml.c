/* ec2_xml.c -- EC2 response XML with libxml2: success documents, the
 * <Response><Errors> error shape, and small tree helpers.  Network access
 * and entity substitution are off; parser messages are not printed.
 */
#include <string.h>

#include <libxml/parser.h>

#include "ec2_int.h"

static bool is_el(const xmlNode *n, const char *name)
{
	return n && n->type == XML_ELEMENT_NODE &&
	       strcmp((const char *)n->name, name) == 0;
}

xmlNode *ec2_xml_child(const xmlNode *n, const char *name)
{
	if (!n)
		return NULL;
	for (xmlNode *k = n->children; k; k = k->next)
		if (is_el(k, name))
			return k;
	return NULL;
}

/* Copy the text content of node n (may be NULL: "") into buf. */
static enum px_err node_text(const xmlNode *n, const char *name, char *buf,
			     size_t len, struct px_error *err)
{
	xmlChar *s;
	size_t sl;

	buf[0] = '\0';
	if (!n)
		return PX_OK;
	s = xmlNodeGetContent(n);
	if (!s)
		return PX_OK;
	sl = strlen((const char *)s);
	if (sl >= len) {
		xmlFree(s);
		return px_errorf(err, PX_ETOOBIG,
				 "field '%s': %zu bytes, over %zu", name, sl,
				 len - 1);
	}
	memcpy(buf, s, sl + 1);
	xmlFree(s);
	return PX_OK;
}

enum px_err ec2_xml_text(const xmlNode *n, const char *name, char *buf,
			 size_t len, struct px_error *err)
{
	return node_text(ec2_xml_child(n, name), name, buf, len, err);
}

void ec2_xml_text_cut(const xmlNode *n, const char *name, char *buf,
		      size_t len)
{
	const xmlNode *k = ec2_xml_child(n, name);
	xmlChar *s = k ? xmlNodeGetContent(k) : NULL;
	size_t sl = s ? strlen((const char *)s) : 0;

	if (sl >= len) {
		sl = len - 1;
		/* back to the start of a character, not inside one */
		while (sl > 0 && (s[sl] & 0xc0) == 0x80)
			sl--;
	}
	if (sl)
		memcpy(buf, s, sl);
	buf[sl] = '\0';
	xmlFree(s);
}

static void parse_error_doc(const xmlNode *root, struct ec2_aws_error *aws)
{
	const xmlNode *e = ec2_xml_child(ec2_xml_child(root, "Errors"),
					 "Error");

	/* This is already an error path: an over-long code or request id is
	 * dropped rather than failing (a cut code could name another error),
	 * an over-long message is cut. */
	if (node_text(ec2_xml_child(e, "Code"), "Code", aws->code,
		      sizeof aws->code, NULL) != PX_OK)
		aws->code[0] = '\0';
	ec2_xml_text_cut(e, "Message", aws->message, sizeof aws->message);
	if (node_text(ec2_xml_child(root, "RequestID"), "RequestID",
		      aws->request_id, sizeof aws->request_id, NULL) != PX_OK)
		aws->request_id[0] = '\0';
}

enum px_err ec2_xml_parse(const char *body, size_t len, long http_status,
			  xmlDoc **ret_doc, struct ec2_aws_error *aws,
			  struct px_error *err)
{
	xmlDoc *doc = NULL;
	xmlNode *root;

	if (len > INT32_MAX)
		return px_errorf(err, PX_ETOOBIG, "response of %zu bytes", len);
	if (len > 0)
		doc = xmlReadMemory(body, (int)len, "ec2-response.xml", NULL,
				    XML_PARSE_NONET | XML_PARSE_NOERROR |
					    XML_PARSE_NOWARNING);
	root = doc ? xmlDocGetRootElement(doc) : NULL;
	if (!root) {
		xmlFreeDoc(doc);
		if (http_status != 200)
			return px_errorf(err, PX_EHTTP,
					 "http %ld with %s body", http_status,
					 len ? "a non-xml" : "an empty");
		return px_errorf(err, PX_EPROTO,
				 "malformed or truncated xml response "
				 "(%zu bytes)", len);
	}
	if (is_el(root, "Response") && ec2_xml_child(root, "Errors")) {
		parse_error_doc(root, aws);
		xmlFreeDoc(doc);
		return px_errorf(err, PX_EAWS, "aws error '%s'", aws->code);
	}
	if (http_status != 200) {
		xmlFreeDoc(doc);
		return px_errorf(err, PX_EHTTP, "http %ld without an error "
				 "document", http_status);
	}
	*ret_doc = doc;
	return PX_OK;
}
