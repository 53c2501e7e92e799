#!/usr/bin/python3
"""fake_ec2.py -- a stateful fake of the EC2 Query API and of IMDSv2 that runs
instances, for tests.

Listens on 127.0.0.1 only, on a free port it picks itself, and prints
"PORT <n>" on stdout.  It exits by itself after --timeout real seconds, when
its stdin reaches end of file (the parent died or closed the pipe), or on
SIGTERM/SIGINT; then it prints one summary line on stdout
({"instances_launched": N, "still_running": M, "bad_signatures": B,
"billed_usd": X, "enrolled": E}), writes --record if given and kills every
process group it started.  E counts the instances whose disk holds a job key
that their node got by enrollment (HOME/.proteus/job-N.key in the
instance's folder): the key is never in the user data, so a key there came
over the network.

Instance identity documents are signed as AWS signs them (PKCS#7 signed
data over the document, SHA-256 with an RSA-2048 key, at
dynamic/instance-identity/rsa2048), with a key and self-signed certificate
the fake makes at start and writes to --identity-cert (the daemon's
ec2_identity_cert).  GET /_ctl?cmd=sign&id=I[&forge=1][&region=R] signs a
document for any instance id (forge: with another key, its certificate
inside the message, as a forger would): for tests of refused enrollments.

Every EC2 request's SigV4 signature is recomputed with botocore (Debian's
python3-botocore: an implementation independent of libcurl) and rejected as
AWS does: unknown key -> AuthFailure/401, bad signature ->
SignatureDoesNotMatch/403, X-Amz-Date off by more than 15 min (real time) ->
RequestExpired/400.  Each rejection counts in bad_signatures.

Instances are real: RunInstances makes them pending; --boot-seconds (fake
time) later they are running, get their own IMDSv2 endpoint (a small HTTP
server on a loopback port of their own) and run their user data in a new
session (a process group) under --instance-dir/<id>/.  Terminate and spot
interruptions end them (SIGTERM, SIGKILL --kill-after real seconds later)
and close their bill.  Time is a fake clock:
    fake_now = T0 + (real_now - T0) * K + A
with T0 = --clock-origin, K = --speedup, A = the sum of "advance" commands.

Routes: POST / (EC2), PUT /latest/api/token and GET /latest/... (the legacy
single IMDSv2, not tied to an instance), GET /_ctl?cmd=... and POST /_ctl
(control).  See docs/ec2.md for the options and control commands.
"""
import argparse
import base64
import binascii
import bisect
import collections
import ctypes
import datetime
import hashlib
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit
from xml.sax.saxutils import escape

sys.dont_write_bytecode = True  # nothing written beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fakes'))
import lifecycle  # noqa: E402

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

NS = 'http://ec2.amazonaws.com/doc/2016-11-15/'
BODY_MAX = 1 << 20
USER_DATA_MAX = 16384        # AWS: 16 KB of user data, before base64
LAUNCH_MAX = 1000            # instances per RunInstances call (a fake's bound)
UUSD = 1000000               # micro-USD per USD
HOUR = 3600
MIN_BILL_S = 60
STATE_CODES = {'pending': 0, 'running': 16, 'shutting-down': 32,
               'terminated': 48, 'stopping': 64, 'stopped': 80}
ACTIVE = ('pending', 'running', 'shutting-down')
TAGGABLE = ('instance', 'volume', 'network-interface', 'spot-instances-request')
MSG_SPOT_TERM = ('Server.SpotInstanceTermination: The instance was terminated because the number '
                 'of Spot requests with a maximum price equal to or higher than the Spot price '
                 'exceeded available capacity or because of an increase in the Spot price.')
MSG_USER_TERM = 'Client.UserInitiatedShutdown: User initiated shutdown'
MSG_SPOT_QUOTA = 'Max spot instance count exceeded'
MSG_VCPU_QUOTA = ('You have requested more vCPU capacity than your current vCPU limit of %d allows for the '
                  'instance bucket that the specified instance type belongs to. Please visit '
                  'http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.')
# AWS's vCPU quota groups ("Running On-Demand Standard (A, C, D, H, I, M, R,
# T, Z) instances", "All G and VT Spot Instance Requests", ...), and "other"
# for the families no group names (hpc, mac): bidbrain/pool.h's names
QUOTA_GROUPS = ('standard', 'f', 'g', 'inf', 'p', 'x', 'dl', 'trn', 'other')
NO_LIMIT = {'total': None, 'groups': {}}

LOCK = threading.RLock()
S = {}       # state: cleared by {"reset": true}
CFG = {}     # command-line options: survive a reset
PROCS = {}   # pid of an instance's session leader -> instance (for the reaper)


def reset(region):
    kill_all()
    S.clear()
    S.update({
        'region': region,
        'keys': {'AKIDEXAMPLE': {'secret': 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'token': None}},
        'clock_offset': 0,  # skews the signature check's clock only
        'advance': 0,       # fake seconds added by "advance" commands
        'faults': [],
        'calls': {},        # op -> requests that reached the op
        'attempts': {},     # op -> requests received (any outcome)
        'faulted': {},      # op -> {code (error faults) or kind: injected faults taken}
        'held': 0,          # answers held now (kind "hold") until {"release_held": true}
        'hold': threading.Event(),
        'rejected': {},     # error code -> count (signature check failures)
        'last_headers': {},
        'instances': {},    # id -> dict (every instance ever, vanished too)
        'order': [],        # instance ids in creation order
        'active': [],       # ids not vanished yet
        'spot': {},         # sir id -> dict
        'spot_order': [],
        'tokens': {},       # (op, ClientToken) -> (fingerprint, result ids)
        'prices': [],       # spot price history records
        'pv': 0,            # bumped on every change of 'prices'
        'pidx': (None, {}),  # (pv, {(type, zone): ([ts], [uusd])}) Linux/UNIX only
        'trace': {},        # instance type -> list of future prices (spot_tick)
        'capacity': [],     # injected InsufficientInstanceCapacity
        'limits': {'spot': CFG.get('spot_limit'), 'on_demand': CFG.get('ondemand_limit')},
        'vcpu_limits': {'spot': CFG.get('spot_vcpus', NO_LIMIT),  # parse_vcpu_limit's
                        'on_demand': CFG.get('ondemand_vcpus', NO_LIMIT)},
        'seq': 0,
        'fault_rng': random.Random(CFG.get('seed', 1)),
        'rng': random.Random(CFG.get('seed', 1)),
        'imds': {'tokens': {}, 'instance_action': None, 'rebalance': None,
                 'bind': None, 'role': 'worker-role', 'cred_ttl': 6 * 3600,
                 'cred_seq': 0, 'require_token': True, 'puts': 0, 'gets': 0},
    })
    S['fake_start'] = fnow_s()
    for r in CFG.get('market_init', []):
        add_price(r['type'], r['zone'], r['price'], r['ts'] if r['ts'] is not None else S['fake_start'])


# ------------------------------------------------------------ clock
def fake_now():
    """The fake clock: T0 + (real - T0) * K + A (docs/ec2.md)."""
    t0 = CFG['origin']
    return t0 + (time.time() - t0) * CFG['speedup'] + S.get('advance', 0)


def fnow_s():
    return int(math.floor(fake_now()))


def sig_now():
    """The signature check's clock: real time, skewed by clock_offset."""
    return time.time() + S['clock_offset']


def iso(t, ms=True):
    d = datetime.datetime.fromtimestamp(int(math.floor(t)), datetime.timezone.utc)
    return d.strftime('%Y-%m-%dT%H:%M:%S') + ('.000Z' if ms else 'Z')


def gmt(t):
    d = datetime.datetime.fromtimestamp(int(math.floor(t)), datetime.timezone.utc)
    return d.strftime('%Y-%m-%d %H:%M:%S GMT')


def parse_iso(s):
    s = s.strip().replace('Z', '+00:00')
    d = datetime.datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return d.timestamp()


def time_of(v):
    return parse_iso(v) if isinstance(v, str) else float(v)


def next_id(prefix):
    S['seq'] += 1
    return '%s-%017x' % (prefix, 0xf000 + S['seq'])


# ------------------------------------------------------------ money
def uusd_of(v, what='price'):
    """USD (string or number) -> integer micro-USD, exactly; at most 6 decimals."""
    try:
        d = Decimal(v if isinstance(v, str) else repr(v))
    except (InvalidOperation, TypeError):
        raise ValueError('%s %r is not a number' % (what, v))
    if not d.is_finite() or d < 0 or d > 10 ** 9:
        raise ValueError('%s %r is out of range' % (what, v))
    u = d * UUSD
    if u != u.to_integral_value():
        raise ValueError('%s %r has more than 6 decimals' % (what, v))
    return int(u)


def usd_str(u):
    return '%d.%06d' % divmod(int(u), UUSD)


def usd_short(u):
    s = usd_str(u).rstrip('0')
    return s + '0' if s.endswith('.') else s


# ------------------------------------------------------------ errors and XML
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


def check_tags(tags):
    for k, v in tags:
        if not k or len(k) > 128 or len(v) > 256:
            raise AwsError('InvalidParameterValue', 400, 'Tag key must be 1..128 characters and value at most 256')
        if k.lower().startswith('aws:'):
            raise AwsError('InvalidParameterValue', 400, "Tag keys starting with 'aws:' are reserved for internal use")
    if len(dict(tags)) > 50:
        raise AwsError('TagLimitExceeded', 400, 'The maximum number of tags per resource is 50')


def tag_specs(p, rtype):
    out, i = [], 1
    while 'TagSpecification.%d.ResourceType' % i in p:
        rt = p['TagSpecification.%d.ResourceType' % i]
        if rt not in TAGGABLE:
            raise AwsError('InvalidParameterValue', 400,
                           "'%s' is not a valid taggable resource type for this operation." % rt)
        if rt == rtype:
            out += tags_of(p, 'TagSpecification.%d.Tag' % i)
        i += 1
    check_tags(out)
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


def int_param(p, name):
    try:
        return int(p[name])
    except ValueError:
        raise AwsError('InvalidParameterValue', 400, "Invalid value '%s' for %s" % (p[name], name))


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


