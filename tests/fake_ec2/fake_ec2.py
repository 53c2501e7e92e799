#!/usr/bin/python3
"""fake_ec2.py -- a stateful fake of the EC2 Query API and of IMDSv2, for tests.

Listens on 127.0.0.1 only, on a free port it picks itself, and prints
"PORT <n>" on stdout.  It exits by itself after --timeout seconds, or when its
stdin reaches end of file (the parent died or closed the pipe).

Every EC2 request's SigV4 signature is recomputed with botocore (Debian's
python3-botocore: an implementation independent of libcurl) and rejected as
AWS does: unknown key -> AuthFailure/401, bad signature ->
SignatureDoesNotMatch/403, X-Amz-Date off by more than 15 min ->
RequestExpired/400.

Routes: POST / (EC2), PUT /latest/api/token and GET /latest/... (IMDSv2),
GET|POST /_ctl (control: state, fault injection, spot market).  See
docs/ec2.md for the control commands.
"""
import argparse
import base64
import datetime
import hashlib
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

NS = 'http://ec2.amazonaws.com/doc/2016-11-15/'
BODY_MAX = 1 << 20
STATE_CODES = {'pending': 0, 'running': 16, 'shutting-down': 32,
               'terminated': 48, 'stopping': 64, 'stopped': 80}

LOCK = threading.RLock()
S = {}


def reset(region):
    S.clear()
    S.update({
        'region': region,
        'keys': {'AKIDEXAMPLE': {'secret': 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'token': None}},
        'clock_offset': 0,
        'faults': [],
        'calls': {},        # op -> requests that reached the op
        'attempts': {},     # op -> requests received (any outcome)
        'rejected': {},     # error code -> count (auth failures)
        'last_headers': {},
        'instances': {},    # id -> dict
        'order': [],        # instance ids in creation order
        'spot': {},         # sir id -> dict
        'spot_order': [],
        'tokens': {},       # (op, ClientToken) -> (fingerprint, result ids)
        'prices': [],       # spot price history records
        'market': {},       # instance type -> current spot price (float)
        'trace': {},        # instance type -> list of future prices
        'seq': 0,
        'imds': {'tokens': {}, 'instance_action': None, 'rebalance': None,
                 'bind': None, 'role': 'worker-role', 'cred_ttl': 6 * 3600,
                 'cred_seq': 0, 'require_token': True, 'puts': 0, 'gets': 0},
    })


def now():
    return time.time() + S['clock_offset']


def iso(t, ms=True):
    d = datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc)
    return d.strftime('%Y-%m-%dT%H:%M:%S') + ('.000Z' if ms else 'Z')


def parse_iso(s):
    s = s.strip().replace('Z', '+00:00')
    d = datetime.datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return d.timestamp()


def next_id(prefix):
    S['seq'] += 1
    return '%s-%017x' % (prefix, 0xf000 + S['seq'])


class AwsError(Exception):
    def __init__(self, code, status, message):
        super().__init__(code)
        self.code, self.status, self.message = code, status, message


def err_xml(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            '<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>'
            % (escape(code), escape(message), uuid.uuid4()))


def ok_xml(op, inner):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s">\n<requestId>%s</requestId>\n%s\n</%sResponse>'
            % (op, NS, uuid.uuid4(), inner, op))


def el(name, value):
    if value is None:
        return ''
    if value == '':
        return '<%s/>' % name
    return '<%s>%s</%s>' % (name, escape(str(value)), name)


# ------------------------------------------------------------ request helpers
def plist(p, prefix):
    out, i = [], 1
    while prefix + '.%d' % i in p:
        out.append(p[prefix + '.%d' % i])
        i += 1
    return out


def filters(p):
    out, i = [], 1
    while 'Filter.%d.Name' % i in p:
        out.append((p['Filter.%d.Name' % i], plist(p, 'Filter.%d.Value' % i)))
        i += 1
    return out


def tags_of(p, prefix):
    out, i = [], 1
    while '%s.%d.Key' % (prefix, i) in p:
        out.append((p['%s.%d.Key' % (prefix, i)], p.get('%s.%d.Value' % (prefix, i), '')))
        i += 1
    return out


def tag_specs(p, rtype):
    out, i = [], 1
    while 'TagSpecification.%d.ResourceType' % i in p:
        if p['TagSpecification.%d.ResourceType' % i] == rtype:
            out += tags_of(p, 'TagSpecification.%d.Tag' % i)
        i += 1
    return out


