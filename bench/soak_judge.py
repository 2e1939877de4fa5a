"""The soak's judge: whether the fleet converged, by its own reads of the hub and the members (never the collection's
summary), what was left behind, and how long a placed workload was ever absent.

``converged(fleet, since)`` returns the problems found (empty: converged): every member joined and healthy in both
fleet managers - a Fleet check-in newer than ``since``, a KubeFleet heartbeat within three of its periods and the
identity its MemberCluster names -, its agents' Deployments available and their credential Secrets on the member, its
hub objects labelled as the inventory says.
``leftovers(fleet)`` lists what no run should leave: registration tokens, member locks, identities of no member, more
than one identity token per member.
``secret_files`` finds files holding a credential in the runs' own temporary directory. ``WorkloadWatch`` samples
every placed ConfigMap on every member twice a second. ``verdict`` names a round's outcome.
"""

import datetime
import threading
import time

from soak_faults import FLEET, FLEET_AGENT, KUBEFLEET, KUBEFLEET_AGENT, LOCK_NAMESPACE

# What a file holding a credential contains: a service-account token (a JWT), a key, a kubeconfig's key or token.
# How long after the round's start a Fleet check-in is asked for: two of the soak lab's 5 s check-in intervals.
CHECK_IN_WAIT = 12
SECRET_MARKERS = (b'eyJhbGciOi', b'PRIVATE KEY', b'client-key-data', b'token: ')


def _time(stamp):
    if not stamp:
        return None
    return datetime.datetime.fromisoformat(stamp.replace('Z', '+00:00')).timestamp()


def _condition(obj, cond_type):
    for cond in (obj.get('status') or {}).get('conditions') or []:
        if cond.get('type') == cond_type:
            return cond.get('status')
    return None


def _available(fleet, member, agent):
    deployment = fleet.read_or_none(lambda: fleet.apps(member).read_namespaced_deployment(agent[1], agent[0]))
    return deployment is not None and (deployment.status.available_replicas or 0) > 0


def fleet_problems(fleet, member, since):
    cluster = fleet.read_or_none(lambda: fleet.custom('hub').get_namespaced_custom_object(*FLEET, 'fleet-default', 'clusters', member))
    if cluster is None:
        return ['rancher_fleet: no Cluster on the hub']
    problems = []
    seen = _time(((cluster.get('status') or {}).get('agent') or {}).get('lastSeen'))
    if seen is None or seen < since:
        problems.append('rancher_fleet: no check-in since the fault (last %s)' % (seen and time.strftime('%H:%M:%S', time.gmtime(seen))))
    if (cluster['metadata'].get('labels') or {}).get('env') != 'lab':
        problems.append('rancher_fleet: Cluster labels %s' % cluster['metadata'].get('labels'))
    if not _available(fleet, member, FLEET_AGENT):
        problems.append('rancher_fleet: agent Deployment not available')
    if not _secret(fleet, member, FLEET_AGENT[0], 'fleet-agent'):
        problems.append('rancher_fleet: no agent credential (Secret cattle-fleet-system/fleet-agent) on the member')
    return problems


def _secret(fleet, member, namespace, name):
    """Whether the Secret is on the member: a running agent keeps checking in with the credential it read at start."""
    return fleet.read_or_none(lambda: fleet.core(member).read_namespaced_secret(name, namespace)) is not None


def _internal_heartbeat(fleet, member):
    imc = fleet.read_or_none(lambda: fleet.custom('hub').get_namespaced_custom_object(
        *KUBEFLEET, 'fleet-member-' + member, 'internalmemberclusters', member))
    agent = [a for a in ((imc or {}).get('status') or {}).get('agentStatus') or [] if a.get('type') == 'MemberAgent']
    return _time(agent[0].get('lastReceivedHeartbeat')) if agent else None


def kubefleet_problems(fleet, member):
    mc = fleet.read_or_none(lambda: fleet.custom('hub').get_cluster_custom_object(*KUBEFLEET, 'memberclusters', member))
    if mc is None:
        return ['kubefleet: no MemberCluster on the hub']
    problems = []
    agent = [a for a in (mc.get('status') or {}).get('agentStatus') or [] if a.get('type') == 'MemberAgent']
    joined = agent and [c.get('status') for c in agent[0].get('conditions') or [] if c.get('type') == 'Joined'] == ['True']
    if _condition(mc, 'Joined') != 'True' or not joined:
        problems.append('kubefleet: not Joined')
    # Heartbeats come every heartbeatPeriodSeconds (60 s by default), longer than many rounds, and after a failed one
    # the agent backs off (controller-runtime's retry delay doubles at each failure): one within three periods, the
    # staleness KubeFleet members are judged by in docs/day2.md (and the agent Deployment available, and no agent
    # process frozen - soak.judged) is a healthy member. Two periods called agents that were only backing off after a
    # hub outage unconverged (seed 183, round 2).
    # The member agent writes its heartbeat on its InternalMemberCluster; the hub agent copies it onto the MemberCluster
    # when it sees the change, after a hub outage tens of seconds late: the newer of the two is the agent's.
    beat = max([b for b in (_time(agent[0].get('lastReceivedHeartbeat')) if agent else None, _internal_heartbeat(fleet, member))
                if b is not None], default=None)
    period = (mc.get('spec') or {}).get('heartbeatPeriodSeconds') or 60
    if beat is None or time.time() - beat > 3 * period:
        problems.append('kubefleet: no heartbeat for %s s' % (beat and round(time.time() - beat)))
    if (mc['metadata'].get('labels') or {}).get('env') != 'lab':
        problems.append('kubefleet: MemberCluster labels %s' % mc['metadata'].get('labels'))
    if not _available(fleet, member, KUBEFLEET_AGENT):
        problems.append('kubefleet: agent Deployment not available')
    if not _secret(fleet, member, 'fleet-hub-credentials', 'hub-kubeconfig-secret'):
        problems.append('kubefleet: no hub token (Secret fleet-hub-credentials/hub-kubeconfig-secret) on the member')
    # The hub accepted a deleted identity's token for seconds after the deletion (seed 7301 round 4), long enough for
    # a heartbeat the checks above count: the identity itself must be there.
    identity = (mc.get('spec') or {}).get('identity') or {}
    if identity.get('name') and fleet.read_or_none(lambda: fleet.core('hub').read_namespaced_service_account(
            identity['name'], identity.get('namespace') or LOCK_NAMESPACE)) is None:
        problems.append('kubefleet: the identity %s/%s the MemberCluster names is not on the hub' % (
            identity.get('namespace'), identity['name']))
    return problems