def price_param(s):
    try:
        return uusd_of(s)
    except ValueError:
        raise AwsError('InvalidParameterValue', 400, 'invalid price %r' % s)


# ------------------------------------------------------------ spot market
def add_price(itype, zone, price, ts, product='Linux/UNIX'):
    """One DescribeSpotPriceHistory record; the market's price from ts on."""
    u = uusd_of(price)
    S['prices'].append({'zone': zone, 'type': itype, 'product': product,
                        'price': price if isinstance(price, str) else usd_str(u),
                        'uusd': u, 'ts': ts})
    S['pv'] += 1


def zones_of(zone):
    return CFG['zones'] if zone in (None, '*') else [zone]


def set_price_all_zones(itype, price):
    for z in CFG['zones']:
        add_price(itype, z, price, fnow_s())


def price_index():
    pv, idx = S['pidx']
    if pv == S['pv']:
        return idx
    idx = {}
    recs = sorted(((int(math.floor(r['ts'])), i, r) for i, r in enumerate(S['prices'])
                   if r['product'] == 'Linux/UNIX'), key=lambda x: (x[0], x[1]))
    for ts, _, r in recs:
        m = idx.setdefault((r['type'], r['zone']), ([], []))
        m[0].append(ts)
        m[1].append(r['uusd'])
    S['pidx'] = (S['pv'], idx)
    return idx


def price_at(itype, zone, t):
    """Spot price (micro-USD/h) of a market in force at second t."""
    m = price_index().get((itype, zone))
    if m:
        k = bisect.bisect_right(m[0], int(math.floor(t))) - 1
        if k >= 0:
            return m[1][k]
    return CFG['spot_default']


def price_integral(itype, zone, a, b):
    """Sum over the seconds [a, b) of the price in force (micro-USD/h x s)."""
    if b <= a:
        return 0
    m = price_index().get((itype, zone))
    if not m:
        return CFG['spot_default'] * (b - a)
    ts, ps = m
    total, t = 0, a
    k = bisect.bisect_right(ts, a) - 1
    cur = ps[k] if k >= 0 else CFG['spot_default']
    k += 1
    while t < b:
        nxt = ts[k] if k < len(ts) else b
        nxt = min(max(nxt, t), b)
        total += cur * (nxt - t)
        t = nxt
        if k < len(ts) and ts[k] <= t:
            cur = ps[k]
            k += 1
    return total


def ensure_market(itype, zone):
    """A market launched into has a price in the history from the start."""
    m = price_index().get((itype, zone))
    if not m or m[0][0] > fnow_s():
        add_price(itype, zone, usd_str(CFG['spot_default']), S['fake_start'])


def od_price(itype):
    return CFG['ondemand'].get(itype, CFG['ondemand_default'])


# ------------------------------------------------------------ processes
def group_alive(inst):
    pg = inst.get('pgid')
    if pg is None or inst.get('pg_dead'):
        return False
    try:
        os.killpg(pg, 0)
        return True
    except ProcessLookupError:
        inst['pg_dead'] = True
        return False
    except PermissionError:
        return True


def signal_group(inst, sig):
    if group_alive(inst):
        try:
            os.killpg(inst['pgid'], sig)
        except ProcessLookupError:
            inst['pg_dead'] = True


def reap():
    """Collect exited children: session leaders and, as the subreaper, the
    orphans of instance programs (a zombie would keep its group alive)."""
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        inst = PROCS.pop(pid, None)
        if inst is not None:
            inst['exit_status'] = os.waitstatus_to_exitcode(st)
            if inst.get('proc') is not None:
                inst['proc'].returncode = inst['exit_status']


def children():
    """Our child processes: session leaders and adopted orphans."""
    me, out = os.getpid(), []
    try:
        pids = [int(d) for d in os.listdir('/proc') if d.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as f:
                st = f.read()
            if int(st[st.rindex(')') + 2:].split()[1]) == me:
                out.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return out


def kill_all():
    """SIGKILL every instance's group and any other child (orphans that left
    their group reparent to us: we are their subreaper), and reap them, for
    at most 2 s: none outlives the fake, none is left a zombie."""
    insts = list(S.get('instances', {}).values())
    SPAWNQ.clear()
    with SPAWN_LOCK:  # no user data half-started: its process is a child
        pass
    for inst in insts:
        signal_group(inst, signal.SIGKILL)
        stop_imds(inst)
    deadline = time.time() + 2
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not any(group_alive(i) for i in insts) and not children():
            return
        if time.time() > deadline:
            return
        time.sleep(0.01)


def user_data_bytes(inst):
    ud = inst.get('user_data')
    if not ud:
        return b''
    try:
        return base64.b64decode(''.join(ud.split()))
    except (binascii.Error, ValueError):
        return b''


# Instances start their user data on a thread of their own, the spawner,
# outside LOCK: a fleet's instances reach `running` together (500 at one
# tick in bench_ec2_fleet.sh), and 500 fork+execs under LOCK held every
# request -- the instances' own IMDS calls too -- for seconds, past the
# user data's 5 s curl timeout.  SPAWN_LOCK is held across each fork+exec,
# so that finish() and reset() (which take it) never miss a process that
# is being started.
SPAWNQ = collections.deque()   # instances whose user data is due
SPAWN_CV = threading.Condition(LOCK)
SPAWN_LOCK = threading.Lock()


def spawn_soon(inst):
    """Under LOCK: the spawner starts inst's user data."""
    inst['spawning'] = True
    SPAWNQ.append(inst)
    SPAWN_CV.notify()


def spawner():
    while True:
        with LOCK:
            while not SPAWNQ:
                SPAWN_CV.wait()
            inst = SPAWNQ.popleft()
            if inst['state'] != 'running' or CFG.get('finished') or S['instances'].get(inst['id']) is not inst:
                inst['spawning'] = False
                continue
            imds_port = inst['imds_port']
        with SPAWN_LOCK:
            if CFG.get('finished'):
                return
            got = spawn(inst, imds_port)
        with LOCK:
            inst['spawning'] = False
            if got is None:
                continue
            proc = got
            inst['proc'] = proc
            inst['pgid'] = proc.pid
            PROCS[proc.pid] = inst
            if inst['state'] != 'running' or S['instances'].get(inst['id']) is not inst:
                # terminated (or forgotten by a reset) meanwhile
                signal_group(inst, signal.SIGKILL)


def spawn(inst, imds_port):
    """Run the instance's user data as cloud-init would, in its own session
    (the spawner, outside LOCK): its Popen, or None."""
    d = inst['dir']
    try:
        shutil.rmtree(d, ignore_errors=True)  # ids repeat from run to run
        os.makedirs(d, 0o700)
    except OSError as e:
        inst['exit_status'] = 127
        sys.stderr.write('fake_ec2: %s: %s\n' % (d, e))
        return None
    ud = user_data_bytes(inst)
    if not ud:
        return None
    log = os.open(os.path.join(d, 'console.log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        if ud.startswith(b'#!'):
            path = os.path.join(d, 'user-data')
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o700)
            with os.fdopen(fd, 'wb') as f:
                f.write(ud)
            argv = [path]
        else:
            if b'\0' in ud:
                raise ValueError('user data contains a NUL byte')
            argv = ['/bin/sh', '-c', ud.decode('utf-8', 'surrogateescape')]
        env = {'PATH': os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin'), 'HOME': d, 'LANG': 'C',
               'AWS_EC2_METADATA_SERVICE_ENDPOINT': 'http://127.0.0.1:%d/' % imds_port}
        env.update(CFG.get('instance_env', {}))
        return subprocess.Popen(argv, cwd=d, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, close_fds=True, start_new_session=True)
    except (OSError, ValueError) as e:
        os.write(log, ('fake_ec2: cannot run the user data: %s\n' % e).encode())
        inst['exit_status'] = 127
        return None
    finally:
        os.close(log)


# ------------------------------------------------------------ per-instance IMDS
class InstanceImdsServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        pass


def start_imds(inst):
    srv = InstanceImdsServer(('127.0.0.1', 0), InstanceImdsHandler)
    srv.iid = inst['id']
    inst['imds_srv'] = srv
    inst['imds_port'] = srv.server_address[1]
    inst['imds_tokens'] = {}
    threading.Thread(target=srv.serve_forever, kwargs={'poll_interval': 0.5}, daemon=True).start()


def stop_imds(inst):
    srv = inst.pop('imds_srv', None)
    if srv is not None:
        def stop():
            srv.shutdown()
            srv.server_close()
        threading.Thread(target=stop, daemon=True).start()


def identity_doc(inst):
    return {'accountId': '123456789012', 'architecture': 'x86_64',
            'availabilityZone': inst['zone'] if inst else S['region'] + 'a',
            'billingProducts': None, 'devpayProductCodes': None, 'marketplaceProductCodes': None,
            'imageId': inst['image'] if inst else 'ami-0abcdef1234567890',
            'instanceId': inst['id'] if inst else 'i-0123456789abcdef0',
            'instanceType': inst['type'] if inst else 'c5.large',
            'kernelId': None, 'pendingTime': iso(inst['t_launch'], ms=False) if inst else '2024-01-15T09:30:05Z',
            'privateIp': '127.0.0.1' if inst else '10.0.1.23', 'ramdiskId': None,
            'region': S['region'], 'version': '2017-09-30'}


IDENT = {}   # the identity documents' signer, and a forger: (key, cert)
IDENT_ORG = {'signer': 'Fake EC2 instance identity', 'forger': 'Not AWS'}
IDENT_LOCK = threading.Lock()


def ident(which):
    """The signer's or the forger's (key, cert), made at its first use: an
    RSA-2048 key is about 0.45 s of CPU, and most of a run's hundred fakes
    sign nothing (the forger signs for one test)."""
    with IDENT_LOCK:
        if which not in IDENT:
            IDENT[which] = make_signer(IDENT_ORG[which])
        return IDENT[which]


def make_signer(org):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650)).sign(key, hashes.SHA256()))
    return key, cert