def page(items, p, lo=5, hi=1000):
    start = 0
    tok = p.get('NextToken')
    if tok:
        try:
            start = int(base64.b64decode(tok).decode().split(':')[1])
        except Exception:
            raise AwsError('InvalidParameterValue', 400, 'invalid NextToken')
    n = hi
    if 'MaxResults' in p:
        n = int(p['MaxResults'])
        if n < lo or n > hi:
            raise AwsError('InvalidParameterValue', 400, 'MaxResults must be %d..%d' % (lo, hi))
    chunk = items[start:start + n]
    nxt = ''
    if start + n < len(items):
        nxt = base64.b64encode(('off:%d' % (start + n)).encode()).decode()
    return chunk, '<nextToken>%s</nextToken>' % nxt if nxt else '<nextToken/>'


def match_filters(obj, flts, getters):
    for name, values in flts:
        if name.startswith('tag:'):
            v = dict(obj['tags']).get(name[4:])
        elif name == 'tag-key':
            if not any(k in values for k, _ in obj['tags']):
                return False
            continue
        elif name in getters:
            v = getters[name](obj)
        else:
            raise AwsError('InvalidParameterValue', 400, 'The filter \'%s\' is invalid' % name)
        if v is None or str(v) not in values:
            return False
    return True


def tagset(tags):
    return '<tagSet>%s</tagSet>' % ''.join(
        '<item>%s%s</item>' % (el('key', k), el('value', v)) for k, v in tags)


def require(p, *names):
    for n in names:
        if not p.get(n):
            raise AwsError('MissingParameter', 400, 'The request must contain the parameter %s' % n)


def fingerprint(p):
    return hashlib.sha256(json.dumps(sorted((k, v) for k, v in p.items()
                                            if k != 'ClientToken')).encode()).hexdigest()


def idempotent(op, p):
    tok = p.get('ClientToken')
    if not tok:
        return None, None
    if len(tok) > 64:
        raise AwsError('InvalidParameterValue', 400, 'ClientToken is longer than 64')
    prev = S['tokens'].get((op, tok))
    fp = fingerprint(p)
    if prev and prev[0] != fp:
        raise AwsError('IdempotentParameterMismatch', 400,
                       'Arguments on this idempotent request are inconsistent with arguments used in previous request(s).')
    return (op, tok, fp), (prev[1] if prev else None)


def price_of(s):
    try:
        v = float(s)
    except ValueError:
        raise AwsError('InvalidParameterValue', 400, 'invalid price %r' % s)
    if v < 0:
        raise AwsError('InvalidParameterValue', 400, 'invalid price %r' % s)
    return v


# ------------------------------------------------------------ instances
def new_instance(p, prefix, spot, bid, sir):
    require(p, prefix + 'ImageId', prefix + 'InstanceType')
    iid = next_id('i')
    inst = {'id': iid, 'image': p[prefix + 'ImageId'], 'type': p[prefix + 'InstanceType'],
            'zone': p.get(prefix + 'Placement.AvailabilityZone') or S['region'] + 'a',
            'state': 'running', 'reason_code': None, 'launch': now(),
            'spot': spot, 'bid': bid, 'sir': sir, 'token': p.get('ClientToken'),
            'tags': [], 'user_data': p.get(prefix + 'UserData'), 'key': p.get(prefix + 'KeyName'),
            'marked': False}
    S['instances'][iid] = inst
    S['order'].append(iid)
    return inst


def inst_xml(i):
    return ('<item>%s%s<instanceState><code>%d</code><name>%s</name></instanceState>'
            '%s%s%s<placement>%s<tenancy>default</tenancy></placement>%s%s%s%s%s%s%s</item>' % (
                el('instanceId', i['id']), el('imageId', i['image']), STATE_CODES[i['state']], i['state'],
                el('privateDnsName', 'ip-10-0-0-%d.ec2.internal' % (hash(i['id']) % 250)),
                el('instanceType', i['type']), el('launchTime', iso(i['launch'])),
                el('availabilityZone', i['zone']),
                el('privateIpAddress', '10.0.0.%d' % (int(i['id'][-4:], 16) % 250 + 2)),
                el('keyName', i['key']),
                ('<stateReason>%s%s</stateReason>' % (el('code', i['reason_code']), el('message', i['reason_code']))
                 if i['reason_code'] else ''),
                el('instanceLifecycle', 'spot' if i['spot'] else None),
                el('spotInstanceRequestId', i['sir']), el('clientToken', i['token'] or ''),
                tagset(i['tags'])))


