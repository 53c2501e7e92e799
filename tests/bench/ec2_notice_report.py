"""ec2_notice_report.py -- the markdown of bench_ec2_notice.sh,
bench_ec2_acquire.sh and bench_ec2_rebalance.sh, from the records
ec2_notice_probe.py wrote (one JSON per job):

    ec2_notice_probe.py --report MODE --run DIR RECORD.json...

Exits 1 when a run broke what it must hold: notice, a hand-off after its
notice's deadline, a loss, training that did not go on; every mode, a
node that did not enroll or join, a job that did not complete.
"""
import json
import os
import re
import statistics
import sys


def load(path):
    r = json.load(open(path))
    r['name'] = os.path.basename(path)[:-5]
    r['ctrl_id'] = {v['id']: int(v['tags'].get('proteus:id', 0)) for v in r['instances']}
    r['by_ctrl'] = {c: i for i, c in r['ctrl_id'].items()}
    r['inst'] = {v['id']: v for v in r['instances']}
    return r


def find(r, pat, path_pat, after=0.0):
    """Real time of the first line matching pat in a file matching
    path_pat, seen at or after `after`; None if none."""
    rx, px = re.compile(pat), re.compile(path_pat)
    for t, path, ln in r['lines']:
        if t >= after and px.search(path) and rx.search(ln):
            return t
    return None


def lines(r, pat, path_pat):
    rx, px = re.compile(pat), re.compile(path_pat)
    return [(t, rx.search(ln)) for t, path, ln in r['lines'] if px.search(path) and rx.search(ln)]


def events(r, kind):
    """(market s, detail) of the job's events of this kind."""
    out = []
    for k, _, at, d in r['events']:
        if k != kind:
            continue
        try:
            d = json.loads(d)
        except ValueError:
            d = {}
        out.append((at / 1e6, d))
    return out


def console(iid):
    return r'/instances/%s/console\.log$' % re.escape(iid)


COORD = r'/trainer\.log$'
DAEMON = r'/proteusd\.log$'


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def worst(v):
    v = [x for x in v if x is not None]
    return max(v) if v else None


def fmt(x, nd=2):
    return '-' if x is None else ('%.*f' % (nd, x))


def clocks_resent(r):
    """Clocks the workers re-sent, from their closing lines (work a loss
    made them redo); None when no worker said."""
    v = [int(m.group(1)) for _, m in lines(r, r'worker \d+ done at clock .* (\d+) clocks re-sent', r'console\.log$')]
    return sum(v) if v else None


def job_span(r):
    """(market s, real s) from the job's start event to its done event."""
    s, d = events(r, 'start'), events(r, 'done')
    if not s or not d:
        return None, None
    return d[-1][0] - s[0][0], r['t_end'] - r['t_submit']


