#!/usr/bin/python3
"""fake_s3.py -- a strict fake of S3's GetObject/HeadObject/PutObject/DeleteObject, for tests.

Listens on 127.0.0.1 only, on a free port it picks itself, and prints
"PORT <n>" on stdout.  It exits when its stdin reaches end of file (the
parent died or closed the pipe), after --timeout real seconds, or on
SIGTERM/SIGINT.

Objects are files: --root DIR serves DIR/BUCKET/KEY at the path-style
URL /BUCKET/KEY (the key percent-decoded, as S3 does); a PUT writes
DIR/BUCKET/KEY (its folders made; the file written whole, then renamed
over any old one) and answers 200 with the body's MD5 as its ETag; a
DELETE removes it and answers 204, for a key that is not there too (as
S3 does); the bucket (DIR/BUCKET) must exist for both.  Every request is
checked as S3 checks it, its SigV4 signature recomputed with botocore
(Debian's python3-botocore, an implementation independent of libcurl;
S3's rules: the path decoded and encoded again once, x-amz-content-sha256
in the signature):
  no Authorization             -> 403 AccessDenied (unless the bucket is
                                  --public: then anonymous GETs are served)
  unknown access key           -> 403 InvalidAccessKeyId
  scope of another region      -> 400 AuthorizationHeaderMalformed, with
                                  <Region> and x-amz-bucket-region
  X-Amz-Date 15 min off        -> 403 RequestTimeTooSkewed
  wrong session token          -> 400 InvalidToken
  no x-amz-content-sha256      -> 400 InvalidRequest
  x-amz-content-sha256 that is neither UNSIGNED-PAYLOAD nor the body's
                               -> 400 XAmzContentSHA256Mismatch
  any other signature mismatch -> 403 SignatureDoesNotMatch
  no such bucket / key         -> 404 NoSuchBucket / NoSuchKey
  a PUT without Content-Length -> 411 MissingContentLength (chunked too)
  a PUT over --max-put-mb      -> 400 EntityTooLarge (the body unread)
A PUT that asks "Expect: 100-continue" gets the interim 100 before its
body is read (past the two checks above), as S3 does.

Faults, for retry tests: --fail-first N answers the first N object
requests 500 InternalError; POST /_ctl {"fail": N, "status": S, "code": C}
does the same for the next N; {"truncate": N}: the next N GETs send half
the body and close; {"nolength": true}: bodies go without Content-Length.
GET /_ctl?cmd=requests lists every request seen ({"method", "path",
"status", "code", "signed"}, no secret in it; GET, HEAD, PUT and DELETE
alike); ?cmd=reset empties it.
"""

import argparse
import datetime
import hashlib
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote_to_bytes, urlsplit
from xml.sax.saxutils import escape

sys.dont_write_bytecode = True  # nothing written beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fakes'))
import lifecycle  # noqa: E402

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

EMPTY_SHA256 = hashlib.sha256(b'').hexdigest()
LOCK = threading.Lock()
S = {'requests': [], 'fail': 0, 'fail_status': 500, 'fail_code': 'InternalError',
     'truncate': 0, 'nolength': False}
CFG = {}


class S3Error(Exception):
    def __init__(self, code, status, message, extra=None, headers=None):
        super().__init__(code)
        self.code, self.status, self.message = code, status, message
        self.extra = extra or {}
        self.headers = headers or {}


def err_xml(e):
    extra = ''.join('<%s>%s</%s>' % (k, escape(v), k) for k, v in e.extra.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>%s'
            '<RequestId>%s</RequestId><HostId>fake</HostId></Error>' %
            (e.code, escape(e.message), extra, uuid.uuid4().hex[:16].upper()))