def op_run_instances(p):
    require(p, 'ImageId', 'InstanceType', 'MinCount', 'MaxCount')
    key, prev = idempotent('RunInstances', p)
    if prev is None:
        n = int(p['MaxCount'])
        if n < 1 or n > 20 or int(p['MinCount']) > n:
            raise AwsError('InvalidParameterValue', 400, 'bad MinCount/MaxCount')
        spot = p.get('InstanceMarketOptions.MarketType') == 'spot'
        bid = None
        if spot and p.get('InstanceMarketOptions.SpotOptions.MaxPrice'):
            bid = price_of(p['InstanceMarketOptions.SpotOptions.MaxPrice'])
            if bid < S['market'].get(p['InstanceType'], 0.03):
                raise AwsError('SpotMaxPriceTooLow', 400,
                               'Your Spot request price of %s is lower than the minimum required Spot request fulfillment price of %s.'
                               % (p['InstanceMarketOptions.SpotOptions.MaxPrice'], S['market'].get(p['InstanceType'], 0.03)))
        ids, rid = [], next_id('r')
        for _ in range(n):
            inst = new_instance(p, '', spot, bid, next_id('sir') if spot else None)
            inst['tags'] = tag_specs(p, 'instance')
            inst['state'] = 'pending'
            inst['rid'] = rid
            ids.append(inst['id'])
        if key:
            S['tokens'][key[:2]] = (key[2], ids)
        prev = ids
    insts = [S['instances'][i] for i in prev]
    return ('<reservationId>%s</reservationId><ownerId>123456789012</ownerId><groupSet/>'
            '<instancesSet>%s</instancesSet>' % (insts[0].get('rid', 'r-0'), ''.join(inst_xml(i) for i in insts)))


def op_describe_instances(p):
    ids = plist(p, 'InstanceId')
    if ids and 'MaxResults' in p:
        raise AwsError('InvalidParameterCombination', 400,
                       'The parameter instancesSet cannot be used with the parameter maxResults')
    for i in ids:
        if not i.startswith('i-'):
            raise AwsError('InvalidInstanceID.Malformed', 400, 'Invalid id: "%s"' % i)
        if i not in S['instances']:
            raise AwsError('InvalidInstanceID.NotFound', 400, "The instance ID '%s' does not exist" % i)
    sel = ids or S['order']
    getters = {'instance-state-name': lambda o: o['state'], 'instance-type': lambda o: o['type'],
               'instance-lifecycle': lambda o: 'spot' if o['spot'] else None,
               'spot-instance-request-id': lambda o: o['sir'], 'client-token': lambda o: o['token'],
               'availability-zone': lambda o: o['zone'], 'instance-id': lambda o: o['id']}
    items = [S['instances'][i] for i in sel if match_filters(S['instances'][i], filters(p), getters)]
    chunk, nt = page(items, p)
    res = ''.join('<item><reservationId>%s</reservationId><ownerId>123456789012</ownerId><groupSet/>'
                  '<instancesSet>%s</instancesSet></item>' % (i.get('rid', 'r-0'), inst_xml(i)) for i in chunk)
    for i in chunk:  # pending becomes running once seen
        if i['state'] == 'pending':
            i['state'] = 'running'
    return '<reservationSet>%s</reservationSet>%s' % (res, nt)


def op_terminate_instances(p):
    ids = plist(p, 'InstanceId')
    require(p, 'InstanceId.1')
    for i in ids:
        if i not in S['instances']:
            raise AwsError('InvalidInstanceID.NotFound', 400, "The instance ID '%s' does not exist" % i)
    out = ''
    for i in ids:
        inst = S['instances'][i]
        prev = inst['state']
        if prev != 'terminated':
            inst['state'] = 'terminated'
            inst['reason_code'] = 'Client.UserInitiatedShutdown'
        out += ('<item>%s<currentState><code>%d</code><name>%s</name></currentState>'
                '<previousState><code>%d</code><name>%s</name></previousState></item>'
                % (el('instanceId', i), 48 if prev == 'terminated' else 32,
                   'terminated' if prev == 'terminated' else 'shutting-down', STATE_CODES[prev], prev))
    return '<instancesSet>%s</instancesSet>' % out


