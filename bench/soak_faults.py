"""The soak's fault catalogue (``make soak``): what each kind does to the lab, and when.

A kind has an optional ``before`` step (applied to a member before the round's run starts) and an optional ``during``
step (applied at a random moment of the run, from a thread of its own). It says whether it takes the placed workloads
off the member by design (``removes``: the fleet manager's own reaction, e.g. a deleted Fleet ``Cluster`` makes Fleet
delete its ``BundleDeployments``) and how long after ``before`` a run can see it (``settle``). ``heal`` puts back what
a plain run cannot (an API server that is down); everything else is for the collection to repair. Each step gets the
round's ``Fleet`` (bench/soak.py) and the member.
"""

import datetime
import json
import math
import random
import socket
import time
from dataclasses import dataclass
from typing import Callable, Optional

FLEET = ('fleet.cattle.io', 'v1alpha1')
KUBEFLEET = ('cluster.kubernetes-fleet.io', 'v1beta1')
FLEET_AGENT = ('cattle-fleet-system', 'fleet-agent')
KUBEFLEET_AGENT = ('fleet-system', 'member-agent')
LOCK_NAMESPACE = 'fleetops-system'
MEMBERS = 3  # the soak lab's
# The runs' staleness rules, as an operator sets them for a lab whose Fleet agents check in every 5 s: a silent Fleet
# agent after 30 s, a KubeFleet one after three 10 s heartbeat periods (the defaults, 3600 s and 3 x 60 s, would make
# a frozen agent a fault no round could see).
STALE_AFTER = 30
HEARTBEAT_PERIOD = 10
RUN_VARS = {'member_join_wait_timeout': 150, 'member_join_fleet_agent_stale_after': STALE_AFTER,
            'member_join_kubefleet_heartbeat_period_seconds': HEARTBEAT_PERIOD}


@dataclass(frozen=True)
class Kind:
    name: str
    before: Optional[Callable] = None
    during: Optional[Callable] = None
    heal: Optional[Callable] = None
    removes: bool = False
    settle: float = 0  # seconds after ``before`` until the fault can be seen (a silent agent: its staleness rule)
    delay_ms: float = 0  # one-way delay between the round's runs and every API server (bench/scale_netns.py's relay)
    hub_wide: bool = False  # every member's agents lose the hub: a change on any member answers the fault


def _agent_component(member, agent):
    namespace, name = agent
    return '%s/%s/%s-*/%s' % (member, namespace, name, name)


def delete_deployment(agent):
    return lambda fleet, member: fleet.ignore_404(lambda: fleet.apps(member).delete_namespaced_deployment(agent[1], agent[0]))


def scale_to_zero(agent):
    return lambda fleet, member: fleet.apps(member).patch_namespaced_deployment_scale(agent[1], agent[0], {'spec': {'replicas': 0}})


def freeze(agent):
    return lambda fleet, member: fleet.component('freeze', _agent_component(member, agent))


def delete_secret(namespace, name):
    return lambda fleet, member: fleet.ignore_404(lambda: fleet.core(member).delete_namespaced_secret(name, namespace))


def delete_member_cluster(fleet, member):
    fleet.ignore_404(lambda: fleet.custom('hub').delete_cluster_custom_object(*KUBEFLEET, 'memberclusters', member))


def delete_identity(fleet, member):
    fleet.ignore_404(lambda: fleet.core('hub').delete_namespaced_service_account(member + '-hub-cluster-access', LOCK_NAMESPACE))


def delete_fleet_cluster(fleet, member):
    fleet.ignore_404(lambda: fleet.custom('hub').delete_namespaced_custom_object(*FLEET, 'fleet-default', 'clusters', member))