def check_signature(method, path, headers, body):
    """None when the request is signed as S3 wants, else an S3Error."""
    authz = headers.get('authorization')
    if authz is None:
        return S3Error('AccessDenied', 403, 'Access Denied')
    if not authz.startswith('AWS4-HMAC-SHA256 '):
        return S3Error('AuthorizationHeaderMalformed', 400, 'The authorization header is malformed')
    parts = {}
    for kv in authz[len('AWS4-HMAC-SHA256 '):].split(','):
        k, _, v = kv.strip().partition('=')
        parts[k] = v
    cred = parts.get('Credential', '').split('/')
    if len(cred) != 5 or cred[4] != 'aws4_request' or cred[3] != 's3':
        return S3Error('AuthorizationHeaderMalformed', 400, 'The authorization header is malformed; '
                       'the Credential is mal-formed')
    akid, day, region = cred[:3]
    key = CFG['keys'].get(akid)
    if key is None:
        return S3Error('InvalidAccessKeyId', 403,
                       'The AWS Access Key Id you provided does not exist in our records.')
    if region != CFG['region']:
        return S3Error('AuthorizationHeaderMalformed', 400,
                       "The authorization header is malformed; the region '%s' is wrong; expecting '%s'" %
                       (region, CFG['region']), {'Region': CFG['region']},
                       {'x-amz-bucket-region': CFG['region']})
    amzdate = headers.get('x-amz-date', '')
    try:
        t = datetime.datetime.strptime(amzdate, '%Y%m%dT%H%M%SZ').replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return S3Error('AccessDenied', 403, 'AWS authentication requires a valid Date or x-amz-date header')
    if abs(t - time.time()) > 900:
        return S3Error('RequestTimeTooSkewed', 403,
                       'The difference between the request time and the current time is too large.')
    if key['token'] is not None and headers.get('x-amz-security-token') != key['token']:
        return S3Error('InvalidToken', 400, 'The provided token is malformed or otherwise invalid.')
    csha = headers.get('x-amz-content-sha256')
    if csha is None:
        return S3Error('InvalidRequest', 400, 'Missing required header for this request: x-amz-content-sha256')
    if csha not in ('UNSIGNED-PAYLOAD', hashlib.sha256(body).hexdigest()):
        return S3Error('XAmzContentSHA256Mismatch', 400,
                       "The provided 'x-amz-content-sha256' header does not match what was computed.")
    signed = parts.get('SignedHeaders', '').split(';')
    for h in ('host', 'x-amz-date', 'x-amz-content-sha256') + \
            (('x-amz-security-token',) if 'x-amz-security-token' in headers else ()):
        if h not in signed:
            return S3Error('AccessDenied', 403, 'There were headers present in the request which were not '
                           'signed: %s' % h)
    # S3 signs the decoded path encoded again by its own rule (each byte but
    # A-Z a-z 0-9 - . _ ~ and '/'), not the bytes the client sent: a path
    # sent in another form ('=' raw, say) fails here as it fails on S3
    sp = urlsplit(path)
    canon = quote(unquote_to_bytes(sp.path), safe='/~') + ('?' + sp.query if sp.query else '')
    req = AWSRequest(method=method, url='http://%s%s' % (headers.get('host', ''), canon), data=body)
    for h in signed:
        if h not in headers:
            return S3Error('SignatureDoesNotMatch', 403, 'signed header %s missing' % h)
        if h not in ('x-amz-date', 'x-amz-security-token'):
            req.headers[h] = headers[h]
    auth = botocore.auth.S3SigV4Auth(Credentials(akid, key['secret'], key['token']), 's3', region)
    req.context['timestamp'] = amzdate
    # the generic step (date and token headers); S3SigV4Auth's own would
    # replace the x-amz-content-sha256 the client sent
    botocore.auth.SigV4Auth._modify_request_before_signing(auth, req)
    sts = auth.string_to_sign(req, auth.canonical_request(req))
    want = auth.signature(sts, req)
    if day != amzdate[:8] or parts.get('Signature') != want or \
            parts.get('SignedHeaders') != auth.signed_headers(auth.headers_to_sign(req)):
        return S3Error('SignatureDoesNotMatch', 403,
                       'The request signature we calculated does not match the signature you provided. '
                       'Check your key and signing method.')
    return None