def op_create_tags(p):
    rids = plist(p, 'ResourceId')
    require(p, 'ResourceId.1')
    tags = tags_of(p, 'Tag')
    for r in rids:
        obj = S['instances'].get(r) or S['spot'].get(r)
        if obj is None:
            code = 'InvalidSpotInstanceRequestID.NotFound' if r.startswith('sir-') else 'InvalidID'
            raise AwsError(code, 400, "The ID '%s' is not valid" % r)
        d = dict(obj['tags'])
        d.update(tags)
        if len(d) > 50:
            raise AwsError('TagLimitExceeded', 400, 'too many tags')
        obj['tags'] = list(d.items())
    return '<return>true</return>'


# ------------------------------------------------------------ spot requests
def sir_xml(r):
    return '<item>%s%s%s%s<status>%s%s%s</status>%s<launchSpecification>%s%s</launchSpecification>%s%s%s%s%s</item>' % (
        el('spotInstanceRequestId', r['id']), el('spotPrice', '%.6f' % r['bid']), el('type', 'one-time'),
        el('state', r['state']), el('code', r['code']), el('updateTime', iso(r['update'])),
        el('message', r['code']),
        ('<fault>%s%s</fault>' % (el('code', r['fault']), el('message', r['fault'])) if r.get('fault') else ''),
        el('imageId', r['image']), el('instanceType', r['type']), el('instanceId', r['instance']),
        el('createTime', iso(r['create'])), el('productDescription', 'Linux/UNIX'),
        el('launchedAvailabilityZone', r['zone'] if r['instance'] else None), tagset(r['tags']))


def op_request_spot_instances(p):
    require(p, 'LaunchSpecification.ImageId', 'LaunchSpecification.InstanceType')
    key, prev = idempotent('RequestSpotInstances', p)
    if prev is None:
        n = int(p.get('InstanceCount', '1'))
        if n < 1 or n > 20:
            raise AwsError('InvalidParameterValue', 400, 'bad InstanceCount')
        bid = price_of(p['SpotPrice']) if p.get('SpotPrice') else 10.0
        ids = []
        for _ in range(n):
            sid = next_id('sir')
            S['spot'][sid] = {'id': sid, 'bid': bid, 'state': 'open', 'code': 'pending-evaluation',
                              'update': now(), 'create': now(), 'instance': None, 'params': dict(p),
                              'image': p['LaunchSpecification.ImageId'],
                              'type': p['LaunchSpecification.InstanceType'],
                              'zone': p.get('LaunchSpecification.Placement.AvailabilityZone') or S['region'] + 'a',
                              'tags': tag_specs(p, 'spot-instances-request')}
            S['spot_order'].append(sid)
            ids.append(sid)
        if key:
            S['tokens'][key[:2]] = (key[2], ids)
        prev = ids
    return '<spotInstanceRequestSet>%s</spotInstanceRequestSet>' % ''.join(sir_xml(S['spot'][i]) for i in prev)


def op_describe_spot_instance_requests(p):
    ids = plist(p, 'SpotInstanceRequestId')
    for i in ids:
        if i not in S['spot']:
            raise AwsError('InvalidSpotInstanceRequestID.NotFound', 400,
                           "The spot instance request ID '%s' does not exist" % i)
    getters = {'state': lambda o: o['state'], 'status-code': lambda o: o['code'],
               'instance-id': lambda o: o['instance'], 'spot-instance-request-id': lambda o: o['id']}
    items = [S['spot'][i] for i in (ids or S['spot_order'])
             if match_filters(S['spot'][i], filters(p), getters)]
    chunk, nt = page(items, p)
    return '<spotInstanceRequestSet>%s</spotInstanceRequestSet>%s' % (''.join(sir_xml(r) for r in chunk), nt)


