"""Where a Fleet member's first join goes: a timeline from the lab's logs (pure parsing, no lab access).

Sources, all in the lab directory's ``logs/``: the agent runner's ``runner.log`` (when it realised, started and
stopped each agent pod: the lab's stand-in for a kubelet) and each Fleet agent container's own log
(``<member>/cattle-fleet-system.<pod>.fleet-agent.log``: leader election, registration, Fleet's deployment of its
own agent bundle, the check-in ticker). The runner logs in the machine's local time, the agents in UTC; the lab
machines run in UTC.
"""

import calendar
import json
import re
import time

RUNNER_LINE = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \w+ (\S+) (\S+?): (realising pod|started container|stopping)')
AGENT_START = re.compile(r'^--- (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) starting')
LOGRUS_LINE = re.compile(r'^time="([^"]+)" level=\w+ msg="(.*)')

# substring of an agent message -> event name
AGENT_EVENTS = (
    ('Attempting to acquire leader lease', 'waits for the leader lease'),
    ('Successfully acquired lease', 'holds the leader lease'),
    ('running registration', 'registration starts (no credential yet)'),
    ('successfully registered with upstream cluster', 'registered with the hub'),
    ('Starting cluster status ticker', 'check-in ticker started (first check-in 15 s or one interval later, whichever is first)'),
    ('Deployed bundle', 'deployed a bundle (Fleet\'s own agent release: adoption)'),
    ('signal received', 'told to stop (its pod was replaced)'),
)


def utc_epoch(text, fmt):
    """Seconds since the epoch of a UTC time text."""
    return calendar.timegm(time.strptime(text, fmt))


def runner_events(lines, cluster, namespace='cattle-fleet-system'):
    """(epoch, pod, what) of the runner's actions on one cluster's pods in ``namespace``."""
    events = []
    for line in lines:
        match = RUNNER_LINE.match(line)
        if not match or match.group(3) != cluster or not match.group(4).startswith(namespace + '/'):
            continue
        stamp = utc_epoch(match.group(1), '%Y-%m-%d %H:%M:%S') + int(match.group(2)) / 1000.0
        events.append((stamp, match.group(4).split('/', 1)[1], 'runner: ' + match.group(5)))
    return events


def agent_events(lines, pod):
    """(epoch, pod, what) of one Fleet agent container log (second resolution)."""
    events = []
    for line in lines:
        start = AGENT_START.match(line)
        if start:
            events.append((utc_epoch(start.group(1), '%Y-%m-%dT%H:%M:%SZ'), pod, 'agent: process started'))
            continue
        stamp, message = _agent_message(line)
        if stamp is None:
            continue
        for needle, name in AGENT_EVENTS:
            if needle in message:
                if name.startswith('deployed a bundle') and any(e[2].endswith(name) for e in events):
                    break  # once is enough
                events.append((stamp, pod, 'agent: ' + name))
                break
    return events


def _agent_message(line):
    """(epoch, message) of a JSON or logrus agent log line, else (None, None)."""
    if line.startswith('{'):
        try:
            data = json.loads(line)
            return utc_epoch(data['ts'], '%Y-%m-%dT%H:%M:%SZ'), data.get('msg', '')
        except (ValueError, KeyError):
            return None, None
    match = LOGRUS_LINE.match(line)
    if match:
        try:
            return utc_epoch(match.group(1), '%Y-%m-%dT%H:%M:%SZ'), match.group(2)
        except ValueError:
            return None, None
    return None, None


def format_timeline(events, origin, window=None):
    """Events relative to ``origin`` (seconds), in time order; those outside ``window`` (start, end) left out."""
    lines = []
    for stamp, pod, what in sorted(events):
        if window and not window[0] - 1 <= stamp <= window[1] + 1:
            continue
        lines.append('%+7.1f s  %-28s %s' % (stamp - origin, pod[-28:], what))
    return '\n'.join(lines)