def key_path(path):
    """(bucket root, key bytes, file) of a path-style request path whose
    bucket exists, or an S3Error; the file may not exist."""
    p = urlsplit(path).path
    bucket, _, key = p.lstrip('/').partition('/')
    broot = os.path.join(CFG['root'], bucket)
    if not bucket or not os.path.isdir(broot):
        raise S3Error('NoSuchBucket', 404, 'The specified bucket does not exist', {'BucketName': bucket})
    kb = unquote_to_bytes(key)
    if not key:
        raise S3Error('InvalidRequest', 400, 'A key is needed.')
    base = os.fsencode(os.path.realpath(broot))
    f = os.path.normpath(os.path.join(base, kb))
    if not f.startswith(base + b'/'):
        raise S3Error('InvalidRequest', 400, 'The fake keeps no key outside its bucket\'s folder.')
    return base, kb, f


def put_object(path, body):
    """PutObject: the body written whole at the key's file; its ETag."""
    base, kb, f = key_path(path)
    d = os.path.dirname(f)
    real = os.path.realpath(d)
    if real != base and not real.startswith(base + b'/'):
        raise S3Error('InvalidRequest', 400, 'The fake keeps no key outside its bucket\'s folder.')
    try:
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, b'.put-%s' % uuid.uuid4().hex.encode())
        with open(tmp, 'wb') as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, f)
    except (NotADirectoryError, IsADirectoryError, FileExistsError):
        raise S3Error('InvalidRequest', 400, 'The fake cannot keep this key beside a folder of its name.')
    return '"%s"' % hashlib.md5(body).hexdigest()


def delete_object(path):
    """DeleteObject: the key's file gone (none there is no error)."""
    base, kb, f = key_path(path)
    real = os.path.realpath(f)
    if real.startswith(base + b'/') and os.path.isfile(real):
        os.unlink(real)


def object_path(path):
    """(bucket, file) of a path-style request path, or an S3Error."""
    p = urlsplit(path).path
    bucket, _, key = p.lstrip('/').partition('/')
    broot = os.path.join(CFG['root'], bucket)
    if not bucket or not os.path.isdir(broot):
        raise S3Error('NoSuchBucket', 404, 'The specified bucket does not exist', {'BucketName': bucket})
    kb = unquote_to_bytes(key)
    f = os.path.realpath(os.path.join(os.fsencode(broot), kb))
    if not key or not f.startswith(os.fsencode(os.path.realpath(broot)) + b'/') or not os.path.isfile(f):
        raise S3Error('NoSuchKey', 404, 'The specified key does not exist.',
                      {'Key': kb.decode('utf-8', 'replace')})
    return bucket, f