def op_cancel_spot_instance_requests(p):
    ids = plist(p, 'SpotInstanceRequestId')
    require(p, 'SpotInstanceRequestId.1')
    for i in ids:
        if i not in S['spot']:
            raise AwsError('InvalidSpotInstanceRequestID.NotFound', 400,
                           "The spot instance request ID '%s' does not exist" % i)
    out = ''
    for i in ids:
        r = S['spot'][i]
        if r['state'] in ('open', 'active'):
            running = r['instance'] and S['instances'][r['instance']]['state'] in ('pending', 'running')
            r['state'] = 'cancelled'
            r['code'] = 'request-canceled-and-instance-running' if running else 'canceled-before-fulfillment'
            r['update'] = now()
        out += '<item>%s%s</item>' % (el('spotInstanceRequestId', i), el('state', r['state']))
    return '<spotInstanceRequestSet>%s</spotInstanceRequestSet>' % out


def op_describe_spot_price_history(p):
    types = plist(p, 'InstanceType')
    prods = plist(p, 'ProductDescription')
    az = p.get('AvailabilityZone')
    t0 = parse_iso(p['StartTime']) if p.get('StartTime') else None
    t1 = parse_iso(p['EndTime']) if p.get('EndTime') else None
    items = [r for r in S['prices']
             if (not types or r['type'] in types) and (not prods or r['product'] in prods)
             and (not az or r['zone'] == az) and (t0 is None or r['ts'] >= t0)
             and (t1 is None or r['ts'] <= t1)]
    items.sort(key=lambda r: (-r['ts'], r['zone'], r['type']))
    chunk, nt = page(items, p, lo=1)
    return '<spotPriceHistorySet>%s</spotPriceHistorySet>%s' % (''.join(
        '<item>%s%s%s%s%s</item>' % (el('instanceType', r['type']), el('productDescription', r['product']),
                                     el('spotPrice', r['price']), el('timestamp', iso(r['ts'])),
                                     el('availabilityZone', r['zone'])) for r in chunk), nt)


def spot_tick():
    """One step of the spot market: trace prices, fulfil, warn, terminate."""
    for t, tr in S['trace'].items():
        if tr:
            S['market'][t] = tr.pop(0)
    for sid in S['spot_order']:
        r = S['spot'][sid]
        price = S['market'].get(r['type'], 0.03)
        if r['state'] == 'open':
            if r['bid'] < price:
                r['code'] = 'price-too-low'
            else:
                inst = new_instance(r['params'], 'LaunchSpecification.', True, r['bid'], sid)
                r.update(state='active', code='fulfilled', instance=inst['id'])
            r['update'] = now()
    for iid in list(S['order']):
        inst = S['instances'][iid]
        if not inst['spot'] or inst['state'] not in ('pending', 'running'):
            continue
        price = S['market'].get(inst['type'], 0.03)
        r = S['spot'].get(inst['sir'])
        if inst['marked']:
            inst['state'] = 'terminated'
            inst['reason_code'] = 'Server.SpotInstanceTermination'
            if r:
                r.update(state='closed', code='instance-terminated-by-price', update=now())
        elif inst['bid'] is not None and price > inst['bid']:
            inst['marked'] = True
            if r:
                r.update(code='marked-for-termination', update=now())
            im = S['imds']
            if im['bind'] is None:
                im['bind'] = iid
            if im['bind'] == iid:
                im['instance_action'] = {'action': 'terminate', 'time': iso(now() + 120, ms=False)}
                if im['rebalance'] is None:
                    im['rebalance'] = {'noticeTime': iso(now(), ms=False)}


OPS = {'RunInstances': op_run_instances, 'DescribeInstances': op_describe_instances,
       'TerminateInstances': op_terminate_instances, 'CreateTags': op_create_tags,
       'RequestSpotInstances': op_request_spot_instances,
       'DescribeSpotInstanceRequests': op_describe_spot_instance_requests,
       'CancelSpotInstanceRequests': op_cancel_spot_instance_requests,
       'DescribeSpotPriceHistory': op_describe_spot_price_history}