def identity_sig(doc, forge=False):
    """The rsa2048 signature of document bytes doc: base64 of PKCS#7 signed
    data holding doc, wrapped at 64 columns as IMDS serves it.  forge: signed
    by the forger, its certificate in the message."""
    key, cert = ident('forger' if forge else 'signer')
    opts = [pkcs7.PKCS7Options.Binary] + ([] if forge else [pkcs7.PKCS7Options.NoCerts])
    der = pkcs7.PKCS7SignatureBuilder().set_data(doc).add_signer(cert, key, hashes.SHA256()).sign(
        serialization.Encoding.DER, opts)
    b = base64.b64encode(der).decode()
    return '\n'.join(b[i:i + 64] for i in range(0, len(b), 64))


def identity_doc_bytes(inst):
    return json.dumps(identity_doc(inst), indent=2).encode()


def enrolled(inst):
    """Whether inst's disk holds a job key its node got by enrollment."""
    d = os.path.join(inst['dir'] or '/nonexistent', '.proteus')
    try:
        return any(n.startswith('job-') and n.endswith('.key') for n in os.listdir(d))
    except OSError:
        return False


def role_credentials(im):
    im['cred_seq'] += 1
    akid = 'ASIAFAKEROLE%08d' % im['cred_seq']
    secret = 'RoleSecret%08dEXAMPLEKEYxxxxxxxxxxxxxxx' % im['cred_seq']
    token = 'RoleToken%08d/EXAMPLE+TOKEN==' % im['cred_seq']
    if CFG.get('role_creds'):
        # fixed ones (--role-credentials): another fake (S3) knows them
        akid, secret, token = CFG['role_creds']
    S['keys'][akid] = {'secret': secret, 'token': token}
    return {'Code': 'Success', 'LastUpdated': iso(time.time(), ms=False), 'Type': 'AWS-HMAC',
            'AccessKeyId': akid, 'SecretAccessKey': secret, 'Token': token,
            'Expiration': iso(time.time() + im['cred_ttl'], ms=False)}


def token_put(handler, tokens):
    """PUT /latest/api/token: (status, body, extra headers)."""
    if handler.headers.get('X-Forwarded-For'):
        return 403, 'forbidden', None
    try:
        ttl = int(handler.headers.get('X-aws-ec2-metadata-token-ttl-seconds', ''))
    except ValueError:
        ttl = 0
    if ttl < 1 or ttl > 21600:
        return 400, 'bad ttl', None
    tok = base64.b64encode(os.urandom(24)).decode()
    tokens[tok] = time.time() + ttl  # real seconds: the programs run in real time
    return 200, tok, {'X-aws-ec2-metadata-token-ttl-seconds': str(ttl)}


def token_ok(handler, tokens):
    tok = handler.headers.get('X-aws-ec2-metadata-token')
    return tok is not None and tok in tokens and tokens[tok] >= time.time()


class InstanceImdsHandler(BaseHTTPRequestHandler):
    """IMDSv2 of one instance (IMDSv1 requests get 401)."""
    protocol_version = 'HTTP/1.1'
    server_version = 'EC2ws'
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, extra=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def path_only(self):
        return '/' + urlsplit(self.path).path.lstrip('/')

    def inst(self):
        inst = S['instances'].get(self.server.iid)
        return inst if inst is not None and inst['state'] in ('running', 'shutting-down') else None

    def do_PUT(self):
        n = int(self.headers.get('Content-Length') or 0)
        if 0 < n <= BODY_MAX:
            self.rfile.read(n)
        with LOCK:
            inst = self.inst()
            if inst is None or self.path_only() != '/latest/api/token':
                return self.send(404, 'not found')
            st, body, extra = token_put(self, inst['imds_tokens'])
            return self.send(st, body, extra)

    def do_GET(self):
        with LOCK:
            advance()
            inst = self.inst()
            if inst is None:
                return self.send(404, 'not found')
            if not token_ok(self, inst['imds_tokens']):
                return self.send(401, 'unauthorized')
            inst['imds_gets'] = inst.get('imds_gets', 0) + 1
            st, body = imds_route(inst, self.path_only())
            return self.send(st, body)


def imds_route(inst, path):
    md = '/latest/meta-data/'
    simple = {
        md + 'instance-id': inst['id'],
        md + 'instance-type': inst['type'],
        md + 'ami-id': inst['image'],
        md + 'reservation-id': inst['rid'],
        md + 'placement/availability-zone': inst['zone'],
        md + 'placement/region': S['region'],
        md + 'local-ipv4': '127.0.0.1',
        md + 'local-hostname': 'ip-127-0-0-1.ec2.internal',
        md + 'instance-life-cycle': 'spot' if inst['spot'] else 'on-demand',
    }
    if path in simple:
        return 200, simple[path]
    if path in (md, md.rstrip('/')):
        return 200, '\n'.join(['ami-id', 'events/', 'iam/', 'instance-id', 'instance-life-cycle',
                               'instance-type', 'local-hostname', 'local-ipv4', 'placement/',
                               'reservation-id'] + (['spot/'] if inst['notice'] else []))
    if path == md + 'spot/instance-action':
        if inst['notice'] is None:
            return 404, 'not found'
        return 200, json.dumps(inst['notice'])
    if path == md + 'events/recommendations/rebalance':
        if inst['rebalance'] is None:
            return 404, 'not found'
        return 200, json.dumps(inst['rebalance'])
    if path == md + 'iam/security-credentials/':
        return 200, S['imds']['role']
    if path == md + 'iam/security-credentials/' + S['imds']['role']:
        return 200, json.dumps(role_credentials(S['imds']))
    if path == '/latest/user-data':
        ud = user_data_bytes(inst)
        return (200, ud) if ud else (404, 'not found')
    if path == '/latest/dynamic/instance-identity/document':
        return 200, identity_doc_bytes(inst)
    if path == '/latest/dynamic/instance-identity/rsa2048':
        inst['identity_fetches'] = inst.get('identity_fetches', 0) + 1
        if 'identity_sig' not in inst:
            inst['identity_sig'] = identity_sig(identity_doc_bytes(inst))
        return 200, inst['identity_sig']
    return 404, 'not found'


# ------------------------------------------------------------ instance lifecycle
def new_instance(p, prefix, spot, bid, sir, zone=None):
    require(p, prefix + 'ImageId', prefix + 'InstanceType')
    iid = next_id('i')
    t = fnow_s()
    itype = p[prefix + 'InstanceType']
    inst = {'id': iid, 'image': p[prefix + 'ImageId'], 'type': itype,
            'zone': zone or p.get(prefix + 'Placement.AvailabilityZone') or CFG['zones'][0],
            'subnet': p.get(prefix + 'SubnetId'),
            'state': 'pending', 'reason_code': 'pending', 'reason_msg': 'pending', 'transition': '',
            'spot': spot, 'bid': bid, 'cap': bid if bid is not None else od_price(itype),
            'od_uusd': od_price(itype), 'sir': sir, 'token': p.get('ClientToken'),
            'tags': [], 'user_data': p.get(prefix + 'UserData'), 'key': p.get(prefix + 'KeyName'),
            'rid': 'r-0', 'marked': False,
            't_launch': t, 'run_at': t + CFG['boot'], 't_running': None, 't_shutdown': None,
            't_terminated': None, 'vanish_at': None, 'vanished': False,
            'bill_start': t if CFG['bill_from'] == 'launch' else None, 't_end': None, 'end_how': None,
            'notice': None, 'rebalance': None, 'deadline': None, 't_random': None,
            'pgid': None, 'exit_status': None, 'kill_at': None, 'imds_port': None, 'dir': None}
    S['instances'][iid] = inst
    S['order'].append(iid)
    S['active'].append(iid)
    if spot:
        ensure_market(inst['type'], inst['zone'])
    return inst


def go_running(inst, at):
    inst['state'] = 'running'
    inst['reason_code'] = inst['reason_msg'] = None
    inst['t_running'] = at
    if inst['bill_start'] is None:
        inst['bill_start'] = int(math.floor(at))
    if inst['spot'] and CFG['interrupt_rate'] > 0:
        u = S['rng'].random()
        inst['t_random'] = at + -math.log(1.0 - u) / CFG['interrupt_rate'] * HOUR
    start_imds(inst)
    if CFG['exec']:
        inst['dir'] = os.path.join(CFG['instance_dir'], inst['id'])
        spawn_soon(inst)


def give_notice(inst, at, warning, rebalance):
    """A spot interruption notice at fake time at; terminated at + warning."""
    if inst['notice'] is not None:
        return False
    inst['notice'] = {'action': 'terminate', 'time': iso(at + warning, ms=False)}
    inst['deadline'] = at + warning
    inst['notice_at'] = at
    if rebalance and inst['rebalance'] is None:
        inst['rebalance'] = {'noticeTime': iso(at, ms=False)}
    r = S['spot'].get(inst['sir'])
    if r:
        r.update(code='marked-for-termination', update=at)
    return True


def begin_shutdown(inst, at, how, code, msg, transition):
    """shutting-down at fake time at: the bill closes, the group gets SIGTERM."""
    if inst['state'] not in ('pending', 'running'):
        return
    inst['state'] = 'shutting-down'
    inst['t_shutdown'] = at
    inst['reason_code'], inst['reason_msg'], inst['transition'] = code, msg, transition
    if inst['bill_start'] is not None and inst['t_end'] is None:
        inst['t_end'] = max(int(math.floor(at)), inst['bill_start'])
        inst['end_how'] = how
    signal_group(inst, signal.SIGTERM)
    inst['kill_at'] = time.time() + CFG['kill_after']
    r = S['spot'].get(inst['sir'])
    if r and r['state'] in ('open', 'active'):
        r.update(state='closed', update=at,
                 code='instance-terminated-by-price' if how == 'provider' else 'instance-terminated-by-user')