class Handler(BaseHTTPRequestHandler):
    server_version = 'AmazonS3'

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype='application/xml', extra=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.send_header('x-amz-request-id', uuid.uuid4().hex[:16].upper())
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)

    def record(self, status, code, signed):
        with LOCK:
            S['requests'].append({'method': self.command, 'path': self.path, 'status': status,
                                  'code': code, 'signed': signed})

    def ctl(self, body):
        q = parse_qs(urlsplit(self.path).query)
        with LOCK:
            if self.command == 'POST':
                cmd = json.loads(body or b'{}')
                if 'fail' in cmd:
                    S['fail'] = int(cmd['fail'])
                    S['fail_status'] = int(cmd.get('status', 500))
                    S['fail_code'] = cmd.get('code', 'InternalError')
                if 'truncate' in cmd:
                    S['truncate'] = int(cmd['truncate'])
                if 'nolength' in cmd:
                    S['nolength'] = bool(cmd['nolength'])
                out = {'ok': True}
            elif q.get('cmd') == ['requests']:
                out = S['requests']
            elif q.get('cmd') == ['reset']:
                S['requests'] = []
                out = {'ok': True}
            else:
                return self.send(400, json.dumps({'error': 'unknown command'}), 'application/json')
        return self.send(200, json.dumps(out), 'application/json')

    def read_body(self, headers):
        """The request's body; a PUT's held to S3's rules first."""
        n = headers.get('content-length')
        if self.command == 'PUT':
            if n is None or not n.isdigit():
                self.close_connection = True
                raise S3Error('MissingContentLength', 411, 'You must provide the Content-Length HTTP header.')
            if int(n) > CFG['max_put']:
                self.close_connection = True
                raise S3Error('EntityTooLarge', 400, 'Your proposed upload exceeds the maximum allowed size',
                              {'ProposedSize': n, 'MaxSizeAllowed': str(CFG['max_put'])})
            if headers.get('expect', '').lower() == '100-continue':
                self.wfile.write(b'HTTP/1.1 100 Continue\r\n\r\n')
                self.wfile.flush()
        n = int(n) if n and n.isdigit() else 0
        return self.rfile.read(n) if n else b''

    def handle_object(self):
        headers = {k.lower(): v for k, v in self.headers.items()}
        signed = 'authorization' in headers
        if urlsplit(self.path).path == '/_ctl':
            return self.ctl(self.read_body(headers))
        try:
            body = self.read_body(headers)
            with LOCK:
                if S['fail'] > 0:
                    S['fail'] -= 1
                    raise S3Error(S['fail_code'], S['fail_status'], 'injected fault')
            bucket = urlsplit(self.path).path.lstrip('/').partition('/')[0]
            bad = check_signature(self.command, self.path, headers, body)
            if bad is not None and not (bad.code == 'AccessDenied' and not signed and
                                        bucket in CFG['public']):
                raise bad
            if self.command == 'PUT':
                etag = put_object(self.path, body)
                self.record(200, '', signed)
                return self.send(200, b'', extra={'ETag': etag})
            if self.command == 'DELETE':
                delete_object(self.path)
                self.record(204, '', signed)
                return self.send(204, b'')
            bucket, f = object_path(self.path)
        except S3Error as e:
            self.record(e.status, e.code, signed)
            return self.send(e.status, err_xml(e), extra=e.headers)
        with open(f, 'rb') as fh:
            data = fh.read()
        with LOCK:
            cut = S['truncate'] > 0 and self.command == 'GET'
            if cut:
                S['truncate'] -= 1
            nolength = S['nolength']
        self.record(200, '', signed)
        self.send_response(200)
        self.send_header('Content-Type', 'application/octet-stream')
        if not nolength:
            self.send_header('Content-Length', str(len(data)))
        self.send_header('ETag', '"%s"' % hashlib.md5(data).hexdigest())
        self.send_header('Last-Modified', self.date_time_string(os.path.getmtime(f)))
        self.end_headers()
        self.close_connection = True
        if self.command == 'GET':
            self.wfile.write(data[:len(data) // 2] if cut else data)
            self.wfile.flush()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = handle_object


def main():
    ap = argparse.ArgumentParser(description='A strict fake of S3 GetObject, HeadObject, PutObject and '
                                 'DeleteObject (tests).')
    ap.add_argument('--root', required=True, help='objects: ROOT/BUCKET/KEY')
    ap.add_argument('--region', default='us-east-1')
    ap.add_argument('--key', action='append', default=[],
                    help='AKID:SECRET[:TOKEN] (default AKIDEXAMPLE and its example secret)')
    ap.add_argument('--public', action='append', default=[], help='a bucket anyone may GET from')
    ap.add_argument('--fail-first', type=int, default=0, help='answer the first N requests 500')
    ap.add_argument('--timeout', type=float, default=60, help='real seconds before it exits')
    ap.add_argument('--max-put-mb', type=int, default=64, help='the largest PUT body taken, MiB')
    a = ap.parse_args()
    keys = {}
    for k in a.key or ['AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY']:
        f = k.split(':', 2)
        if len(f) < 2 or not f[0] or not f[1]:
            sys.stderr.write('fake_s3: --key %s: AKID:SECRET[:TOKEN] expected\n' % f[0])
            sys.exit(2)
        keys[f[0]] = {'secret': f[1], 'token': f[2] if len(f) > 2 else None}
    if not os.path.isdir(a.root):
        sys.stderr.write('fake_s3: --root %s: not a directory\n' % a.root)
        sys.exit(2)
    CFG.update({'root': os.path.realpath(a.root), 'region': a.region, 'keys': keys,
                'public': set(a.public), 'max_put': a.max_put_mb << 20})
    S['fail'] = a.fail_first
    srv = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda request, client_address: None  # resets from tests

    lifecycle.serve(srv, a.timeout, lambda: os._exit(0))

if __name__ == '__main__':
    main()