# ------------------------------------------------------------ signature check
def check_signature(method, path, headers, body):
    """Returns None when the request is signed correctly, else an AwsError."""
    authz = headers.get('authorization', '')
    if not authz.startswith('AWS4-HMAC-SHA256 '):
        return AwsError('AuthFailure', 401, 'AWS was not able to validate the provided access credentials')
    parts = {}
    for kv in authz[len('AWS4-HMAC-SHA256 '):].split(','):
        k, _, v = kv.strip().partition('=')
        parts[k] = v
    cred = parts.get('Credential', '').split('/')
    if len(cred) != 5 or cred[4] != 'aws4_request':
        return AwsError('AuthFailure', 401, 'malformed Credential')
    akid, day, region, service = cred[:4]
    key = S['keys'].get(akid)
    if key is None:
        return AwsError('AuthFailure', 401, 'AWS was not able to validate the provided access credentials')
    amzdate = headers.get('x-amz-date', '')
    try:
        t = datetime.datetime.strptime(amzdate, '%Y%m%dT%H%M%SZ').replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return AwsError('AuthFailure', 401, 'missing or bad X-Amz-Date')
    if abs(t - now()) > 900:
        return AwsError('RequestExpired', 400, 'Request has expired.')
    if day != amzdate[:8] or service != 'ec2' or region != S['region']:
        return AwsError('SignatureDoesNotMatch', 403, 'Credential should be scoped to a valid region, service or date')
    if key['token'] is not None and headers.get('x-amz-security-token') != key['token']:
        return AwsError('AuthFailure', 401, 'The security token included in the request is invalid')
    signed = parts.get('SignedHeaders', '').split(';')
    if 'host' not in signed or 'x-amz-date' not in signed:
        return AwsError('SignatureDoesNotMatch', 403, 'host and x-amz-date must be signed')
    if key['token'] is not None and 'x-amz-security-token' not in signed:
        return AwsError('SignatureDoesNotMatch', 403, 'x-amz-security-token must be signed')
    req = AWSRequest(method=method, url='http://%s%s' % (headers.get('host', ''), path), data=body)
    for h in signed:
        if h not in ('x-amz-date', 'x-amz-security-token'):
            if h not in headers:
                return AwsError('SignatureDoesNotMatch', 403, 'signed header %s missing' % h)
            req.headers[h] = headers[h]
    auth = botocore.auth.SigV4Auth(Credentials(akid, key['secret'], key['token']), service, region)
    req.context['timestamp'] = amzdate
    auth._modify_request_before_signing(req)
    cr = auth.canonical_request(req)
    sts = auth.string_to_sign(req, cr)
    sig = auth.signature(sts, req)
    want = 'AWS4-HMAC-SHA256 Credential=%s, SignedHeaders=%s, Signature=%s' % (
        auth.scope(req), auth.signed_headers(auth.headers_to_sign(req)), sig)
    norm = lambda s: s.replace(', ', ',')
    if norm(want) != norm(authz):
        return AwsError('SignatureDoesNotMatch', 403,
                        'The request signature we calculated does not match the signature you provided. '
                        'Check your AWS Secret Access Key and signing method. Consult the service documentation for details.')
    return None


# ------------------------------------------------------------ control
def ctl(cmd):
    if cmd.get('reset'):
        reset(S['region'])
    if 'keys' in cmd:
        for k, v in cmd['keys'].items():
            S['keys'][k] = {'secret': v['secret'], 'token': v.get('token')}
    if 'clock_offset' in cmd:
        S['clock_offset'] = cmd['clock_offset']
    if 'faults' in cmd:
        for f in cmd['faults']:
            f.setdefault('op', '*')
            f.setdefault('count', 1)
            S['faults'].append(f)
    if 'prices' in cmd:
        S['prices'] = [{'zone': r['zone'], 'type': r['type'], 'product': r.get('product', 'Linux/UNIX'),
                        'price': r['price'], 'ts': parse_iso(r['ts']) if isinstance(r['ts'], str) else r['ts']}
                       for r in cmd['prices']]
    if 'market' in cmd:
        S['market'].update(cmd['market'])
    if 'trace' in cmd:
        S['trace'].update({k: list(v) for k, v in cmd['trace'].items()})
    for _ in range(int(cmd.get('spot_tick', 0))):
        spot_tick()
    if 'imds' in cmd:
        S['imds'].update(cmd['imds'])
    if 'instances' in cmd:  # direct edits: {"i-...": {"state": "running"}}
        for iid, upd in cmd['instances'].items():
            S['instances'][iid].update(upd)
    return state()


def state():
    return {'calls': S['calls'], 'attempts': S['attempts'], 'rejected': S['rejected'],
            'faults_left': [f for f in S['faults'] if f['count'] > 0],
            'instances': [{k: S['instances'][i][k] for k in ('id', 'state', 'type', 'spot', 'sir', 'token',
                                                               'tags', 'user_data', 'zone', 'bid')}
                          for i in S['order']],
            'spot': [{k: S['spot'][i][k] for k in ('id', 'state', 'code', 'instance', 'bid', 'tags')}
                     for i in S['spot_order']],
            'last_headers': S['last_headers'], 'imds': {k: v for k, v in S['imds'].items() if k != 'tokens'}}