def step(inst, t, real):
    """Bring one instance up to fake time t (events in their own order)."""
    if inst['state'] == 'pending' and t >= inst['run_at']:
        go_running(inst, inst['run_at'])
    if inst['state'] == 'running' and inst['spot']:
        if inst['t_random'] is not None and t >= inst['t_random']:
            give_notice(inst, inst['t_random'], CFG['warning'], CFG['interrupt_rebalance'])
        if inst['notice'] is None and price_at(inst['type'], inst['zone'], t) > inst['cap']:
            # the price rose past the instance's max price: interrupted
            m = price_index().get((inst['type'], inst['zone']))
            k = bisect.bisect_right(m[0], int(math.floor(t))) - 1 if m else -1
            since = m[0][k] if k >= 0 else t
            give_notice(inst, max(since, inst['t_running']), CFG['warning'], False)
        if inst['deadline'] is not None and t >= inst['deadline']:
            begin_shutdown(inst, inst['deadline'], 'provider', 'Server.SpotInstanceTermination',
                           MSG_SPOT_TERM, 'Service initiated (%s)' % gmt(inst['deadline']))
    if inst['state'] == 'shutting-down':
        alive = group_alive(inst) or inst.get('spawning', False)
        if alive and inst['kill_at'] is not None and real >= inst['kill_at']:
            signal_group(inst, signal.SIGKILL)
        done = inst['t_shutdown'] + CFG['shutdown']
        if not alive and t >= done:
            inst['state'] = 'terminated'
            inst['t_terminated'] = done
            inst['vanish_at'] = done + CFG['visible']
            stop_imds(inst)
    if inst['state'] == 'terminated' and inst['vanish_at'] is not None and t >= inst['vanish_at']:
        inst['vanished'] = True


def advance():
    """Apply every state change due by now.  Called under LOCK before each
    request and by the ticker thread."""
    if CFG.get('finished'):
        return
    reap()
    t, real = fake_now(), time.time()
    keep = []
    for iid in S['active']:
        inst = S['instances'][iid]
        step(inst, t, real)
        if not inst['vanished']:
            keep.append(iid)
    S['active'] = keep