def notice(recs, bad):
    steps = [('read', 'the node read it (its log: `imds: spot interruption notice`)'),
             ('heard', 'the daemon heard it (its log: `read an interruption notice`)'),
             ('leaving', 'the coordinator moved its shards (`node N leaving`)'),
             ('handoff', 'hand-off done: its PS holds nothing and ends (`ps N done`)'),
             ('launch', 'the replacement launched (`launch` event, EC2\'s launch time)'),
             ('joined', 'the replacement joined (`node M registered as ps`)')]
    rows = {s: [] for s, _ in steps}
    margin, progress, n = [], [], 0
    for r in recs:
        k = r['speedup']
        launches = events(r, 'launch')
        for p in r['perturb']:
            if not p.get('posted'):
                bad.append('%s: the interruption of %s was not posted' % (r['name'], p['iid']))
                continue
            n += 1
            t0 = (p['t_post0'] + p['t_post']) / 2
            node = p['node']
            iid = p['iid']
            got = {
                'read': find(r, r'imds: spot interruption notice', console(iid), p['t_post0']),
                'heard': find(r, r'instance %d \(%s\): its node read an interruption notice' % (node, iid),
                              DAEMON, p['t_post0']),
                'leaving': find(r, r'^node %d leaving' % (node * 100), COORD, p['t_post0']),
                'handoff': find(r, r'ps %d done:' % (node * 100), console(iid), p['t_post0']),
            }
            m0 = r['origin'] + (t0 - r['origin']) * k
            repl = [(t, d) for t, d in launches if t >= m0 - 1 and d.get('instance') != node
                    and not d.get('reliable')]
            if repl:
                got['launch'] = t0 + (repl[0][0] - m0) / k
                rid = repl[0][1]['instance']
                got['joined'] = find(r, r'^node %d registered as ps' % (rid * 100), COORD, p['t_post0'])
            else:
                got['launch'] = got['joined'] = None
            for s, _ in steps:
                rows[s].append(None if got[s] is None else got[s] - t0)
            deadline = t0 + 120.0 / k   # the fake's warning, market s
            if got['handoff'] is None:
                bad.append('%s: %s: no hand-off seen' % (r['name'], iid))
            else:
                margin.append(deadline - got['handoff'])
                if got['handoff'] > deadline:
                    bad.append('%s: %s handed off %.2f s after its deadline' % (
                        r['name'], iid, got['handoff'] - deadline))
                # training goes on: the job's clock 2 real s after the hand-off
                smp = r['samples']
                c0 = [c for t, _, c in smp if t >= got['handoff']]
                c1 = [c for t, _, c in smp if t >= got['handoff'] + 2.0]
                if c0 and c1:
                    progress.append(c1[0] - c0[0])
                    if c1[0] <= c0[0]:
                        bad.append('%s: no clock in the 2 s after %s\'s hand-off' % (r['name'], iid))
        st = r['view_final']
        if st.get('losses'):
            bad.append('%s: %d losses' % (r['name'], st['losses']))
        if st.get('state') != 'done':
            bad.append('%s: the job ended %s' % (r['name'], st.get('state')))
    k = recs[0]['speedup']
    print('%d interruptions (%d jobs), each a 120 market s (%.0f real s) notice; times from the notice '
          'posted, real s (market s), median / worst:' % (n, len(recs), 120 / k))
    print()
    print('| step | median, real s | worst, real s | median, market s | worst, market s | seen |')
    print('|---|---|---|---|---|---|')
    for s, what in steps:
        v = rows[s]
        print('| %s | %s | %s | %s | %s | %d of %d |' % (
            what, fmt(med(v)), fmt(worst(v)), fmt(med(v) and med(v) * k, 0),
            fmt(worst(v) and worst(v) * k, 0), sum(x is not None for x in v), len(v)))
    print()
    print('| measure | value |')
    print('|---|---|')
    print('| hand-off done before the deadline by, real s: median / least | %s / %s |' % (
        fmt(med(margin)), fmt(min(margin) if margin else None)))
    print('| the job\'s clocks in the 2 real s after a hand-off: median / least | %s / %s |' % (
        fmt(med(progress), 0), fmt(min(progress) if progress else None, 0)))
    print('| losses (all jobs) / evictions / clocks re-sent | %d / %d / %s |' % (
        sum(r['view_final'].get('losses', 0) for r in recs),
        sum(r['view_final'].get('evictions', 0) for r in recs),
        sum(clocks_resent(r) or 0 for r in recs)))