def converged(fleet, since):
    """``{member: [problem, ...]}`` for the members that are not joined and healthy in both managers."""
    found = {}
    for member in fleet.members:
        problems = fleet_problems(fleet, member, since) + kubefleet_problems(fleet, member)
        if problems:
            found[member] = problems
    return found


def leftovers(fleet):
    """What the runs left on the hub that none should."""
    left = []
    tokens = fleet.custom('hub').list_namespaced_custom_object(*FLEET, 'fleet-default', 'clusterregistrationtokens')['items']
    left += ['registration token %s' % t['metadata']['name'] for t in tokens if t['metadata']['name'].startswith('fleetops-join-')]
    leases = fleet.coordination('hub').list_namespaced_lease(LOCK_NAMESPACE).items
    left += ['member lock %s' % lease.metadata.name for lease in leases if lease.metadata.name.startswith('fleetops-member-')]
    accounts = [sa.metadata.name for sa in fleet.core('hub').list_namespaced_service_account(LOCK_NAMESPACE).items]
    owners = dict((m + '-hub-cluster-access', m) for m in fleet.members)
    left += ['identity %s of no member' % name for name in accounts if name.endswith('-hub-cluster-access') and name not in owners]
    secrets = [s.metadata.name for s in fleet.core('hub').list_namespaced_secret(LOCK_NAMESPACE).items]
    for account, member in owners.items():
        tokens = [name for name in secrets if name.startswith(account + '-token')]
        if len(tokens) > 1:
            left.append('%s: %d identity tokens (%s)' % (member, len(tokens), ', '.join(sorted(tokens))))
    return left


class WorkloadWatch(threading.Thread):
    """Samples each placed ConfigMap (``placed``: [(namespace, name)]) on every member twice a second; ``absent()`` is
    ``{(member, name): longest absence in seconds}`` for those ever missing."""

    def __init__(self, fleet, placed):
        super().__init__(daemon=True)
        self.fleet, self.placed, self.done = fleet, placed, threading.Event()
        self.since, self.longest = {}, {}

    def sample(self):
        now = time.monotonic()
        for member in self.fleet.members:
            for namespace, name in self.placed:
                key = (member, name)
                try:
                    there = self.fleet.read_or_none(
                        lambda m=member, n=name, ns=namespace: self.fleet.core(m).read_namespaced_config_map(n, ns, _request_timeout=5)) is not None
                except Exception:  # pylint: disable=broad-except  # a member API server that is down: unknown, not absent
                    continue
                if there:
                    self.since.pop(key, None)
                else:
                    self.since.setdefault(key, now)
                    self.longest[key] = max(self.longest.get(key, 0.0), now - self.since[key])

    def run(self):
        while not self.done.is_set():
            self.sample()
            self.done.wait(0.5)

    def finish(self):
        self.done.set()
        self.join(30)
        self.sample()
        return dict((key, round(value, 1)) for key, value in self.longest.items())

    def missing_now(self):
        return sorted('%s: %s' % key for key in self.since)


def secret_files(scratch):
    """Files the runs left in their temporary directory: (holding a token or key, others)."""
    holding, others = [], []
    for path in sorted(p for p in scratch.rglob('*') if p.is_file()):
        data = path.read_bytes()
        (holding if any(marker in data for marker in SECRET_MARKERS) else others).append(str(path.relative_to(scratch)))
    return holding, others


def verdict(row):
    if row['runs'] is None:
        return 'NEVER converged'
    if row['missing_at_end']:
        return 'workload missing at the end'
    if row['absent_seconds'] and not row['absence_by_design']:
        return 'workload absent'
    if row.get('untouched_changed'):
        return 'changes on members the fault did not touch'
    if row['idempotent'] is False:
        return 'converged, re-run changed something'
    if row['leftovers']:
        return 'converged, left something'
    return 'ok'