# ------------------------------------------------------------ billing
def bill(inst):
    """Micro-USD of one instance (docs/ec2.md; bidbrain/billing.h's rules):
    final once its bill closed, else what it has accrued up to now."""
    start = inst['bill_start']
    if start is None:
        return 0
    end, how = inst['t_end'], inst['end_how']
    final = end is not None
    if not final:
        end = max(fnow_s(), start)
    dur = end - start
    refund = final and how == 'provider' and inst['spot']

    def price(t):
        return price_at(inst['type'], inst['zone'], t) if inst['spot'] else inst['od_uusd']

    if CFG['billing'] == 'legacy-hourly':
        hours = max(1, -(-dur // HOUR)) if final else dur // HOUR + 1
        charges = [price(start + k * HOUR) for k in range(hours)]
        total = sum(charges)
        if refund and (dur % HOUR != 0 or dur == 0):
            total -= charges[-1]
        return total
    if refund and dur < HOUR:
        return 0
    if final and dur < MIN_BILL_S:
        end = start + MIN_BILL_S
    if inst['spot']:
        x = price_integral(inst['type'], inst['zone'], start, end)
    else:
        x = inst['od_uusd'] * (end - start)
    return (x + HOUR // 2) // HOUR


def summary():
    billed = sum(bill(S['instances'][i]) for i in S['order'])
    return {'instances_launched': len(S['order']),
            'still_running': sum(1 for i in S['order'] if S['instances'][i]['state'] in ACTIVE),
            'bad_signatures': sum(S['rejected'].values()),
            'billed_uusd': billed,
            'enrolled': sum(1 for i in S['order'] if enrolled(S['instances'][i]))}


def summary_line(s):
    # billed_usd: a JSON number with exactly 6 decimals
    return ('{"instances_launched": %d, "still_running": %d, "bad_signatures": %d, "billed_usd": %s, '
            '"enrolled": %d}'
            % (s['instances_launched'], s['still_running'], s['bad_signatures'], usd_str(s['billed_uusd']),
               s['enrolled']))


def inst_view(inst, with_user_data=False):
    b = bill(inst)
    v = {'id': inst['id'], 'type': inst['type'], 'zone': inst['zone'],
         'market': 'spot' if inst['spot'] else 'on-demand', 'state': inst['state'],
         'max_price_uusd': inst['bid'], 'client_token': inst['token'], 'tags': dict(inst['tags']),
         'launch_time': inst['t_launch'], 'running_time': inst['t_running'],
         'shutdown_time': inst['t_shutdown'], 'terminated_time': inst['t_terminated'],
         'bill_start': inst['bill_start'], 'bill_end': inst['t_end'], 'ended_by': inst['end_how'],
         'bill_final': inst['t_end'] is not None, 'billed_uusd': b, 'billed_usd': usd_str(b),
         'state_reason': inst['reason_code'], 'state_transition_reason': inst['transition'],
         'notice': inst['notice'], 'rebalance': inst['rebalance'], 'vanished': inst['vanished'],
         'user_data_len': len(user_data_bytes(inst)), 'pgid': inst['pgid'],
         'process_alive': group_alive(inst), 'exit_status': inst['exit_status'],
         'imds_port': inst['imds_port'], 'dir': inst['dir'],
         'identity_fetches': inst.get('identity_fetches', 0), 'enrolled': enrolled(inst)}
    if with_user_data:
        v['user_data'] = user_data_bytes(inst).decode('utf-8', 'replace')
    return v


# ------------------------------------------------------------ EC2 operations
def inst_xml(i):
    return ('<item>%s%s<instanceState><code>%d</code><name>%s</name></instanceState>'
            '%s%s%s%s<amiLaunchIndex>0</amiLaunchIndex>%s%s<placement>%s<tenancy>default</tenancy></placement>'
            '<monitoring><state>disabled</state></monitoring>%s%s%s<architecture>x86_64</architecture>%s%s%s%s</item>' % (
                el('instanceId', i['id']), el('imageId', i['image']), STATE_CODES[i['state']], i['state'],
                el('privateDnsName', 'ip-127-0-0-1.ec2.internal' if i['state'] != 'terminated' else ''),
                el('dnsName', ''), el('reason', i['transition']), el('keyName', i['key']),
                el('instanceType', i['type']), el('launchTime', iso(i['t_launch'])),
                el('availabilityZone', i['zone']),
                el('subnetId', i['subnet'] or CFG['zone_subnet'].get(i['zone'])),
                el('privateIpAddress', '127.0.0.1' if i['state'] != 'terminated' else None),
                ('<stateReason>%s%s</stateReason>' % (el('code', i['reason_code']), el('message', i['reason_msg']))
                 if i['reason_code'] else ''),
                el('instanceLifecycle', 'spot' if i['spot'] else None),
                el('spotInstanceRequestId', i['sir']), el('clientToken', i['token'] or ''),
                tagset(i['tags'])))


def choose_zone(p, itype, spot, prefix=''):
    """The zone of a launch: its subnet's, the one it names, or EC2's pick."""
    zone = p.get(prefix + 'Placement.AvailabilityZone')
    subnet = p.get(prefix + 'SubnetId')
    for k in range(1, 100):
        sg = p.get('%sSecurityGroupId.%d' % (prefix, k))
        if sg is None:
            break
        if not sg.startswith('sg-'):
            raise AwsError('InvalidGroupId.Malformed', 400, 'Invalid id: "%s" (expecting "sg-...")' % sg)
    if zone and zone not in CFG['zones']:
        raise AwsError('InvalidParameterValue', 400, 'Invalid availability zone: [%s]' % zone)
    if subnet:
        if not subnet.startswith('subnet-'):
            raise AwsError('InvalidSubnetID.Malformed', 400, 'Invalid id: "%s" (expecting "subnet-...")' % subnet)
        if subnet not in CFG['subnets']:
            raise AwsError('InvalidSubnetID.NotFound', 400, "The subnet ID '%s' does not exist" % subnet)
        if zone and zone != CFG['subnets'][subnet]:
            raise AwsError('InvalidParameterValue', 400,
                           'The specified Availability Zone (%s) does not match the subnet\'s (%s)'
                           % (zone, CFG['subnets'][subnet]))
        return CFG['subnets'][subnet]
    if zone:
        return zone
    if spot:  # EC2 picks a zone: the cheapest now
        return min(CFG['zones'], key=lambda z: (price_at(itype, z, fnow_s()), CFG['zones'].index(z)))
    return CFG['zones'][0]


def check_user_data(p):
    ud = p.get('UserData')
    if ud is None:
        return
    try:
        raw = base64.b64decode(''.join(ud.split()), validate=True)
    except (binascii.Error, ValueError):
        raise AwsError('InvalidParameterValue', 400, 'Invalid BASE64 encoding of user data.')
    if len(raw) > USER_DATA_MAX:
        raise AwsError('InvalidParameterValue', 400, 'User data is limited to %d bytes' % USER_DATA_MAX)


def market_active(itype, zone, market):
    """Active (pending, running, shutting-down) instances of one market."""
    spot = market == 'spot'
    return sum(1 for i in S['active'] if S['instances'][i]['state'] in ACTIVE
               and S['instances'][i]['type'] == itype and S['instances'][i]['zone'] == zone
               and S['instances'][i]['spot'] == spot)


def take_capacity(itype, zone, market):
    for c in S['capacity']:
        if c['type'] in ('*', itype) and c['zone'] in ('*', zone) and c['market'] in ('*', market):
            if c.get('limit') is not None:
                # a market that holds at most `limit` active instances
                refuse = market_active(itype, zone, market) >= c['limit']
            else:
                refuse = c['count'] is None or c['count'] > 0
            if refuse:
                if c['count'] is not None:
                    c['count'] -= 1
                c['hits'] += 1
                others = ', '.join(z for z in CFG['zones'] if z != zone)
                raise AwsError('InsufficientInstanceCapacity', 500,
                               'We currently do not have sufficient %s capacity in the Availability Zone you '
                               'requested (%s). Our system will be working on provisioning additional capacity. '
                               'You can currently get %s capacity by not specifying an Availability Zone in your '
                               'request or choosing %s.' % (itype, zone, itype, others))


# ------------------------------------------------------------ vCPU quotas
# vCPUs by size; burstable t3, t3a and t4g have 2 from nano to large.
SIZE_VCPUS = {'nano': 1, 'micro': 1, 'small': 1, 'medium': 1, 'large': 2, 'xlarge': 4}
BURST2 = ('t3', 't3a', 't4g')
# AWS's published specifications (EC2 User Guide, "Instance types",
# "Previous generation instances") where the size's rule (Nxlarge and
# metal-Nxl: 4N) does not hold: old generations, hpc, mac; and the bare
# .metal size of each family that has one.
VCPUS_EXCEPT = {
    'c1.medium': 2, 'c1.xlarge': 8, 'c4.8xlarge': 36, 'cc2.8xlarge': 32, 'd2.8xlarge': 36,
    'hs1.8xlarge': 16, 'm2.xlarge': 2, 'm2.2xlarge': 4, 'm2.4xlarge': 8, 't2.medium': 2,
    'hpc6a.48xlarge': 96, 'hpc6id.32xlarge': 64, 'hpc7a.12xlarge': 24, 'hpc7a.24xlarge': 48,
    'hpc7a.48xlarge': 96, 'hpc7a.96xlarge': 192, 'hpc7g.4xlarge': 16, 'hpc7g.8xlarge': 32,
    'hpc7g.16xlarge': 64, 'mac1.metal': 12, 'mac2.metal': 8,
}
METAL_VCPUS = {
    'a1': 16, 'c5': 96, 'c5d': 96, 'c5n': 72, 'c6a': 192, 'c6g': 64, 'c6gd': 64, 'c6i': 128,
    'c6id': 128, 'c6in': 128, 'c7g': 64, 'c7gd': 64, 'c7gn': 64, 'g4dn': 96, 'g5g': 64,
    'i3': 72, 'i3en': 96, 'i4i': 128, 'm5': 96, 'm5d': 96, 'm5dn': 96, 'm5n': 96, 'm5zn': 48,
    'm6a': 192, 'm6g': 64, 'm6gd': 64, 'm6i': 128, 'm6id': 128, 'm6idn': 128, 'm6in': 128,
    'm7g': 64, 'm7gd': 64, 'r5': 96, 'r5b': 96, 'r5d': 96, 'r5dn': 96, 'r5n': 96, 'r6a': 192,
    'r6g': 64, 'r6gd': 64, 'r6i': 128, 'r6id': 128, 'r6idn': 128, 'r6in': 128, 'r7g': 64,
    'r7gd': 64, 'x2gd': 64, 'x2idn': 128, 'x2iedn': 128, 'x2iezn': 48, 'z1d': 48,
    'u-6tb1': 448, 'u-9tb1': 448, 'u-12tb1': 448, 'u-18tb1': 448, 'u-24tb1': 448,
}


def vcpus_of(itype):
    """The vCPUs of an instance type, or None for a name that is no type."""
    if itype in VCPUS_EXCEPT:
        return VCPUS_EXCEPT[itype]
    fam, _, size = itype.partition('.')
    if not fam or not re.match(r'^(u-|[a-z]+[0-9])', fam):
        return None
    if size == 'metal':
        return METAL_VCPUS.get(fam)
    m = re.match(r'^([1-9][0-9]*)xlarge$|^metal-([1-9][0-9]*)xl$', size)
    if m:
        return 4 * int(m.group(1) or m.group(2))
    if size not in SIZE_VCPUS:
        return None
    if fam.split('-')[0] in BURST2 and size in ('nano', 'micro', 'small', 'medium'):
        return 2
    return SIZE_VCPUS[size]


def quota_group(itype):
    """The vCPU quota group of an instance type, by its family's letters."""
    fam = itype.partition('.')[0]
    if fam.startswith('u-') or re.match(r'^u[0-9]', fam):
        return 'x'  # the high-memory U instances
    letters = re.match(r'^[a-z]*', fam).group(0)
    for prefix, g in (('inf', 'inf'), ('trn', 'trn'), ('dl', 'dl'), ('vt', 'g'), ('cg', 'g'),
                      ('hpc', 'other'), ('mac', 'other')):
        if letters.startswith(prefix):
            return g
    if not letters:
        return 'other'
    if letters[0] in 'acdhimrtz':
        return 'standard'
    return {'f': 'f', 'g': 'g', 'p': 'p', 'x': 'x'}.get(letters[0], 'other')


def parse_vcpu_limit(text, what):
    """A vCPU limit in pool_spot_vcpus's syntax (bidbrain/pool.h): "64" (a
    total over every group), "standard=64,g=16,p=0" (per group) or both;
    "none" or "" is none.  A JSON number is a total, null none."""
    if text is None:
        return {'total': None, 'groups': {}}
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ValueError('%s: %r is not a vCPU limit' % (what, text))
    text = str(text)
    out = {'total': None, 'groups': {}}
    if text in ('', 'none'):
        return out
    for part in text.split(','):
        g, eq, n = part.partition('=')
        if not eq:
            g, n = None, part
        if g is not None and g not in QUOTA_GROUPS:
            raise ValueError("%s: unknown quota group '%s' (%s)" % (what, g, ', '.join(QUOTA_GROUPS)))
        if not re.match(r'^[0-9]{1,10}$', n) or int(n) > 10 ** 9:
            raise ValueError("%s: '%s' is not a count of vCPUs (0 to 1000000000)%s"
                             % (what, n, '' if g else ' nor GROUP=COUNT'))
        if g is None:
            if out['total'] is not None:
                raise ValueError('%s: two totals' % what)
            out['total'] = int(n)
        else:
            if g in out['groups']:
                raise ValueError("%s: group '%s' given twice" % (what, g))
            out['groups'][g] = int(n)
    return out


def vcpu_limit_str(lim):
    parts = ([] if lim['total'] is None else ['%d' % lim['total']]) + [
        '%s=%d' % (g, lim['groups'][g]) for g in QUOTA_GROUPS if g in lim['groups']]
    return ','.join(parts) or 'none'


def vcpus_in_use(spot):
    """vCPUs that count against the market's quotas, by group: pending and
    running instances, and (spot) the open requests not fulfilled yet."""
    use = {}
    for i in S['active']:
        inst = S['instances'][i]
        if inst['spot'] == spot and inst['state'] in ('pending', 'running'):
            g = quota_group(inst['type'])
            use[g] = use.get(g, 0) + (vcpus_of(inst['type']) or 0)
    if spot:
        for sid in S['spot_order']:
            r = S['spot'][sid]
            if r['state'] == 'open' and r['instance'] is None:
                g = quota_group(r['type'])
                use[g] = use.get(g, 0) + (vcpus_of(r['type']) or 0)
    return use


def vcpu_fit(itype, spot, lo):
    """How many more instances of itype the market's vCPU quotas hold
    (LAUNCH_MAX: no quota applies); MaxSpotInstanceCountExceeded or
    VcpuLimitExceeded (400) when fewer than lo."""
    lim = S['vcpu_limits']['spot' if spot else 'on_demand']
    g = quota_group(itype)
    if g not in lim['groups'] and lim['total'] is None:
        return LAUNCH_MAX
    v = vcpus_of(itype)
    if v is None:
        raise AwsError('InvalidParameterValue', 400, "Invalid value '%s' for InstanceType." % itype)
    use = vcpus_in_use(spot)
    rooms = []  # (vCPUs left, the quota)
    if g in lim['groups']:
        rooms.append((lim['groups'][g] - use.get(g, 0), lim['groups'][g]))
    if lim['total'] is not None:
        rooms.append((lim['total'] - sum(use.values()), lim['total']))
    room, cap = min(rooms)
    fit = max(room, 0) // v
    if fit < lo:
        if spot:
            raise AwsError('MaxSpotInstanceCountExceeded', 400, MSG_SPOT_QUOTA)
        raise AwsError('VcpuLimitExceeded', 400, MSG_VCPU_QUOTA % cap)
    return fit


def launch_count(p, spot, itype):
    """How many to launch (MinCount..MaxCount within the account's limits:
    the instance count, then the vCPU quota)."""
    lo, hi = int_param(p, 'MinCount'), int_param(p, 'MaxCount')
    if lo < 1 or hi < lo or hi > LAUNCH_MAX:
        raise AwsError('InvalidParameterValue', 400, 'bad MinCount/MaxCount')
    limit = S['limits']['spot' if spot else 'on_demand']
    if limit is not None:
        used = sum(1 for i in S['active'] if S['instances'][i]['state'] in ACTIVE
                   and S['instances'][i]['spot'] == spot)
        if used + lo > limit:
            if spot:
                raise AwsError('MaxSpotInstanceCountExceeded', 400, MSG_SPOT_QUOTA)
            raise AwsError('InstanceLimitExceeded', 400,
                           'You have requested more instances (%d) than your current instance limit of %d allows '
                           'for the specified instance type. Please visit http://aws.amazon.com/contact-us/ec2-request '
                           'to request an adjustment to this limit.' % (used + lo, limit))
        hi = min(hi, limit - used)
    return min(hi, vcpu_fit(itype, spot, lo))


def op_run_instances(p):
    require(p, 'ImageId', 'InstanceType', 'MinCount', 'MaxCount')
    key, prev = idempotent('RunInstances', p)
    if prev is None:
        itype = p['InstanceType']
        if not p['ImageId'].startswith('ami-'):
            raise AwsError('InvalidAMIID.Malformed', 400, 'Invalid id: "%s" (expecting "ami-...")' % p['ImageId'])
        if CFG['ondemand_strict'] and itype not in CFG['ondemand']:
            raise AwsError('InvalidParameterValue', 400, "Invalid value '%s' for InstanceType." % itype)
        mt = p.get('InstanceMarketOptions.MarketType')
        if mt not in (None, 'spot'):
            raise AwsError('InvalidParameterValue', 400, "Invalid value '%s' for MarketType" % mt)
        spot = mt == 'spot'
        check_user_data(p)
        tags = tag_specs(p, 'instance')
        bid = None
        if spot and p.get('InstanceMarketOptions.SpotOptions.MaxPrice'):
            bid = price_param(p['InstanceMarketOptions.SpotOptions.MaxPrice'])
        zone = choose_zone(p, itype, spot)
        n = launch_count(p, spot, itype)
        if spot:
            cur = price_at(itype, zone, fnow_s())
            if (bid if bid is not None else od_price(itype)) < cur:
                raise AwsError('SpotMaxPriceTooLow', 400,
                               'Your Spot request price of %s is lower than the minimum required Spot request '
                               'fulfillment price of %s.'
                               % (usd_short(bid if bid is not None else od_price(itype)), usd_short(cur)))
        take_capacity(itype, zone, 'spot' if spot else 'on-demand')
        ids, rid = [], next_id('r')
        for _ in range(n):
            inst = new_instance(p, '', spot, bid, next_id('sir') if spot else None, zone)
            inst['tags'] = list(tags)
            inst['rid'] = rid
            ids.append(inst['id'])
        if key:
            S['tokens'][key[:2]] = (key[2], ids)
        prev = ids
    insts = [S['instances'][i] for i in prev]
    return ('<reservationId>%s</reservationId><ownerId>123456789012</ownerId><groupSet/>'
            '<instancesSet>%s</instancesSet>' % (insts[0]['rid'], ''.join(inst_xml(i) for i in insts)))


def visible(iid):
    inst = S['instances'].get(iid)
    return inst if inst is not None and not inst['vanished'] else None


def op_describe_instances(p):
    ids = plist(p, 'InstanceId')
    if ids and 'MaxResults' in p:
        raise AwsError('InvalidParameterCombination', 400,
                       'The parameter instancesSet cannot be used with the parameter maxResults')
    for i in ids:
        if not i.startswith('i-'):
            raise AwsError('InvalidInstanceID.Malformed', 400, 'Invalid id: "%s"' % i)
        if visible(i) is None:
            raise AwsError('InvalidInstanceID.NotFound', 400, "The instance ID '%s' does not exist" % i)
    sel = ids or S['active']
    getters = {'instance-state-name': lambda o: o['state'],
               'instance-state-code': lambda o: STATE_CODES[o['state']],
               'instance-type': lambda o: o['type'],
               'instance-lifecycle': lambda o: 'spot' if o['spot'] else None,
               'spot-instance-request-id': lambda o: o['sir'], 'client-token': lambda o: o['token'],
               'availability-zone': lambda o: o['zone'], 'instance-id': lambda o: o['id'],
               'reservation-id': lambda o: o['rid'], 'image-id': lambda o: o['image'],
               'subnet-id': lambda o: o['subnet'] or CFG['zone_subnet'].get(o['zone'])}
    items = [S['instances'][i] for i in sel if match_filters(S['instances'][i], filters(p), getters)]
    chunk, nt = page(items, p)
    res = ''.join('<item><reservationId>%s</reservationId><ownerId>123456789012</ownerId><groupSet/>'
                  '<instancesSet>%s</instancesSet></item>' % (i['rid'], inst_xml(i)) for i in chunk)
    return '<reservationSet>%s</reservationSet>%s' % (res, nt)


def op_terminate_instances(p):
    ids = plist(p, 'InstanceId')
    require(p, 'InstanceId.1')
    for i in ids:
        if not i.startswith('i-'):
            raise AwsError('InvalidInstanceID.Malformed', 400, 'Invalid id: "%s"' % i)
        if visible(i) is None:
            raise AwsError('InvalidInstanceID.NotFound', 400, "The instance ID '%s' does not exist" % i)
    t = fake_now()
    out = ''
    for i in ids:
        inst = S['instances'][i]
        prev = inst['state']
        begin_shutdown(inst, t, 'user', 'Client.UserInitiatedShutdown', MSG_USER_TERM,
                       'User initiated (%s)' % gmt(t))
        step(inst, t, time.time())  # no process and no shutdown delay: terminated at once
        out += ('<item>%s<currentState><code>%d</code><name>%s</name></currentState>'
                '<previousState><code>%d</code><name>%s</name></previousState></item>'
                % (el('instanceId', i), STATE_CODES[inst['state']], inst['state'], STATE_CODES[prev], prev))
    return '<instancesSet>%s</instancesSet>' % out


def op_create_tags(p):
    rids = plist(p, 'ResourceId')
    require(p, 'ResourceId.1')
    tags = tags_of(p, 'Tag')
    check_tags(tags)
    for r in rids:
        obj = visible(r) or S['spot'].get(r)
        if obj is None:
            code = ('InvalidSpotInstanceRequestID.NotFound' if r.startswith('sir-')
                    else 'InvalidInstanceID.NotFound' if r.startswith('i-') else 'InvalidID')
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
        el('spotInstanceRequestId', r['id']), el('spotPrice', usd_str(r['bid'])), el('type', 'one-time'),
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
        itype = p['LaunchSpecification.InstanceType']
        bid = price_param(p['SpotPrice']) if p.get('SpotPrice') else od_price(itype)
        zone = choose_zone(p, itype, False, 'LaunchSpecification.')
        tags = tag_specs(p, 'spot-instances-request')
        vcpu_fit(itype, True, n)  # every request of the call, or none
        ids = []
        for _ in range(n):
            sid = next_id('sir')
            S['spot'][sid] = {'id': sid, 'bid': bid, 'state': 'open', 'code': 'pending-evaluation',
                              'update': fnow_s(), 'create': fnow_s(), 'instance': None, 'params': dict(p),
                              'image': p['LaunchSpecification.ImageId'], 'type': itype,
                              'zone': zone, 'tags': list(tags)}
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
            r['update'] = fnow_s()
        out += '<item>%s%s</item>' % (el('spotInstanceRequestId', i), el('state', r['state']))
    return '<spotInstanceRequestSet>%s</spotInstanceRequestSet>' % out


def op_describe_spot_price_history(p):
    types = plist(p, 'InstanceType')
    prods = plist(p, 'ProductDescription')
    az = p.get('AvailabilityZone')
    flt = dict(filters(p))
    t0 = parse_iso(p['StartTime']) if p.get('StartTime') else None
    t1 = parse_iso(p['EndTime']) if p.get('EndTime') else None
    for name in flt:
        if name not in ('instance-type', 'availability-zone', 'product-description', 'spot-price', 'timestamp'):
            raise AwsError('InvalidParameterValue', 400, 'The filter \'%s\' is invalid' % name)
    items = [r for r in S['prices']
             if (not types or r['type'] in types) and (not prods or r['product'] in prods)
             and (not az or r['zone'] == az) and (t0 is None or r['ts'] >= t0)
             and (t1 is None or r['ts'] <= t1)
             and ('instance-type' not in flt or r['type'] in flt['instance-type'])
             and ('availability-zone' not in flt or r['zone'] in flt['availability-zone'])
             and ('product-description' not in flt or r['product'] in flt['product-description'])]
    items.sort(key=lambda r: (-r['ts'], r['zone'], r['type']))
    chunk, nt = page(items, p, lo=1)
    return '<spotPriceHistorySet>%s</spotPriceHistorySet>%s' % (''.join(
        '<item>%s%s%s%s%s</item>' % (el('instanceType', r['type']), el('productDescription', r['product']),
                                     el('spotPrice', r['price']), el('timestamp', iso(r['ts'])),
                                     el('availabilityZone', r['zone'])) for r in chunk), nt)


def spot_tick():
    """One step of the legacy spot market: trace prices, fulfil, warn, terminate."""
    t = fnow_s()
    for ty, tr in S['trace'].items():
        if tr:
            set_price_all_zones(ty, tr.pop(0))
    for sid in S['spot_order']:
        r = S['spot'][sid]
        if r['state'] == 'open':
            if r['bid'] < price_at(r['type'], r['zone'], t):
                r['code'] = 'price-too-low'
            else:
                inst = new_instance(r['params'], 'LaunchSpecification.', True, r['bid'], sid, r['zone'])
                r.update(state='active', code='fulfilled', instance=inst['id'])
            r['update'] = t
    advance()
    for iid in list(S['active']):
        inst = S['instances'][iid]
        if not inst['spot'] or inst['state'] not in ('pending', 'running'):
            continue
        if inst['marked']:
            begin_shutdown(inst, fake_now(), 'provider', 'Server.SpotInstanceTermination', MSG_SPOT_TERM,
                           'Service initiated (%s)' % gmt(fake_now()))
        elif inst['bid'] is not None and price_at(inst['type'], inst['zone'], t) > inst['bid']:
            inst['marked'] = True
            give_notice(inst, fake_now(), CFG['warning'], True)
            r = S['spot'].get(inst['sir'])
            if r:
                r.update(code='marked-for-termination', update=t)
            im = S['imds']
            if im['bind'] is None:
                im['bind'] = iid
            if im['bind'] == iid:
                im['instance_action'] = {'action': 'terminate', 'time': iso(fake_now() + CFG['warning'], ms=False)}
                if im['rebalance'] is None:
                    im['rebalance'] = {'noticeTime': iso(fake_now(), ms=False)}
    advance()


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
    if abs(t - sig_now()) > 900:
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
def pick_instances(spec):
    """Instances named by {"id"} / {"ids"} or the "count" newest running spot
    instances of {"type", "zone"} without a notice yet."""
    if 'id' in spec or 'ids' in spec:
        ids = [spec['id']] if 'id' in spec else list(spec['ids'])
        out = []
        for i in ids:
            inst = visible(i)
            if inst is None:
                raise ValueError('no instance %s' % i)
            if not inst['spot']:
                raise ValueError('%s is not a spot instance' % i)
            if inst['state'] != 'running':
                raise ValueError('%s is %s, not running' % (i, inst['state']))
            out.append(inst)
        return out
    cand = [S['instances'][i] for i in reversed(S['active'])]
    cand = [i for i in cand if i['spot'] and i['state'] == 'running' and i['notice'] is None
            and spec.get('type', '*') in ('*', i['type']) and spec.get('zone', '*') in ('*', i['zone'])]
    return cand[:int(spec.get('count', 1))]


def ctl(cmd):
    out = {}
    if cmd.get('reset'):
        reset(S['region'])
    if 'keys' in cmd:
        for k, v in cmd['keys'].items():
            S['keys'][k] = {'secret': v['secret'], 'token': v.get('token')}
    if 'clock_offset' in cmd:
        S['clock_offset'] = cmd['clock_offset']
    if 'advance' in cmd:
        a = float(cmd['advance'])
        if a < 0:
            raise ValueError('advance: the clock does not go back')
        S['advance'] += a
    advance()
    if cmd.get('faults_clear'):
        S['faults'] = []
    if cmd.get('release_held'):
        # answers held since are held anew (a new event)
        S['hold'].set()
        S['hold'] = threading.Event()
    if 'faults' in cmd:
        for f in cmd['faults']:
            f.setdefault('op', '*')
            f.setdefault('count', None if 'for_s' in f else 1)
            if 'for_s' in f:
                f['until'] = time.time() + float(f['for_s'])
            S['faults'].append(f)
    if 'prices' in cmd:
        S['prices'] = []
        for r in cmd['prices']:
            add_price(r['type'], r['zone'], r['price'], time_of(r['ts']), r.get('product', 'Linux/UNIX'))
    if 'set_price' in cmd:
        recs = cmd['set_price']
        for r in ([recs] if isinstance(recs, dict) else recs):
            at = time_of(r['at']) if 'at' in r else fnow_s()
            for z in zones_of(r.get('zone')):
                add_price(r['type'], z, r['price'], at, r.get('product', 'Linux/UNIX'))
    if 'market' in cmd:
        for ty, price in cmd['market'].items():
            set_price_all_zones(ty, price)
    if 'trace' in cmd:
        S['trace'].update({k: list(v) for k, v in cmd['trace'].items()})
    if 'capacity_clear' in cmd:
        cc = cmd['capacity_clear']
        if cc is True:
            S['capacity'] = []
        else:
            S['capacity'] = [c for c in S['capacity']
                             if not any(c['type'] == x.get('type', '*') and c['zone'] == x.get('zone', '*')
                                        for x in cc)]
    if 'capacity' in cmd:
        for c in cmd['capacity']:
            S['capacity'].append({'type': c.get('type', '*'), 'zone': c.get('zone', '*'),
                                  'market': c.get('market', '*'), 'count': c.get('count'),
                                  'limit': c.get('limit'), 'hits': 0})
    if 'limits' in cmd:
        for k in ('spot', 'on_demand'):
            if k in cmd['limits']:
                S['limits'][k] = cmd['limits'][k]
        for k, m in (('spot_vcpus', 'spot'), ('ondemand_vcpus', 'on_demand')):
            if k in cmd['limits']:
                S['vcpu_limits'][m] = parse_vcpu_limit(cmd['limits'][k], k)
    for _ in range(int(cmd.get('spot_tick', 0))):
        spot_tick()
    if 'interrupt' in cmd:
        spec = cmd['interrupt']
        t = fake_now()
        done = []
        for inst in pick_instances(spec):
            if give_notice(inst, t, float(spec.get('warning', CFG['warning'])), bool(spec.get('rebalance'))):
                done.append(inst['id'])
        out['interrupted'] = done
    if 'rebalance' in cmd:
        t = fake_now()
        for inst in pick_instances(cmd['rebalance']):
            if inst['rebalance'] is None:
                inst['rebalance'] = {'noticeTime': iso(t, ms=False)}
    if 'imds' in cmd:
        S['imds'].update(cmd['imds'])
    if 'instances' in cmd:  # direct edits: {"i-...": {"state": "running"}}
        for iid, upd in cmd['instances'].items():
            S['instances'][iid].update(upd)
    advance()
    st = state()
    st.update(out)
    return st


def state():
    return {'calls': S['calls'], 'attempts': S['attempts'], 'rejected': S['rejected'], 'faulted': S['faulted'],
            'held': S['held'],
            'faults_left': [f for f in S['faults'] if f['count'] is None or f['count'] > 0],
            'instances': [{k: S['instances'][i][k] for k in ('id', 'state', 'type', 'spot', 'sir', 'token',
                                                               'tags', 'user_data', 'zone', 'bid')}
                          for i in S['order']],
            'spot': [{k: S['spot'][i][k] for k in ('id', 'state', 'code', 'instance', 'bid', 'tags')}
                     for i in S['spot_order']],
            'capacity': S['capacity'],
            'limits': dict(S['limits'], spot_vcpus=vcpu_limit_str(S['vcpu_limits']['spot']),
                           ondemand_vcpus=vcpu_limit_str(S['vcpu_limits']['on_demand'])),
            'vcpus': {'spot': vcpus_in_use(True), 'on_demand': vcpus_in_use(False)},
            'last_headers': S['last_headers'], 'imds': {k: v for k, v in S['imds'].items() if k != 'tokens'}}


def ctl_get(q):
    """GET /_ctl?cmd=...: (status, body, content type)."""
    cmd = q.get('cmd', 'state')
    if cmd == 'state':
        return 200, json.dumps(state()), 'application/json'
    if cmd == 'summary':
        return 200, summary_line(summary()), 'application/json'
    if cmd == 'counts':
        n = {k: 0 for k in ('pending', 'running', 'shutting-down', 'terminated')}
        for i in S['active']:
            st = S['instances'][i]['state']
            n[st] = n.get(st, 0) + 1
        n['launched'] = len(S['order'])
        n['processes'] = sum(1 for i in S['active'] if group_alive(S['instances'][i]))
        return 200, json.dumps(n), 'application/json'
    if cmd == 'instances':
        return 200, json.dumps([inst_view(S['instances'][i]) for i in S['order']]), 'application/json'
    if cmd == 'clock':
        return 200, json.dumps({'fake_now': fake_now(), 'real_now': time.time(), 'origin': CFG['origin'],
                                'speedup': CFG['speedup'], 'advance': S['advance'],
                                'fake_start': S['fake_start']}), 'application/json'
    if cmd == 'prices':
        return 200, json.dumps(S['prices']), 'application/json'
    if cmd == 'sign':
        iid = q.get('id', '')
        inst = S['instances'].get(iid)
        doc = identity_doc(inst)
        doc['instanceId'] = iid or doc['instanceId']
        if q.get('region'):
            doc['region'] = q['region']
        body = json.dumps(doc, indent=2).encode()
        return 200, identity_sig(body, forge=q.get('forge') == '1'), 'text/plain'
    if cmd in ('userdata', 'console'):
        inst = S['instances'].get(q.get('id', ''))
        if inst is None:
            return 404, json.dumps({'error': 'no instance %r' % q.get('id')}), 'application/json'
        if cmd == 'userdata':
            return 200, user_data_bytes(inst), 'application/octet-stream'
        try:
            with open(os.path.join(inst['dir'] or '/nonexistent', 'console.log'), 'rb') as f:
                return 200, f.read(1 << 20), 'application/octet-stream'
        except OSError:
            return 200, b'', 'application/octet-stream'
    return 400, json.dumps({'error': 'unknown cmd %r' % cmd}), 'application/json'


def take_fault(op, token=None):
    now = time.time()
    for f in S['faults']:
        if (f['count'] is None or f['count'] > 0) and f['op'] in ('*', op):
            if 'until' in f and now > f['until']:
                continue
            # sticky: the first call it takes names the ClientToken that
            # every later one must carry (one call's attempts, no other)
            if f.get('sticky') and f.get('token') not in (None, token):
                continue
            if f.get('skip', 0) > 0:  # let this many calls through first
                f['skip'] -= 1
                continue
            if 'p' in f and S['fault_rng'].random() >= float(f['p']):
                continue
            if f['count'] is not None:
                f['count'] -= 1
            if f.get('sticky') and f.get('token') is None:
                f['token'] = token
            what = f.get('code', f['kind']) if f['kind'] == 'error' else f['kind']
            by_op = S['faulted'].setdefault(op, {})
            by_op[what] = by_op.get(what, 0) + 1
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
            self.read_body()
            if self.path != '/latest/api/token':
                return self.send(404, 'not found', 'text/plain')
            st, body, extra = token_put(self, S['imds']['tokens'])
            if st == 200:
                S['imds']['puts'] += 1
            return self.send(st, body, 'text/plain', extra)

    def do_GET(self):
        with LOCK:
            u = urlsplit(self.path)
            if u.path == '/_ctl':
                advance()
                st, body, ctype = ctl_get(dict(parse_qsl(u.query)))
                return self.send(st, body, ctype)
            return self.imds()

    def imds(self):
        """The legacy IMDS on the EC2 port: not an instance of the fake's
        (or the instance "bind" names)."""
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
            return self.send(200, json.dumps(role_credentials(im)), 'text/plain')
        if path == md + 'instance-id':
            return self.send(200, iid, 'text/plain')
        if path == md + 'placement/region':
            return self.send(200, S['region'], 'text/plain')
        if path == '/latest/dynamic/instance-identity/document':
            doc = identity_doc(inst)
            if inst:
                doc['privateIp'] = '10.0.1.23'
                doc['pendingTime'] = '2024-01-15T09:30:05Z'
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
            fault = take_fault(op, p.get('ClientToken'))
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
            advance()
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
        if fault and fault['kind'] == 'hold':
            # carried out; its answer waits for {"release_held": true}
            # (at most `delay` s), whatever the client did meanwhile
            with LOCK:
                S['held'] += 1
                ev = S['hold']
            ev.wait(float(fault.get('delay', 60)))
            with LOCK:
                S['held'] -= 1
        if fault and fault['kind'] == 'truncate':
            return self.send(status, out, cut=len(out.encode()) // 2)
        if fault and fault['kind'] == 'truncate_xml':
            return self.send(status, out.encode()[:len(out.encode()) // 2])
        if fault and fault['kind'] == 'malformed':
            return self.send(200, '<?xml version="1.0"?><%sResponse><requestId>x</req' % op)
        if fault and fault['kind'] == 'huge':
            return self.send(200, b'<a>' + b'x' * int(fault.get('size', 17 << 20)) + b'</a>')
        return self.send(status, out)


# ------------------------------------------------------------ start and stop
def finish():
    """Exit: the summary line, the record, every process group killed."""
    with LOCK:
        if CFG.get('finished'):
            return
        advance()
        s = summary()
        CFG['finished'] = True
        if CFG['record']:
            try:
                tmp = CFG['record'] + '.tmp'
                with open(tmp, 'w') as f:
                    json.dump({'summary': dict(json.loads(summary_line(s)), billed_uusd=s['billed_uusd']),
                               'instances': [inst_view(S['instances'][i], True) for i in S['order']]}, f, indent=1)
                os.replace(tmp, CFG['record'])
            except OSError as e:
                sys.stderr.write('fake_ec2: cannot write %s: %s\n' % (CFG['record'], e))
        kill_all()
        try:
            sys.stdout.write(summary_line(s) + '\n')
            sys.stdout.flush()
        except OSError:
            pass  # nobody reads our stdout any more
        if CFG['instance_dir_tmp']:
            shutil.rmtree(CFG['instance_dir'], ignore_errors=True)
    os._exit(0)


def ticker():
    while True:
        time.sleep(0.02)
        with LOCK:
            advance()


def load_market(path, zones):
    """--market FILE: [{"type", "zone", "price", "ts"?}, ...] (zone "*": all)."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError('%s: expected a JSON list of {type, zone, price[, ts]}' % path)
    out = []
    for k, r in enumerate(data):
        try:
            if not isinstance(r, dict) or not isinstance(r.get('type'), str):
                raise ValueError('needs "type", "zone" and "price"')
            uusd_of(r['price'])
            for z in (zones if r.get('zone', '*') == '*' else [r['zone']]):
                if z not in zones:
                    raise ValueError('zone %r is not one of --zones %s' % (z, ','.join(zones)))
                out.append({'type': r['type'], 'zone': z, 'price': r['price'],
                            'ts': time_of(r['ts']) if 'ts' in r else None})
        except (KeyError, ValueError) as e:
            raise ValueError('%s: [%d]: %s' % (path, k, e))
    return out


def load_ondemand(path, region):
    """--ondemand FILE: the project's table (cloudapi/ondemand.h): region ->
    type -> USD per hour, or {"usd_per_hour": x}; keys starting with _ skipped."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or not isinstance(data.get(region), dict):
        raise ValueError('%s: no region %r' % (path, region))
    out = {}
    for ty, v in data[region].items():
        if ty.startswith('_'):
            continue
        if isinstance(v, dict):
            v = v.get('usd_per_hour')
        try:
            out[ty] = uusd_of(v)
        except ValueError as e:
            raise ValueError('%s: %s.%s: %s' % (path, region, ty, e))
    return out


def main():
    ap = argparse.ArgumentParser(description='A fake EC2 that runs instances (docs/ec2.md).')
    ap.add_argument('--region', default='us-east-1')
    ap.add_argument('--timeout', type=float, default=300, help='real seconds before it exits')
    ap.add_argument('--zones', default='a,b,c', help='zones: letters (of the region) or names')
    ap.add_argument('--subnets', default=None,
                    help='SUBNET=ZONE,... (default: subnet-0000000000000000a for zone a, ...b, ...)')
    ap.add_argument('--speedup', type=float, default=1.0, help='K: fake seconds per real second (0: frozen)')
    ap.add_argument('--clock-origin', type=float, default=None, help='T0, Unix seconds (default: start)')
    ap.add_argument('--boot-seconds', type=float, default=2.0, help='pending -> running (fake s)')
    ap.add_argument('--shutdown-seconds', type=float, default=1.0, help='shutting-down -> terminated (fake s)')
    ap.add_argument('--kill-after', type=float, default=2.0, help='SIGTERM -> SIGKILL (real s)')
    ap.add_argument('--terminated-visible', type=float, default=3600.0,
                    help='fake s a terminated instance stays in DescribeInstances')
    ap.add_argument('--market', help='JSON list of {type, zone, price[, ts]}: initial spot prices')
    ap.add_argument('--spot-price', default='0.03', help='USD/h of a market with no price')
    ap.add_argument('--ondemand', help="on-demand table (cloudapi/ondemand.h's format)")
    ap.add_argument('--ondemand-price', default='0.1', help='USD/h of a type not in --ondemand')
    ap.add_argument('--billing', choices=('per-second', 'legacy-hourly'), default='per-second')
    ap.add_argument('--bill-from', choices=('running', 'launch'), default='running')
    ap.add_argument('--spot-limit', type=int, default=None, help='MaxSpotInstanceCountExceeded past it')
    ap.add_argument('--ondemand-limit', type=int, default=None, help='InstanceLimitExceeded past it')
    ap.add_argument('--spot-vcpus', default='none', metavar='LIMIT',
                    help='spot vCPU quota: N (a total), GROUP=N,... (standard, f, g, inf, p, x, dl, trn, '
                         'other) or both; MaxSpotInstanceCountExceeded past it')
    ap.add_argument('--ondemand-vcpus', default='none', metavar='LIMIT',
                    help='on-demand vCPU quota, the same syntax; VcpuLimitExceeded past it')
    ap.add_argument('--warning-seconds', type=float, default=120.0, help='notice -> interruption (fake s)')
    ap.add_argument('--interrupt-rate', type=float, default=0.0, help='interruptions per spot instance-hour')
    ap.add_argument('--interrupt-rebalance', action='store_true',
                    help='random interruptions also post a rebalance recommendation')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--instance-dir', help='where instances run (default: a temporary directory)')
    ap.add_argument('--no-exec', action='store_true', help='do not run user data (API-only tests)')
    ap.add_argument('--record', help='write every instance (user data included) here at exit')
    ap.add_argument('--identity-cert', help='write the certificate that signs identity documents here (PEM)')
    ap.add_argument('--role-credentials', metavar='AKID:SECRET:TOKEN',
                    help='the instance role credentials every IMDS hands out (default: fresh ones each time)')
    ap.add_argument('--instance-env', action='append', default=[], metavar='K=V',
                    help="added to every instance's environment: what a VPC gives by DNS, e.g. "
                         "AWS_ENDPOINT_URL_S3 for a fake S3")
    a = ap.parse_args()

    def fail(msg):
        sys.stderr.write('fake_ec2: %s\n' % msg)
        sys.exit(2)

    zones = [z.strip() for z in a.zones.split(',') if z.strip()]
    zones = [a.region + z if len(z) == 1 else z for z in zones]
    if not zones or any(not z.startswith(a.region) for z in zones):
        fail('--zones %s: zones of %s expected' % (a.zones, a.region))
    subnets = {'subnet-%017x' % (0xa + k): z for k, z in enumerate(zones)}
    if a.subnets:
        subnets = {}
        for kv in a.subnets.split(','):
            sn, _, z = kv.strip().partition('=')
            z = a.region + z if len(z) == 1 else z
            if not sn.startswith('subnet-') or z not in zones:
                fail('--subnets %s: SUBNET=ZONE with a subnet-... id and a zone of --zones expected' % kv)
            subnets[sn] = z
    if a.speedup < 0 or not math.isfinite(a.speedup):
        fail('--speedup %g: must be a finite number >= 0' % a.speedup)
    for name in ('boot_seconds', 'shutdown_seconds', 'kill_after', 'terminated_visible', 'warning_seconds',
                 'interrupt_rate'):
        if getattr(a, name) < 0:
            fail('--%s must be >= 0' % name.replace('_', '-'))
    try:
        CFG.update({
            'zones': zones, 'speedup': a.speedup, 'subnets': subnets,
            'zone_subnet': {z: sn for sn, z in sorted(subnets.items(), reverse=True)},
            'origin': a.clock_origin if a.clock_origin is not None else float(int(time.time())),
            'boot': a.boot_seconds, 'shutdown': a.shutdown_seconds, 'kill_after': a.kill_after,
            'visible': a.terminated_visible, 'warning': a.warning_seconds,
            'spot_default': uusd_of(a.spot_price, '--spot-price'),
            'ondemand_default': uusd_of(a.ondemand_price, '--ondemand-price'),
            'ondemand': load_ondemand(a.ondemand, a.region) if a.ondemand else {},
            'ondemand_strict': bool(a.ondemand), 'billing': a.billing, 'bill_from': a.bill_from,
            'spot_limit': a.spot_limit, 'ondemand_limit': a.ondemand_limit,
            'spot_vcpus': parse_vcpu_limit(a.spot_vcpus, '--spot-vcpus'),
            'ondemand_vcpus': parse_vcpu_limit(a.ondemand_vcpus, '--ondemand-vcpus'),
            'interrupt_rate': a.interrupt_rate, 'interrupt_rebalance': a.interrupt_rebalance,
            'seed': a.seed, 'exec': not a.no_exec, 'record': a.record,
            'instance_env': dict(kv.split('=', 1) for kv in a.instance_env),
        })
        if a.role_credentials:
            rc = a.role_credentials.split(':', 2)
            if len(rc) != 3 or not all(rc):
                raise ValueError('--role-credentials: AKID:SECRET:TOKEN expected')
            CFG['role_creds'] = tuple(rc)
        CFG['market_init'] = load_market(a.market, zones) if a.market else []
    except (OSError, ValueError) as e:
        fail(str(e))
    if a.instance_dir:
        os.makedirs(a.instance_dir, 0o700, exist_ok=True)
        CFG['instance_dir'], CFG['instance_dir_tmp'] = os.path.abspath(a.instance_dir), False
    else:
        CFG['instance_dir'] = tempfile.mkdtemp(prefix='fake-ec2-') if CFG['exec'] else None
        CFG['instance_dir_tmp'] = CFG['exec']
    # orphans of instance programs reparent to us (and get reaped): a group
    # is gone only when its zombies are too
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    if a.identity_cert:
        try:
            with open(a.identity_cert + '.tmp', 'wb') as f:
                f.write(ident('signer')[1].public_bytes(serialization.Encoding.PEM))
            os.replace(a.identity_cert + '.tmp', a.identity_cert)
        except OSError as e:
            fail('--identity-cert %s: %s' % (a.identity_cert, e))
    reset(a.region)
    ThreadingHTTPServer.request_queue_size = 256  # bursts of new connections
    srv = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda request, client_address: None  # resets from tests

    lifecycle.serve(srv, a.timeout, finish, threads=(ticker, spawner))

if __name__ == '__main__':
    main()