def delete_run_token(fleet, _member, seconds=90):
    """Delete the run's registration token(s) as soon as one appears (within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not fleet.stopping.is_set():
        tokens = [t['metadata']['name'] for t in fleet.custom('hub').list_namespaced_custom_object(
            *FLEET, 'fleet-default', 'clusterregistrationtokens')['items'] if t['metadata']['name'].startswith('fleetops-join-')]
        for name in tokens:
            fleet.ignore_404(lambda n=name: fleet.custom('hub').delete_namespaced_custom_object(
                *FLEET, 'fleet-default', 'clusterregistrationtokens', n))
        if tokens:
            fleet.note('deleted token(s) %s' % ', '.join(tokens))
            return
        time.sleep(0.3)


def api_server_outage(component, seconds):
    """Kill an API server and start it again ``seconds`` later (None: only when the round heals the lab)."""
    def during(fleet, member):
        name = component(member)
        fleet.component('kill', name)
        if seconds is not None:
            fleet.stopping.wait(seconds)
            fleet.component('start', name)
    return during


def start_api_server(component):
    return lambda fleet, member: fleet.component('start', component(member))


def kill_run(fleet, _member):
    fleet.kill_run()


def second_run(fleet, _member):
    fleet.start_second_run()


def relabel(fleet, member):
    patch = {'metadata': {'labels': {'env': 'soak-changed', 'member': None}}}
    fleet.custom('hub').patch_cluster_custom_object(*KUBEFLEET, 'memberclusters', member, patch)
    fleet.custom('hub').patch_namespaced_custom_object(*FLEET, 'fleet-default', 'clusters', member, patch)


def change_agent_image(fleet, member):
    deployment = fleet.apps(member).read_namespaced_deployment(KUBEFLEET_AGENT[1], KUBEFLEET_AGENT[0])
    container = deployment.spec.template.spec.containers[0]
    image = container.image.rsplit(':', 1)[0] + ':soak-changed'
    patch = {'spec': {'template': {'spec': {'containers': [{'name': container.name, 'image': image}]}}}}
    fleet.apps(member).patch_namespaced_deployment(KUBEFLEET_AGENT[1], KUBEFLEET_AGENT[0], patch)


def foreign_lock(fleet, member, seconds=45):
    """A member lock a run on another controller left (its process cannot be seen from here), live ``seconds`` more;
    with the KubeFleet agent scaled to 0, so the run needs the member."""
    scale_to_zero(KUBEFLEET_AGENT)(fleet, member)
    holder = {'host': 'soak-other-' + socket.gethostname(), 'boot_id': 'soak', 'pid_namespace': 'soak', 'pid': 1, 'start': 1}
    # a fraction of a second the client keeps: it sends a whole second without one, which a Lease's MicroTime refuses
    moment = datetime.datetime.now(datetime.timezone.utc)
    now = moment.replace(microsecond=moment.microsecond or 1).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    body = {'metadata': {'name': 'fleetops-member-' + member, 'namespace': LOCK_NAMESPACE,
                         'labels': {'app.kubernetes.io/managed-by': 'fleetops.registration', 'fleetops.registration/member': member},
                         'annotations': {'fleetops.registration/holder-process': json.dumps(holder),
                                         'fleetops.registration/holder': 'a soak run on another controller'}},
            'spec': {'holderIdentity': 'soakdead01', 'leaseDurationSeconds': seconds, 'acquireTime': now, 'renewTime': now}}
    fleet.coordination('hub').create_namespaced_lease(LOCK_NAMESPACE, body)


def _hub_apiserver(_member):
    return 'hub-apiserver'


def _member_apiserver(member):
    return member + '-apiserver'


CATALOGUE = [
    Kind('fleet_agent_deleted', before=delete_deployment(FLEET_AGENT)),
    Kind('kubefleet_agent_deleted', before=delete_deployment(KUBEFLEET_AGENT)),
    Kind('fleet_agent_scaled_to_zero', before=scale_to_zero(FLEET_AGENT)),
    Kind('kubefleet_agent_scaled_to_zero', before=scale_to_zero(KUBEFLEET_AGENT)),
    Kind('fleet_agent_frozen', before=freeze(FLEET_AGENT), settle=STALE_AFTER + 5),
    Kind('kubefleet_agent_frozen', before=freeze(KUBEFLEET_AGENT), settle=3 * HEARTBEAT_PERIOD + 5),
    Kind('fleet_credential_deleted', before=delete_secret(*FLEET_AGENT)),
    Kind('kubefleet_credential_deleted', before=delete_secret('fleet-hub-credentials', 'hub-kubeconfig-secret')),
    Kind('member_cluster_deleted', before=delete_member_cluster, removes=True),
    Kind('kubefleet_identity_deleted', before=delete_identity),
    Kind('fleet_cluster_deleted', before=delete_fleet_cluster, removes=True),
    Kind('token_deleted_while_waited_for', before=delete_secret(*FLEET_AGENT), during=delete_run_token),
    Kind('hub_apiserver_killed_in_run', before=scale_to_zero(FLEET_AGENT), during=api_server_outage(_hub_apiserver, 8), hub_wide=True),
    Kind('hub_apiserver_down_past_run', before=scale_to_zero(KUBEFLEET_AGENT), during=api_server_outage(_hub_apiserver, None),
         heal=start_api_server(_hub_apiserver), hub_wide=True),
    Kind('member_apiserver_down_in_run', before=scale_to_zero(FLEET_AGENT), during=api_server_outage(_member_apiserver, 10)),
    Kind('run_killed', before=delete_deployment(KUBEFLEET_AGENT), during=kill_run),
    Kind('second_run_alongside', before=delete_deployment(FLEET_AGENT), during=second_run),
    Kind('relabelled_on_hub', before=relabel, removes=True),
    Kind('agent_image_changed', before=change_agent_image),
    Kind('lock_of_a_dead_run_elsewhere', before=foreign_lock),
    # Every API request of the round's runs crosses a relay holding it 25 ms each way (a 50 ms round trip), on its own
    # or with the round's other fault; the agents and the soak's own reads are not delayed.
    Kind('latency_50ms_for_the_round', delay_ms=25),
]
KINDS = dict((kind.name, kind) for kind in CATALOGUE)


def round_delay_ms(faults):
    """The one-way delay the round's runs cross (the largest a fault of ``faults`` asks for; 0: none)."""
    return max([kind.delay_ms for kind, _member, _delay in faults] + [0])