def acquire(recs, bad):
    steps = [('running', 'RunInstances answered (`launch`, EC2\'s launch time) -> running (the fake\'s boot)'),
             ('enrolled', 'running -> enrolled (user data, IMDS, node start, enrollment; the daemon\'s `enrolled`)'),
             ('joined', 'enrolled -> joined (`node N registered as ps`)'),
             ('wait', 'joined -> the job\'s start (`job started`; initial nodes only: the coordinator waits for the fleet)'),
             ('first', 'joined (or the job\'s start, if later) -> first update (`node N+1: first clock`)'),
             ('total', 'launch -> first update')]
    rows = {s: [] for s, _ in steps}
    groups = {'initial': {s: [] for s, _ in steps}, 'replacement': {s: [] for s, _ in steps}}
    n = 0
    for r in recs:
        k, t0 = r['speedup'], r['origin']
        market = lambda real: t0 + (real - t0) * k  # noqa: E731
        start = events(r, 'start')
        enr = {d.get('instance'): at for at, d in events(r, 'enrolled')}
        started = find(r, r'^job started:', COORD)
        for at, d in events(r, 'launch'):
            cid = d['instance']
            iid = r['by_ctrl'].get(cid)
            if not iid:
                continue
            n += 1
            v = r['inst'][iid]
            run_m = v.get('running_time')
            # the daemon's enrolled event is in real time (wall clock)
            enr_m = market(enr[iid]) if iid in enr else None
            con = find(r, r'enroll: job \d+: enrolled', console(iid))
            j = find(r, r'^node %d registered as ps' % (cid * 100), COORD)
            f = find(r, r'^node %d: first clock' % (cid * 100 + 1), COORD)
            jm = market(j) if j else None
            fm = market(f) if f else None
            sm = market(started) if started else None
            wait = sm - jm if jm and sm and sm > jm else None
            got = {'running': run_m - at if run_m else None,
                   'enrolled': enr_m - run_m if enr_m and run_m else None,
                   'joined': jm - enr_m if jm and enr_m else None,
                   'wait': wait,
                   'first': fm - (sm if wait else jm) if fm and jm else None,
                   'total': fm - at if fm else None}
            if con is None or enr_m is None:
                bad.append('%s: instance %d (%s) did not enroll' % (r['name'], cid, iid))
            if j is None:
                bad.append('%s: instance %d (%s) did not join' % (r['name'], cid, iid))
            g = 'initial' if start and at - start[0][0] < 60 else 'replacement'
            for s, _ in steps:
                rows[s].append(got[s])
                groups[g][s].append(got[s])
            if con is not None and enr_m is not None:
                rows.setdefault('console_vs_event', []).append(market(con) - enr_m)
        if r['view_final'].get('state') != 'done':
            bad.append('%s: the job ended %s' % (r['name'], r['view_final'].get('state')))
    k = recs[0]['speedup']
    print('%d instances (%d jobs); market s (real s = market / %.0f), median / worst:' % (n, len(recs), k))
    print()
    print('| step | median, market s | worst, market s | median, real s | instances |')
    print('|---|---|---|---|---|')
    for s, what in steps:
        v = rows[s]
        print('| %s | %s | %s | %s | %d |' % (what, fmt(med(v), 1), fmt(worst(v), 1),
                                             fmt(med(v) and med(v) / k), sum(x is not None for x in v)))
    for g in ('initial', 'replacement'):
        v = groups[g]
        if any(x is not None for x in v['total']):
            print('| %s instances: boot / enroll / join / wait for the start / first update / total, '
                  'median market s | %s / %s / %s / %s / %s / %s | | | %d |' % (
                      g, *(fmt(med(v[s]), 1) for s, _ in steps),
                                                     sum(x is not None for x in v['total'])))
    c = rows.get('console_vs_event', [])
    print('| the node\'s `enroll: ... enrolled` line after the daemon\'s event, market s (median / worst) | '
          '%s / %s | | | %d |' % (fmt(med(c), 1), fmt(worst(c), 1), len(c)))