def take_fault(op):
    for f in S['faults']:
        if f['count'] > 0 and f['op'] in ('*', op):
            if f.get('skip', 0) > 0:  # let this many calls through first
                f['skip'] -= 1
                continue
            f['count'] -= 1
            return dict(f)
    return None


# ------------------------------------------------------------ HTTP
class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'FakeEC2/1.0'
    # headers and body are two writes: without this, Nagle's algorithm and
    # the client's delayed ACK hold each response about 40 ms
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype='text/xml;charset=UTF-8', extra=None, cut=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data if cut is None else data[:cut])
        self.wfile.flush()
        if cut is not None:
            self.close_connection = True

    def read_body(self):
        n = int(self.headers.get('Content-Length') or 0)
        if n < 0 or n > BODY_MAX:
            raise AwsError('InvalidParameterValue', 400, 'body too large')
        return self.rfile.read(n)

    def do_PUT(self):
        with LOCK:
            body = self.read_body()
            if self.path != '/latest/api/token':
                return self.send(404, 'not found', 'text/plain')
            if self.headers.get('X-Forwarded-For'):
                return self.send(403, 'forbidden', 'text/plain')
            try:
                ttl = int(self.headers.get('X-aws-ec2-metadata-token-ttl-seconds', ''))
            except ValueError:
                ttl = 0
            if ttl < 1 or ttl > 21600:
                return self.send(400, 'bad ttl', 'text/plain')
            tok = base64.b64encode(os.urandom(24)).decode()
            S['imds']['tokens'][tok] = time.time() + ttl
            S['imds']['puts'] += 1
            _ = body
            return self.send(200, tok, 'text/plain', {'X-aws-ec2-metadata-token-ttl-seconds': str(ttl)})

    def do_GET(self):
        with LOCK:
            if self.path == '/_ctl':
                return self.send(200, json.dumps(state()), 'application/json')
            return self.imds()

    def imds(self):
        im = S['imds']
        tok = self.headers.get('X-aws-ec2-metadata-token')
        if tok is not None or im['require_token']:
            if tok not in im['tokens'] or im['tokens'][tok] < time.time():
                return self.send(401, 'unauthorized', 'text/plain')
        im['gets'] += 1
        path = self.path
        inst = S['instances'].get(im['bind']) if im['bind'] else None
        iid = inst['id'] if inst else 'i-0123456789abcdef0'
        md = '/latest/meta-data/'
        if path == md + 'spot/instance-action':
            if im['instance_action'] is None:
                return self.send(404, 'not found', 'text/plain')
            return self.send(200, json.dumps(im['instance_action']), 'text/plain')
        if path == md + 'events/recommendations/rebalance':
            if im['rebalance'] is None:
                return self.send(404, 'not found', 'text/plain')
            return self.send(200, json.dumps(im['rebalance']), 'text/plain')
        if path == md + 'iam/security-credentials/':
            return self.send(200, im['role'], 'text/plain')
        if path == md + 'iam/security-credentials/' + im['role']:
            im['cred_seq'] += 1
            akid = 'ASIAFAKEROLE%08d' % im['cred_seq']
            secret = 'RoleSecret%08dEXAMPLEKEYxxxxxxxxxxxxxxx' % im['cred_seq']
            token = 'RoleToken%08d/EXAMPLE+TOKEN==' % im['cred_seq']
            S['keys'][akid] = {'secret': secret, 'token': token}
            doc = {'Code': 'Success', 'LastUpdated': iso(time.time(), ms=False), 'Type': 'AWS-HMAC',
                   'AccessKeyId': akid, 'SecretAccessKey': secret, 'Token': token,
                   'Expiration': iso(time.time() + im['cred_ttl'], ms=False)}
            return self.send(200, json.dumps(doc), 'text/plain')
        if path == md + 'instance-id':
            return self.send(200, iid, 'text/plain')
        if path == md + 'placement/region':
            return self.send(200, S['region'], 'text/plain')
        if path == '/latest/dynamic/instance-identity/document':
            doc = {'accountId': '123456789012', 'architecture': 'x86_64',
                   'availabilityZone': inst['zone'] if inst else S['region'] + 'a',
                   'imageId': 'ami-0abcdef1234567890', 'instanceId': iid,
                   'instanceType': inst['type'] if inst else 'c5.large',
                   'pendingTime': '2024-01-15T09:30:05Z', 'privateIp': '10.0.1.23',
                   'region': S['region'], 'version': '2017-09-30'}
            return self.send(200, json.dumps(doc, indent=2), 'text/plain')
        return self.send(404, 'not found', 'text/plain')

    def do_POST(self):
        try:
            body = self.read_body()
        except AwsError as e:
            return self.send(e.status, err_xml(e.code, e.message))
        if self.path == '/_ctl':
            with LOCK:
                try:
                    out = ctl(json.loads(body or b'{}'))
                except Exception as e:  # a test bug: say so
                    return self.send(400, json.dumps({'error': repr(e)}), 'application/json')
                return self.send(200, json.dumps(out), 'application/json')
        if self.path != '/':
            return self.send(404, 'not found', 'text/plain')
        headers = {k.lower(): v for k, v in self.headers.items()}
        p = dict(parse_qsl(body.decode('utf-8', 'replace'), keep_blank_values=True))
        op = p.get('Action', '')
        with LOCK:
            S['attempts'][op] = S['attempts'].get(op, 0) + 1
            S['last_headers'] = {k: v for k, v in headers.items()
                                 if k not in ('authorization', 'x-amz-security-token')}
            bad = check_signature('POST', self.path, headers, body)
            if bad is not None:
                S['rejected'][bad.code] = S['rejected'].get(bad.code, 0) + 1
                return self.send(bad.status, err_xml(bad.code, bad.message))
            fault = take_fault(op)
        if fault and fault['kind'] == 'slow':
            time.sleep(float(fault.get('delay', 2)))
        if fault and fault['kind'] == 'drop':
            self.close_connection = True
            return
        with LOCK:
            if fault and fault['kind'] == 'error':
                return self.send(int(fault.get('status', 503)),
                                 err_xml(fault.get('code', 'RequestLimitExceeded'),
                                         fault.get('message', 'injected fault')))
            if fault and fault['kind'] == 'status':
                return self.send(int(fault.get('status', 502)), fault.get('body', '<html>Bad Gateway</html>'),
                                 'text/html')
            if p.get('Version') != '2016-11-15':
                return self.send(400, err_xml('InvalidParameterValue', 'bad or missing Version'))
            fn = OPS.get(op)
            if fn is None:
                return self.send(400, err_xml('InvalidAction', 'The action %s is not valid for this web service.' % op))
            S['calls'][op] = S['calls'].get(op, 0) + 1
            try:
                if p.get('DryRun') == 'true':
                    raise AwsError('DryRunOperation', 412, 'Request would have succeeded, but DryRun flag is set.')
                out = ok_xml(op, fn(p))
                status = 200
            except AwsError as e:
                out, status = err_xml(e.code, e.message), e.status
            except (KeyError, ValueError) as e:
                out, status = err_xml('InvalidParameterValue', 'bad parameter: %s' % e), 400
        if fault and fault['kind'] == 'drop_after':
            self.close_connection = True
            return
        if fault and fault['kind'] == 'truncate':
            return self.send(status, out, cut=len(out.encode()) // 2)
        if fault and fault['kind'] == 'truncate_xml':
            return self.send(status, out.encode()[:len(out.encode()) // 2])
        if fault and fault['kind'] == 'malformed':
            return self.send(200, '<?xml version="1.0"?><%sResponse><requestId>x</req' % op)
        if fault and fault['kind'] == 'huge':
            return self.send(200, b'<a>' + b'x' * int(fault.get('size', 17 << 20)) + b'</a>')
        return self.send(status, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--region', default='us-east-1')
    ap.add_argument('--timeout', type=float, default=300)
    a = ap.parse_args()
    reset(a.region)
    ThreadingHTTPServer.request_queue_size = 256  # bursts of new connections
    srv = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda request, client_address: None  # resets from tests

    def watchdog():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except Exception:
            pass
        os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    threading.Timer(a.timeout, lambda: os._exit(0)).start()
    sys.stdout.write('PORT %d\n' % srv.server_address[1])
    sys.stdout.flush()
    srv.serve_forever()


if __name__ == '__main__':
    main()