def _round_draw(seed, number):
    """The round's own draw: how many faults, and for each a member and the task of the run it comes at."""
    rng = random.Random('%d:%d' % (seed, number))
    count = rng.choice((1, 1, 2))
    return [('member%d' % rng.randint(1, MEMBERS), max(1, math.ceil(rng.uniform(0, 20)))) for _fault in range(count)]


def _kind_cycles(seed, draws):
    """The first ``draws`` kinds of the seed's stream: the catalogue in a seeded order, then again in another, so that
    every kind comes once before any comes twice (and no cycle starts with the kind the one before ended on)."""
    stream, cycle = [], 0
    while len(stream) < draws:
        order = random.Random('%d:cycle:%d' % (seed, cycle)).sample(CATALOGUE, len(CATALOGUE))
        if stream and order[0] is stream[-1]:
            order[0], order[1] = order[1], order[0]
        stream.extend(order)
        cycle += 1
    return stream[:draws]


def choose(seed, number):
    """The round's faults from the seed and its number alone: ``[(kind, member, the task of the run it comes at)]``
    (the n-th task the run starts, 1 to 20: the member's steps are the 13th to the 20th of a run that needs them).
    Rounds take their kinds in turn from the seed's cycles through the catalogue, so N rounds try every kind at least
    N // len(CATALOGUE) times."""
    before = sum(len(_round_draw(seed, earlier)) for earlier in range(1, number))
    mine = _round_draw(seed, number)
    kinds = _kind_cycles(seed, before + len(mine))[before:]
    return [(kind, member, task) for kind, (member, task) in zip(kinds, mine)]