def rebalance(recs, bad):
    by = {}
    for r in recs:
        setting, lead = r['name'].split('-')[1:3]
        by.setdefault((lead, setting), []).append(r)
    print('| scenario | rebalance | job, market s; real s | cost, $ | losses / clocks re-sent | '
          'fleet below target, market s | replacements rented | the node left on the recommendation | '
          'the interruption found the instance | the recommended instance: its bill, $ (ended by) |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    order = sorted(by, key=lambda x: (x[0] == 'none', int(x[0]) if x[0] != 'none' else 0, x[1]))
    for lead, setting in order:
        rs = by[(lead, setting)]
        cells = []
        for r in rs:
            k, t0 = r['speedup'], r['origin']
            p = r['perturb'][0] if r['perturb'] else None
            if not p or not p.get('posted'):
                bad.append('%s: no rebalance recommendation posted' % r['name'])
                continue
            jm, jr = job_span(r)
            st = r['view_final']
            # below target: from the recommendation to the job's end,
            # the samples' workers under the steady fleet's
            below, smp = 0.0, r['samples']
            for (t, w, _), (t2, _, _) in zip(smp, smp[1:]):
                if t >= p['t_post0'] and w < r['target']:
                    below += (t2 - t) * k
            m0 = t0 + (p['t_post0'] - t0) * k
            repl = sum(1 for t, d in events(r, 'launch') if t >= m0 - 1)
            left = find(r, r'imds: rebalance recommendation at .*: the roles leave', console(p['iid']),
                        p['t_post0']) is not None
            found = p.get('int_posted') if lead != 'none' else None
            v = r['inst'].get(p['iid'], {})
            cells.append((jm, jr, st.get('cost_usd', 0), st.get('losses', 0), clocks_resent(r) or 0,
                          below, repl, left, found, v.get('billed_uusd', 0) / 1e6, v.get('ended_by')))
            if st.get('losses'):
                bad.append('%s: %d losses' % (r['name'], st['losses']))
            if st.get('state') != 'done':
                bad.append('%s: the job ended %s' % (r['name'], st.get('state')))
            if left != (setting == 'leave'):
                bad.append('%s: the node %s on the recommendation' % (r['name'], 'left' if left else 'stayed'))
        if not cells:
            continue
        col = lambda i: [c[i] for c in cells]  # noqa: E731

        def spread(i, nd):
            v = [x for x in col(i) if x is not None]
            return fmt(med(v), nd) + (' (%s-%s)' % (fmt(min(v), nd), fmt(max(v), nd)) if len(v) > 1 else '')

        print('| %s | %s | %s; real %s | %s | %s / %s | %s | %s | %s | %s | %s (%s) |' % (
            'false alarm (no interruption)' if lead == 'none' else 'interruption %s market s later' % lead,
            setting, spread(0, 0), fmt(med(col(1)), 1), spread(2, 4),
            fmt(med(col(3)), 0), fmt(med(col(4)), 0), spread(5, 0), spread(6, 0),
            '/'.join('yes' if x else 'no' for x in col(7)),
            '-' if lead == 'none' else '/'.join('yes' if x else 'no (ended already)' for x in col(8)),
            fmt(med(col(9)), 4), '/'.join(str(x) for x in col(10))))
    print()
    print('(%d jobs; medians over the rounds of each row, (least-most) where there are several; the fleet\'s '
          'target is its size when steady, before the recommendation)' % len(recs))


def main(argv):
    mode = argv[0]
    files = [a for a in argv[1:] if a.endswith('.json')]
    run = argv[argv.index('--run') + 1] if '--run' in argv else None
    recs = [load(f) for f in sorted(files)]
    bad = []
    if not recs:
        sys.exit('ec2_notice_report: no records')
    {'notice': notice, 'acquire': acquire, 'rebalance': rebalance}[mode](recs, bad)
    if run and os.path.exists(os.path.join(run, 'fake_summary.json')):
        try:
            s = json.load(open(os.path.join(run, 'fake_summary.json')))
            print()
            print('fake EC2 at the end: %d instances launched, %d still running, %d bad signatures, '
                  '%d enrolled, $%.6f billed' % (s['instances_launched'], s['still_running'],
                                                s['bad_signatures'], s['enrolled'], s['billed_usd']))
            if s['still_running'] or s['bad_signatures']:
                bad.append('fake: %d still running, %d bad signatures' % (s['still_running'],
                                                                          s['bad_signatures']))
        except (ValueError, KeyError):
            pass
    if bad:
        sys.exit('ec2 bench: ' + '; '.join(bad))
