"""The playbooks, run by the real ansible-playbook against the lab's inventory.

One scenario, in order, on the lab's member1 and member2 (both backends each): leave (to start from a clean
hub whatever ran before, e.g. ``make demo``), join, join again (no changes), join in check mode with other
labels (reported, not applied), status, leave, leave again (no changes). The hub is inspected with the
kubernetes client after each step; the secrets the join creates must never appear in ansible-playbook's output.
"""

import base64
import datetime
import json
import os
import re
import subprocess
import sys
import threading

import pytest
import yaml
from kubernetes import client
from kubernetes import config as kube_config

from modrun import REPO, collections_root, run_module
from kube_helpers import ignore_404, read_or_none, wait_for

IDENTITY_NS = "fleetops-system"  # the KubeFleet identities' and the member locks' hub namespace (issue 31)
CREDENTIAL_NS = "fleetops-credentials"  # hub.yml's own ServiceAccounts, where its Role does not reach (issue 46 item 2)

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("members_restored_on_failure")]

FLEET = ("fleet.cattle.io", "v1alpha1")
KUBEFLEET = ("cluster.kubernetes-fleet.io", "v1beta1")
FLEET_NS = "fleet-default"
RECAP = re.compile(r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
                   r"failed=(?P<failed>\d+)", re.M)


class Run:
    """One ansible-playbook run: its output and PLAY RECAP."""

    def __init__(self, proc):
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.recap = dict((m.group("host"), dict((k, int(v)) for k, v in m.groupdict().items() if k != "host"))
                          for m in RECAP.finditer(proc.stdout))

    def changed(self, host):
        return self.recap[host]["changed"]

    def unchanged(self, hosts):
        """Whether exactly ``hosts`` ran and none of them changed anything (an empty recap proves nothing)."""
        return set(self.recap) == set(hosts) and all(self.changed(host) == 0 for host in hosts)


def playbook_command(lab, name, *args, tmp_path):
    """``(argv, env)`` of ansible-playbook running ``name`` against the lab's inventory."""
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_root()),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
        "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    })
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(lab.inventory),
            str(REPO / "playbooks" / name)] + list(args)
    return argv, env


def playbook(lab, name, *args, tmp_path, fails=False):
    argv, env = playbook_command(lab, name, *args, tmp_path=tmp_path)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=900, check=False)
    run = Run(proc)
    if fails:
        assert run.returncode != 0, "%s should have failed:\n%s" % (name, run.output[-4000:])
        return run
    if run.returncode != 0:
        failures = "\n".join(line for line in run.output.splitlines() if line.startswith(("fatal:", "failed:", "[ERROR]")))
        raise AssertionError("%s failed (%d):\n%s\n...\n%s" % (name, run.returncode, failures, run.output[-4000:]))
    return run


class Hub:
    """What the lab's hub and members hold, read with the admin kubeconfig."""

    def __init__(self, lab):
        self.lab = lab
        self.custom = client.CustomObjectsApi(lab.api_client("hub"))
        self.core = client.CoreV1Api(lab.api_client("hub"))

    _get = staticmethod(read_or_none)

    def fleet_cluster(self, name):
        return self._get(lambda: self.custom.get_namespaced_custom_object(*FLEET, FLEET_NS, "clusters", name))

    def fleet_list(self, plural):
        return self.custom.list_namespaced_custom_object(*FLEET, FLEET_NS, plural)["items"]

    def member_cluster(self, name):
        return self._get(lambda: self.custom.get_cluster_custom_object(*KUBEFLEET, "memberclusters", name))

    def namespace(self, name):
        return self._get(lambda: self.core.read_namespace(name))

    def service_account(self, name):
        return self._get(lambda: self.core.read_namespaced_service_account(name, IDENTITY_NS))

    def secret_value(self, core, namespace, name, key):
        secret = self._get(lambda: core.read_namespaced_secret(name, namespace))
        return base64.b64decode(secret.data[key]).decode() if secret is not None and (secret.data or {}).get(key) else None

    def releases(self, member):
        proc = self.lab.run_helm(member, "list", "--all-namespaces", "--output", "yaml")
        return sorted(r["name"] for r in yaml.safe_load(proc.stdout) or [])


def condition(obj, cond_type):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == cond_type:
            return cond.get("status")
    return None


@pytest.fixture
def hub(lab_controllers):
    text = lab_controllers.inventory.read_text()
    if "fleetops_kubeconfig" not in text:
        pytest.fail("the running lab's %s predates the fleetops_* inventory variables; run 'make lab-down' and let the tests "
                    "start a lab" % lab_controllers.inventory)
    return Hub(lab_controllers)


# What the joins create on a member (namespaces; the KubeFleet agent's leader-election Leases in kube-system), which
# a finished leave leaves no trace of.
MEMBER_NAMESPACES = ("cattle-fleet-system", "fleet-system", "fleet-hub-credentials")
AGENT_LEASES = ("136224848560.member.fleet.azure.com", "136224848560.hub.fleet.azure.com")


@pytest.fixture
def members_restored_on_failure(request, lab_controllers, tmp_path):
    """The lab's members as the test found them, should it fail half way: the tests of a worker share one lab, and
    a test that failed with members joined (or half-joined) made the next one fail at its start. After a failure the
    members are left, and those that had joined both fleet managers before the test are joined again."""
    hub = Hub(lab_controllers)
    joined = [m for m in lab_controllers.members if hub.fleet_cluster(m) is not None and hub.member_cluster(m) is not None]
    yield
    if not getattr(request.node, "lab_test_failed", False):
        return
    restore = tmp_path / "restore"
    restore.mkdir(exist_ok=True)
    lab_controllers.heal()  # a fault the test injected may still be in place
    playbook(lab_controllers, "leave_cluster.yml", "-e", "fleetops_leave_all=true", tmp_path=restore)
    if joined:
        playbook(lab_controllers, "join_cluster.yml", "--limit", ",".join(["fleet-hub"] + joined), tmp_path=restore)


def assert_left(hub, members, client_ids=()):
    for member in members:
        assert hub.fleet_cluster(member) is None
        assert hub.member_cluster(member) is None
        assert hub.namespace("fleet-member-" + member) is None
        assert hub.service_account(member + "-hub-cluster-access") is None
        assert [r for r in hub.releases(member) if r.startswith(("fleet-agent", "member-agent"))] == []
        core = client.CoreV1Api(hub.lab.api_client(member))
        leases = client.CoordinationV1Api(hub.lab.api_client(member))
        assert [ns for ns in MEMBER_NAMESPACES if hub._get(lambda n=ns: core.read_namespace(n)) is not None] == []
        assert [name for name in AGENT_LEASES if hub._get(lambda n=name: leases.read_namespaced_lease(n, "kube-system")) is not None] == []
    leftovers = [r["metadata"]["name"] for r in hub.fleet_list("clusterregistrations") if r["spec"].get("clientID") in client_ids]
    assert leftovers == [], "ClusterRegistrations of the removed clusters were left behind: %s" % leftovers


def test_join_rerun_status_and_leave(lab_controllers, hub, tmp_path):  # pylint: disable=too-many-locals,too-many-statements
    lab = lab_controllers
    members = ["member1", "member2"]

    # A clean start, whatever ran on this lab before.
    playbook(lab, "leave_cluster.yml", "-e", "fleetops_leave_all=true", tmp_path=tmp_path)
    assert_left(hub, members)

    join = playbook(lab, "join_cluster.yml", "-v", tmp_path=tmp_path)
    client_ids = {}
    for member in members:
        assert join.changed(member) > 0
        cluster = hub.fleet_cluster(member)
        assert cluster["metadata"]["labels"]["env"] == "lab" and cluster["metadata"]["labels"]["member"] == member
        client_ids[member] = cluster["spec"]["clientID"]
        assert re.match(r"^[0-9a-f]{64}$", client_ids[member]), "the generated client ID is not 64 random hex digits"
        assert cluster["status"]["agent"]["lastSeen"], "the agent never checked in"
        registrations = [r for r in hub.fleet_list("clusterregistrations") if r["spec"].get("clientID") == client_ids[member]]
        assert registrations and all(r["status"].get("granted") for r in registrations)
        mc = hub.member_cluster(member)
        assert mc["metadata"]["labels"]["env"] == "lab" and mc["metadata"]["labels"]["member"] == member
        assert condition(mc, "ReadyToJoin") == "True"
        agent = [a for a in mc["status"].get("agentStatus") or [] if a["type"] == "MemberAgent"]
        assert agent and [c["status"] for c in agent[0]["conditions"] if c["type"] == "Joined"] == ["True"]
        # fleet-agent-<cluster> is the agent bundle Fleet's manager deploys itself (manageAgent, Fleet's default).
        assert set(hub.releases(member)) - {"fleet-agent-" + member} == {"fleet-agent", "member-agent"}
        assert "%s: rancher_fleet %s/%s: agent registered, checked in" % (member, FLEET_NS, member) in join.output
        assert "kubefleet %s: agent installed/updated, joined" % member in join.output
    assert len(set(client_ids.values())) == 2
    # The run's registration token was revoked once the agents had registered.
    assert hub.fleet_list("clusterregistrationtokens") == []
    # Secrets the join created never reach the output, even with -v.
    for member in members:
        member_core = client.CoreV1Api(lab.api_client(member))
        identity_token = hub.secret_value(hub.core, IDENTITY_NS, member + "-hub-cluster-access-token", "token")
        agent_kubeconfig = yaml.safe_load(hub.secret_value(member_core, "cattle-fleet-system", "fleet-agent", "kubeconfig"))
        agent_credential = agent_kubeconfig["users"][0]["user"]["token"]
        assert identity_token and identity_token not in join.output
        assert agent_credential and agent_credential not in join.output
    assert "fleetops_members" in join.output  # the per-cluster statistics AWX keeps

    again = playbook(lab, "join_cluster.yml", tmp_path=tmp_path)
    assert again.unchanged({"fleet-hub", "member1", "member2"}), again.recap
    # A re-run with nothing to change takes no member lock: no process, no request for it.
    assert re.search(r"Lock on the hub each member that needs a step[^\n]*\n(skipping: \[member1\])", again.output), again.output[-3000:]
    for member in members:
        assert hub.fleet_cluster(member)["spec"]["clientID"] == client_ids[member], "a re-run must keep the client ID"
        assert "%s: rancher_fleet %s/%s: agent unchanged, checked in, ready; labels in sync" % (member, FLEET_NS, member) in again.output
        assert "kubefleet %s: agent unchanged, joined, healthy; labels in sync" % member in again.output
    assert hub.fleet_list("clusterregistrationtokens") == []

    # Label drift is reported in check mode and not applied.
    predicted = playbook(lab, "join_cluster.yml", "--check", "-e", '{"fleetops_labels": {"env": "staging"}}', tmp_path=tmp_path)
    for member in members:
        assert predicted.changed(member) == 2  # the Fleet Cluster and the MemberCluster, nothing else
        assert "%s: rancher_fleet %s/%s: agent unchanged, checked in, ready; labels ~env=staging" % (member, FLEET_NS, member) \
            in predicted.output
        assert "kubefleet %s: agent unchanged, joined, healthy; labels ~env=staging" % member in predicted.output
        assert hub.fleet_cluster(member)["metadata"]["labels"]["env"] == "lab"
        assert hub.member_cluster(member)["metadata"]["labels"]["env"] == "lab"

    # The MemberCluster's heartbeat period is judged as its labels are: a re-run that asks for another sets it (a
    # healthy member's re-run passes no other step that would), and one with the default puts it back.
    only_kubefleet = ("--limit", "member1", "-e", '{"fleetops_survey_backends": ["kubefleet"]}')
    faster = playbook(lab, "join_cluster.yml", *only_kubefleet, "-e", "member_join_kubefleet_heartbeat_period_seconds=30",
                      tmp_path=tmp_path)
    assert "kubefleet member1: agent unchanged, joined, healthy; labels in sync; heartbeatPeriodSeconds 60 -> 30" in faster.output, \
        faster.output[-3000:]
    assert hub.member_cluster("member1")["spec"]["heartbeatPeriodSeconds"] == 30
    back = playbook(lab, "join_cluster.yml", *only_kubefleet, tmp_path=tmp_path)
    assert "heartbeatPeriodSeconds 30 -> 60" in back.output and hub.member_cluster("member1")["spec"]["heartbeatPeriodSeconds"] == 60

    # An agent silent for longer than allowed (here: any) is removed with its credential and registers again with a
    # new token; the token is revoked only after the hub granted the new registration and the agent checked in.
    before = hub.fleet_cluster("member1")["status"]["agent"]["lastSeen"]
    old_registrations = set(r["metadata"]["name"] for r in hub.fleet_list("clusterregistrations")
                            if r["spec"].get("clientID") == client_ids["member1"])
    again = playbook(lab, "join_cluster.yml", "--limit", "member1", "-e", "member_join_fleet_agent_stale_after=-1",
                     "-e", '{"fleetops_survey_backends": ["rancher_fleet"]}', tmp_path=tmp_path)
    assert re.search(r"member1: rancher_fleet %s/member1: agent re-registered \(the agent last checked in \d+s ago, more than "
                     r"stale_after \(-1s\)\), checked in, ready" % FLEET_NS,
                     again.output), again.output[-3000:]
    cluster = hub.fleet_cluster("member1")
    assert cluster["spec"]["clientID"] == client_ids["member1"]
    assert cluster["status"]["agent"]["lastSeen"] != before
    new_registrations = [r for r in hub.fleet_list("clusterregistrations")
                         if r["spec"].get("clientID") == client_ids["member1"] and r["metadata"]["name"] not in old_registrations]
    assert new_registrations and all(r["status"].get("granted") for r in new_registrations)
    assert hub.fleet_list("clusterregistrationtokens") == []
    rotate_credentials(lab, hub, "member2", tmp_path)
    expiring_credentials(lab, hub, "member2", tmp_path)
    agent_setting_kept_and_repaired(lab, hub, "member1", tmp_path)
    settled = playbook(lab, "join_cluster.yml", tmp_path=tmp_path)
    assert settled.unchanged({"fleet-hub", "member1", "member2"}), settled.recap

    # Extra vars as AWX injects them: blank optional credential and survey fields count as not set, so the hub is
    # still the hub host's context (not the kubeconfig's current context, here a member) and each host keeps its own
    # managers and namespace.
    elsewhere = tmp_path / "current-context-member2.yaml"
    elsewhere.write_text(lab.kubeconfig.read_text().replace("current-context: hub", "current-context: member2"))
    blanks = {"fleetops_hub_kubeconfig": str(elsewhere), "fleetops_hub_context": "", "fleetops_survey_backends": "",
              "fleetops_backends": "", "fleetops_fleet_namespace": "", "fleetops_kubefleet_namespace": "", "fleetops_labels": ""}
    awx = playbook(lab, "join_cluster.yml", "--check", "-e", json.dumps(blanks), tmp_path=tmp_path)
    assert awx.unchanged({"fleet-hub", "member1", "member2"}), awx.recap
    assert "member1: rancher_fleet %s/member1: agent unchanged" % FLEET_NS in awx.output

    # The batch's states are read in one process, but a member whose state cannot be read fails alone, with the reason.
    broken = tmp_path / "broken-member2.yml"
    broken.write_text(yaml.safe_dump({"all": {"hosts": {"member2": {"fleetops_context": "no-such-context"}}}}))
    partial = playbook(lab, "join_cluster.yml", "-i", str(broken), tmp_path=tmp_path, fails=True)
    assert partial.recap["member2"]["failed"] == 1 and partial.recap["member1"]["failed"] == 0, partial.recap
    assert partial.changed("member1") == 0 and "no-such-context" in partial.output
    assert "member1: rancher_fleet %s/member1: agent unchanged, checked in, ready; labels in sync" % FLEET_NS in partial.output

    status = playbook(lab, "cluster_status.yml", tmp_path=tmp_path)
    assert status.changed("fleet-hub") == 0
    for member in members:
        row = re.search(r'"%s +yes +\| checked-in +yes .*\| joined +yes .*\| (?P<labels>[^"]*)"' % member, status.output)
        assert row, status.output[-3000:]
        assert sorted(row.group("labels").split(",")) == ["env=lab", "member=%s" % member]

    # A leave must be meant: no limit at all refuses before anything changes; an explicit limit naming them all is meant.
    unmeant = playbook(lab, "leave_cluster.yml", tmp_path=tmp_path, fails=True)
    assert "run without --limit" in unmeant.output and "fleetops_leave_all=true" in unmeant.output, unmeant.output[-3000:]
    assert unmeant.recap and all(host["changed"] == 0 for host in unmeant.recap.values()), unmeant.recap
    for member in members:
        assert hub.fleet_cluster(member) is not None and hub.member_cluster(member) is not None, "the refused leave touched " + member

    leave = playbook(lab, "leave_cluster.yml", "--limit", ",".join(members), tmp_path=tmp_path)
    for member in members:
        assert leave.changed(member) == 5  # MemberCluster, member agent, identity, Fleet agent, Cluster
        assert re.search(r"%s: kubefleet removed: MemberCluster, agent, identity \| rancher_fleet removed: agent, agent credential, "
                         r"(Fleet-managed agent release fleet-agent-%s, )?Cluster, 1 ClusterRegistration" % (member, member), leave.output)
    assert_left(hub, members, set(client_ids.values()))

    again = playbook(lab, "leave_cluster.yml", "-e", "fleetops_leave_all=true", tmp_path=tmp_path)
    assert again.unchanged(members), again.recap


def hub_answer(lab, token):
    """The HTTP status of the hub's SelfSubjectReview with ``token`` (201: accepted, 401: rejected)."""
    configuration = client.Configuration()
    configuration.host, configuration.ssl_ca_cert = lab.api_urls["hub"], str(lab.ca_files["hub"])
    configuration.api_key = {"authorization": "Bearer " + token}
    try:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        client.AuthenticationV1Api(client.ApiClient(configuration)).create_self_subject_review(review)
        return 201
    except client.ApiException as exc:
        return exc.status


class MemberWatch(threading.Thread):
    """Samples a member's hub objects every second while a run rotates its credentials: was it ever not Joined
    (KubeFleet), did its Fleet Cluster ever go, and which heartbeats and check-ins did the hub see?

    It reads with an API client of its own and a timeout per request, and a read that fails is kept in ``errors``
    rather than ending the thread: a sampler that died or hung silently once left a rotation with the one heartbeat
    it saw before the run. ``finish()`` stops it and takes a last sample once the run is over, so the samples always
    span the whole run."""

    TIMEOUT = 10

    def __init__(self, hub, member):
        super().__init__(daemon=True)
        self.member, self.stop, self.samples, self.errors = member, threading.Event(), [], []
        self.custom = client.CustomObjectsApi(hub.lab.api_client("hub"))

    def sample(self):
        try:
            mc = read_or_none(lambda: self.custom.get_cluster_custom_object(
                *KUBEFLEET, "memberclusters", self.member, _request_timeout=self.TIMEOUT)) or {}
            cluster = read_or_none(lambda: self.custom.get_namespaced_custom_object(
                *FLEET, FLEET_NS, "clusters", self.member, _request_timeout=self.TIMEOUT))
        except Exception as exc:  # pylint: disable=broad-except  # kept and shown with the samples
            self.errors.append("%s: %r" % (datetime.datetime.now(datetime.timezone.utc).isoformat(), exc))
            return
        agent = [a for a in mc.get("status", {}).get("agentStatus") or [] if a["type"] == "MemberAgent"]
        self.samples.append({"joined": condition(mc, "Joined"), "heartbeat": agent[0].get("lastReceivedHeartbeat") if agent else None,
                             "cluster": cluster is not None,
                             "last_seen": ((cluster or {}).get("status") or {}).get("agent", {}).get("lastSeen")})

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(1)

    def finish(self):
        self.stop.set()
        self.join()
        self.sample()

    def report(self):
        return {"samples": self.samples, "errors": self.errors}


def agent_credential_token(lab, hub, member):
    """The token in the Fleet agent's credential on the member (the kubeconfig of Secret fleet-agent)."""
    kubeconfig = yaml.safe_load(hub.secret_value(client.CoreV1Api(lab.api_client(member)), "cattle-fleet-system", "fleet-agent", "kubeconfig"))
    return kubeconfig["users"][0]["user"]["token"]


def rotate_credentials(lab, hub, member, tmp_path):
    """A credential rotation in both fleet managers: the member keeps its membership (KubeFleet never leaves Joined,
    the Fleet Cluster stays), and the old credentials are rejected by the hub afterwards - KubeFleet's revoked only once
    the agent has sent a heartbeat made with the new token, Fleet's when Fleet grants the new registration."""
    old_token = hub.secret_value(hub.core, IDENTITY_NS, member + "-hub-cluster-access-token", "token")
    old_credential = agent_credential_token(lab, hub, member)
    assert hub_answer(lab, old_token) == 201 and hub_answer(lab, old_credential) == 201
    apps = client.AppsV1Api(lab.api_client(member))
    agent_uid = apps.read_namespaced_deployment("fleet-agent", "cattle-fleet-system").metadata.uid
    watch = MemberWatch(hub, member)
    watch.start()
    try:
        rotated = playbook(lab, "join_cluster.yml", "--limit", member, "-e", "fleetops_rotate_credentials=true", tmp_path=tmp_path)
    finally:
        watch.finish()
    assert "%s: rancher_fleet %s/%s: agent credential rotated, checked in, ready" % (member, FLEET_NS, member) in rotated.output, \
        rotated.output[-3000:]
    assert "kubefleet %s: agent credential rotated, joined, healthy" % member in rotated.output, rotated.output[-3000:]
    new_token = hub.secret_value(hub.core, IDENTITY_NS, member + "-hub-cluster-access-token-2", "token")
    new_credential = agent_credential_token(lab, hub, member)
    assert new_token and new_token != old_token and new_credential != old_credential
    for secret in (old_token, new_token, old_credential, new_credential):
        assert secret not in rotated.output
    assert hub.secret_value(hub.core, IDENTITY_NS, member + "-hub-cluster-access-token", "token") is None
    member_core = client.CoreV1Api(lab.api_client(member))
    assert hub.secret_value(member_core, "fleet-hub-credentials", "hub-kubeconfig-secret", "token") == new_token
    # The token authenticator reads Secrets through an informer: a revocation reaches it within seconds.
    for old in (old_token, old_credential):
        wait_for(lambda old=old: hub_answer(lab, old) == 401 or None, 60, "the hub to reject a replaced credential")
    assert hub_answer(lab, new_token) == 201 and hub_answer(lab, new_credential) == 201
    assert len(watch.samples) > 1 and all(s["joined"] == "True" and s["cluster"] for s in watch.samples), watch.report()
    # The run waited for a heartbeat and a check-in newer than the ones before it, so the last sample (after the run)
    # differs from the first (before it).
    assert len(set(s["heartbeat"] for s in watch.samples)) > 1 and len(set(s["last_seen"] for s in watch.samples)) > 1, watch.report()
    # The Fleet agent is registered again in place (its Deployment kept, only its pods replaced), switched right after a
    # check-in, so the longest time between two check-ins (the agents' own timestamps, sampled every second; not wall
    # times of the run) stays within Fleet's own restart of an agent: ClusterRegisterDelay (15 s, Fleet v0.16.0
    # pkg/durations) plus two check-in intervals. How short it is, is the bench's figure (make bench: rotation_gap_intervals),
    # not this test's: under the suite's parallel load it was seen at 15 s against a 5 s interval.
    assert apps.read_namespaced_deployment("fleet-agent", "cattle-fleet-system").metadata.uid == agent_uid
    interval = fleet_checkin_interval(hub)
    assert longest_gap(s["last_seen"] for s in watch.samples) <= FLEET_REGISTER_DELAY + 2 * interval, (interval, watch.report())
    period = hub.member_cluster(member)["spec"].get("heartbeatPeriodSeconds") or 60
    assert longest_gap(s["heartbeat"] for s in watch.samples) <= 2 * period, (period, watch.report())


FLEET_REGISTER_DELAY = 15  # seconds: Fleet v0.16.0 durations.ClusterRegisterDelay, an agent's wait before it registers


def fleet_checkin_interval(hub):
    """The lab hub's agentCheckinInterval in seconds (ConfigMap fleet-controller; the lab sets seconds, e.g. 15s)."""
    config = json.loads(hub.core.read_namespaced_config_map("fleet-controller", "cattle-fleet-system").data["config"])
    text = config["agentCheckinInterval"]
    assert re.fullmatch(r"\d+s", text), "the lab's agentCheckinInterval %r is not in seconds" % text
    return int(text[:-1])


def longest_gap(stamps):
    """The longest time in seconds between consecutive distinct RFC 3339 timestamps (None ignored)."""
    seen = sorted(set(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ") for t in stamps if t))
    return max((later - earlier).total_seconds() for earlier, later in zip(seen, seen[1:]))


AGENT_TOLERATION = {"key": "fleetops.test/dedicated", "operator": "Exists", "effect": "NoSchedule"}
AGENT_SETTING = {"tolerations": [AGENT_TOLERATION], "env": {"NO_PROXY": ".svc,.cluster.local", "FLEETOPS_SITE": "lab-a"}}


KUBEFLEET_ONLY = json.dumps({"fleetops_survey_backends": ["kubefleet"]})
THIRTY_DAYS = 30 * 86400


def jwt_claims(token):
    """The payload of a JWT, read as the test's own check (not the collection's)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def member_token(lab, hub, member):
    return hub.secret_value(client.CoreV1Api(lab.api_client(member)), "fleet-hub-credentials", "hub-kubeconfig-secret", "token")


def watched_join(lab, hub, member, tmp_path, *args):
    """A KubeFleet-only join of ``member`` while the hub is sampled: it must never stop being Joined."""
    watch = MemberWatch(hub, member)
    watch.start()
    try:
        run = playbook(lab, "join_cluster.yml", "--limit", member, "-e", KUBEFLEET_ONLY, *args, tmp_path=tmp_path)
    finally:
        watch.finish()
    assert len(watch.samples) > 1 and all(s["joined"] == "True" for s in watch.samples), watch.report()
    return run


def expiring_credentials(lab, hub, member, tmp_path):
    """The KubeFleet member's token expires by default and an ordinary run renews it: a legacy one (only on request)
    is migrated by a plain run; one near expiry (its recorded issue time moved back, a forced clock) makes member_info
    warn and the next run rotates it; each replaced token is rejected afterwards, the member never leaves Joined."""
    token = member_token(lab, hub, member)
    claims = jwt_claims(token)
    assert THIRTY_DAYS - 300 <= claims["exp"] - claims["iat"] <= THIRTY_DAYS, claims
    assert claims["kubernetes.io"]["secret"]["name"].startswith(member + "-hub-cluster-access-token"), claims

    watched_join(lab, hub, member, tmp_path, "-e", "fleetops_rotate_credentials=true",
                 "-e", "fleetops_kubefleet_token_lifetime=never", "-e", "fleetops_allow_non_expiring_token=true")
    legacy = member_token(lab, hub, member)
    assert legacy != token and "exp" not in jwt_claims(legacy)
    wait_for(lambda: hub_answer(lab, token) == 401 or None, 60, "the hub to reject the replaced token")

    migrated_run = watched_join(lab, hub, member, tmp_path)
    assert "kubefleet %s: agent credential rotated, joined, healthy" % member in migrated_run.output, migrated_run.output[-3000:]
    migrated = member_token(lab, hub, member)
    claims = jwt_claims(migrated)
    assert THIRTY_DAYS - 300 <= claims["exp"] - claims["iat"] <= THIRTY_DAYS, claims
    wait_for(lambda: hub_answer(lab, legacy) == 401 or None, 60, "the hub to reject the legacy token")
    for secret in (token, legacy, migrated):
        assert secret not in migrated_run.output

    member_core = client.CoreV1Api(lab.api_client(member))
    long_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=100)).strftime("%Y-%m-%dT%H:%M:%SZ")
    member_core.patch_namespaced_secret("hub-kubeconfig-secret", "fleet-hub-credentials",
                                        {"metadata": {"annotations": {"fleetops.registration/token-issued": long_ago}}})
    checked = playbook(lab, "join_cluster.yml", "--check", "--limit", member, "-e", KUBEFLEET_ONLY, tmp_path=tmp_path)
    flat = " ".join(checked.output.split())
    assert "KubeFleet member %s: the member agent's token expires at" % member in flat and "was not renewed" in flat, \
        checked.output[-3000:]
    assert member_token(lab, hub, member) == migrated

    renewed_run = watched_join(lab, hub, member, tmp_path)
    assert "kubefleet %s: agent credential rotated, joined, healthy" % member in renewed_run.output, renewed_run.output[-3000:]
    renewed = member_token(lab, hub, member)
    assert renewed != migrated and jwt_claims(renewed)["exp"] > claims["exp"]
    wait_for(lambda: hub_answer(lab, migrated) == 401 or None, 60, "the hub to reject the renewed token")
    assert hub_answer(lab, renewed) == 201


def env_values(core, namespace, container):
    """A container's environment as its process gets it: values, and those read from Secrets of ``namespace``."""
    values = {}
    for item in container.env or []:
        ref = item.value_from.secret_key_ref if item.value_from else None
        if ref is not None:
            secret = read_or_none(lambda r=ref: core.read_namespaced_secret(r.name, namespace))
            values[item.name] = base64.b64decode(secret.data[ref.key]).decode() if secret and ref.key in (secret.data or {}) else None
        elif item.value_from is None:
            values[item.name] = item.value
    return values


def carries_setting(deployment, core):
    """Whether an agent Deployment (a kubernetes client object) carries AGENT_SETTING: the toleration on its pods, the
    variables in each container."""
    spec = deployment.spec.template.spec
    tolerations = [t.to_dict() for t in spec.tolerations or []]
    wanted = dict(AGENT_TOLERATION, value=None, toleration_seconds=None)
    return wanted in tolerations and all(
        env_values(core, deployment.metadata.namespace, c).items() >= AGENT_SETTING["env"].items() for c in spec.containers)


def agent_setting_kept_and_repaired(lab, hub, member, tmp_path):
    """fleetops_agent reaches both agents: KubeFleet's through its chart and a patch, Rancher Fleet's through the Cluster's
    agent fields, from which Fleet deploys the agent it adopted (its bundle fleet-agent-<cluster>) - so the adopted
    Deployment carries the toleration and the variables. A re-run changes nothing; a Deployment changed since is
    reported (action reconfigure) and repaired by a plain re-run."""
    extra = ["--limit", member, "-e", json.dumps({"fleetops_agent": AGENT_SETTING})]
    # as earlier versions wrote it: the values themselves in the Cluster, which the run replaces with references
    hub.custom.patch_namespaced_custom_object(*FLEET, FLEET_NS, "clusters", member, {"spec": {"agentEnvVars": [
        {"name": name, "value": value} for name, value in sorted(AGENT_SETTING["env"].items())]}})
    set_up = playbook(lab, "join_cluster.yml", *extra, tmp_path=tmp_path)
    assert "%s: rancher_fleet %s/%s: agent reconfigured" % (member, FLEET_NS, member) in set_up.output, set_up.output[-3000:]
    assert "kubefleet %s: agent reconfigured, joined, healthy" % member in set_up.output, set_up.output[-3000:]
    spec = hub.fleet_cluster(member)["spec"]
    assert spec["agentTolerations"] == [AGENT_TOLERATION]
    # the Cluster names a Secret on the member and its keys; the values are only there
    refs = dict((e["name"], e["valueFrom"]["secretKeyRef"]) for e in spec["agentEnvVars"])
    assert sorted(refs) == sorted(AGENT_SETTING["env"]) and all("value" not in e for e in spec["agentEnvVars"]), spec["agentEnvVars"]
    member_core = client.CoreV1Api(lab.api_client(member))
    env_secret = member_core.read_namespaced_secret(refs["FLEETOPS_SITE"]["name"], "cattle-fleet-system")
    assert dict((k, base64.b64decode(v).decode()) for k, v in env_secret.data.items()) == AGENT_SETTING["env"]
    assert "lab-a" not in json.dumps(hub.fleet_cluster(member)), "a value is still on the hub (the spec or the change record)"
    bundle = hub.custom.get_namespaced_custom_object(*FLEET, FLEET_NS, "bundles", "fleet-agent-" + member)
    manifest = "".join(resource.get("content") or "" for resource in bundle["spec"]["resources"])
    assert AGENT_TOLERATION["key"] in manifest and "FLEETOPS_SITE" in manifest, "Fleet's agent bundle lacks the setting"
    apps = client.AppsV1Api(lab.api_client(member))

    def adopted_fleet_agent():
        deployment = apps.read_namespaced_deployment("fleet-agent", "cattle-fleet-system")
        adopted = (deployment.metadata.annotations or {}).get("meta.helm.sh/release-name") == "fleet-agent-" + member
        return deployment if adopted and carries_setting(deployment, member_core) else None
    wait_for(adopted_fleet_agent, 120, "Fleet to deploy the agent it adopted with the agent setting")
    assert carries_setting(apps.read_namespaced_deployment("member-agent", "fleet-system"), member_core)

    again = playbook(lab, "join_cluster.yml", *extra, tmp_path=tmp_path)
    assert again.unchanged({member}), again.recap

    # Someone edits both agents: the toleration goes from Fleet's, a variable from KubeFleet's.
    fleet_agent = apps.read_namespaced_deployment("fleet-agent", "cattle-fleet-system")
    fleet_agent.spec.template.spec.tolerations = [t for t in fleet_agent.spec.template.spec.tolerations or []
                                                  if t.key != AGENT_TOLERATION["key"]]
    apps.replace_namespaced_deployment("fleet-agent", "cattle-fleet-system", fleet_agent)
    member_agent = apps.read_namespaced_deployment("member-agent", "fleet-system")
    for container in member_agent.spec.template.spec.containers:
        container.env = [e for e in container.env or [] if e.name != "FLEETOPS_SITE"]
    apps.replace_namespaced_deployment("member-agent", "fleet-system", member_agent)
    predicted = playbook(lab, "join_cluster.yml", "--check", *extra, tmp_path=tmp_path)
    assert "%s: rancher_fleet %s/%s: agent would be reconfigured" % (member, FLEET_NS, member) in predicted.output, predicted.output[-3000:]
    assert "kubefleet %s: agent would be reconfigured" % member in predicted.output
    repaired = playbook(lab, "join_cluster.yml", *extra, tmp_path=tmp_path)
    assert repaired.changed(member) > 0
    assert carries_setting(apps.read_namespaced_deployment("member-agent", "fleet-system"), member_core)
    assert carries_setting(apps.read_namespaced_deployment("fleet-agent", "cattle-fleet-system"), member_core)
    assert playbook(lab, "join_cluster.yml", *extra, tmp_path=tmp_path).unchanged({member})

    # The Secret Fleet's agent reads its environment from is deleted: the running pod keeps its values, a new one could
    # not start. A check says the agent needs reconfiguring, and a plain run writes the Secret again.
    member_core.delete_namespaced_secret(env_secret.metadata.name, "cattle-fleet-system")
    noticed = playbook(lab, "join_cluster.yml", "--check", *extra, tmp_path=tmp_path)
    assert "%s: rancher_fleet %s/%s: agent would be reconfigured" % (member, FLEET_NS, member) in noticed.output, noticed.output[-3000:]
    assert read_or_none(lambda: member_core.read_namespaced_secret(env_secret.metadata.name, "cattle-fleet-system")) is None
    playbook(lab, "join_cluster.yml", *extra, tmp_path=tmp_path)
    rewritten = member_core.read_namespaced_secret(env_secret.metadata.name, "cattle-fleet-system")
    assert dict((k, base64.b64decode(v).decode()) for k, v in rewritten.data.items()) == AGENT_SETTING["env"]
    assert playbook(lab, "join_cluster.yml", *extra, tmp_path=tmp_path).unchanged({member})
    # Fleet's agent saw its Deployment modified meanwhile; the scenario goes on once its Cluster is ready again.
    wait_for(lambda: condition(hub.fleet_cluster(member), "Ready") == "True" or None, 300, "Fleet's Cluster %s to be ready again" % member)


RBAC_DIR = REPO / "extensions" / "rbac"
RBAC_CREATE = {"ClusterRole": "create_cluster_role", "ClusterRoleBinding": "create_cluster_role_binding",
               "Role": "create_namespaced_role", "RoleBinding": "create_namespaced_role_binding"}


def apply_rbac(api, name):
    """``kubectl apply -f extensions/rbac/<name>`` with the Python client: namespaces and ServiceAccounts made when
    missing, every role and binding made afresh (so the lab holds exactly the shipped rules)."""
    rbac, core = client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
    for doc in yaml.safe_load((RBAC_DIR / name).read_text())["items"]:
        meta = doc["metadata"]
        if doc["kind"] == "Namespace":
            if read_or_none(lambda m=meta: core.read_namespace(m["name"])) is None:
                core.create_namespace(doc)
        elif doc["kind"] == "ServiceAccount":
            if read_or_none(lambda m=meta: core.read_namespaced_service_account(m["name"], m["namespace"])) is None:
                core.create_namespaced_service_account(meta["namespace"], doc)
        else:
            create = getattr(rbac, RBAC_CREATE[doc["kind"]])
            delete = getattr(rbac, RBAC_CREATE[doc["kind"]].replace("create_", "delete_"))
            args = (meta["name"], meta["namespace"]) if "namespace" in meta else (meta["name"],)
            ignore_404(lambda d=delete, a=args: d(*a))
            create(*((meta["namespace"], doc) if "namespace" in meta else (doc,)))


def remove_rbac(api, name):
    rbac = client.RbacAuthorizationV1Api(api)
    for doc in yaml.safe_load((RBAC_DIR / name).read_text())["items"]:
        if doc["kind"] in RBAC_CREATE:
            meta = doc["metadata"]
            delete = getattr(rbac, RBAC_CREATE[doc["kind"]].replace("create_", "delete_"))
            ignore_404(lambda d=delete, m=meta: d(*((m["name"], m["namespace"]) if "namespace" in m else (m["name"],))))


# What the hub credential must NOT be able to do (issue 31, item 3), as (verb, group, resource, namespace, name,
# subresource): Secrets and tokens outside its own namespaces, Works, namespace deletion, Leases other than its locks,
# RBAC writes, escalate/bind/impersonate.
NOT_ALLOWED = [("get", "", "secrets", ns, None, None) for ns in ("kube-system", "cattle-fleet-system", "fleet-system", "default")] + \
    [("create", "", "secrets", ns, None, None) for ns in ("kube-system", "cattle-fleet-system", "fleet-system")] + [
    ("list", "", "secrets", None, None, None),
    ("create", "", "serviceaccounts", "kube-system", "default", "token"),
    ("create", "", "serviceaccounts", "fleet-system", "hub-agent-sa", "token"),
    ("patch", "placement.kubernetes-fleet.io", "works", "fleet-member-member2", None, None),
    ("list", "placement.kubernetes-fleet.io", "works", None, None, None),
    ("delete", "", "namespaces", None, "kube-system", None),
    ("create", "", "namespaces", None, None, None),
    ("update", "coordination.k8s.io", "leases", "kube-system", "kube-controller-manager", None),
    ("patch", "coordination.k8s.io", "leases", "fleet-system", None, None),
    ("create", "rbac.authorization.k8s.io", "rolebindings", "fleetops-system", None, None),
    ("create", "rbac.authorization.k8s.io", "clusterrolebindings", None, None, None),
    ("escalate", "rbac.authorization.k8s.io", "clusterroles", None, None, None),
    ("bind", "rbac.authorization.k8s.io", "clusterroles", None, "cluster-admin", None),
    ("impersonate", "", "users", None, "admin", None),
    ("impersonate", "", "serviceaccounts", "kube-system", None, None),
    ("create", "", "pods", "fleetops-system", None, None),
    # its own accounts: no token for itself or fleetops-view, no Secret there (a leaked token cannot mint a lasting one)
    ("create", "", "serviceaccounts", CREDENTIAL_NS, "fleetops", "token"),
    ("create", "", "serviceaccounts", CREDENTIAL_NS, "fleetops-view", "token"),
    ("create", "", "secrets", CREDENTIAL_NS, None, None),
    ("get", "", "secrets", CREDENTIAL_NS, None, None),
]


def allowed_capabilities(api, capabilities):
    """Which of ``capabilities`` the credential of ``api`` holds, asked with SelfSubjectAccessReviews sent with it."""
    authz = client.AuthorizationV1Api(api)
    held = []
    for verb, group, resource, namespace, name, subresource in capabilities:
        review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(verb=verb, group=group, resource=resource, namespace=namespace,
                                                            name=name, subresource=subresource))))
        if review.status.allowed:
            held.append((verb, group, resource, namespace, name, subresource))
    return held


@pytest.fixture
def least_privilege_hub(lab_controllers, tmp_path):
    """A kubeconfig for the hub ServiceAccount of extensions/rbac/hub.yml, applied as shipped to the lab hub."""
    api = lab_controllers.api_client("hub")
    core = client.CoreV1Api(api)
    apply_rbac(api, "hub.yml")
    token = core.create_namespaced_service_account_token("fleetops", CREDENTIAL_NS, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))).status.token
    kubeconfig = tmp_path / "least-privilege-hub.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "least",
        "clusters": [{"name": "hub", "cluster": {"server": lab_controllers.api_urls["hub"],
                                                 "certificate-authority": str(lab_controllers.ca_files["hub"])}}],
        "users": [{"name": "fleetops", "user": {"token": token}}],
        "contexts": [{"name": "least", "context": {"cluster": "hub", "user": "fleetops"}}]}))
    os.chmod(kubeconfig, 0o600)
    yield kubeconfig
    remove_rbac(api, "hub-forced-leave.yml")
    remove_rbac(api, "hub-optin.yml")
    remove_rbac(api, "hub.yml")


def test_the_shipped_hub_role_is_least_and_runs_join_renewal_rerun_rotation_status_leave_and_forced_leave(
        lab_controllers, hub, least_privilege_hub, tmp_path):
    """Issue 31, items 2 and 3: bound exactly as shipped, the hub role holds none of the capabilities the collection
    never needs, and is enough for a join whose later steps renew the member lock (a slow Helm and a short wait), a
    no-change re-run, a rotation, the status, the leave, and - with the forced leave's role bound in that member's
    namespace only (issue 46 item 3) - the forced leave."""
    restricted = kube_config.new_client_from_config(str(least_privilege_hub))
    assert allowed_capabilities(restricted, NOT_ALLOWED) == []
    assert len(allowed_capabilities(restricted, [("patch", "coordination.k8s.io", "leases", IDENTITY_NS, None, None),
                                                 ("create", "", "serviceaccounts", IDENTITY_NS, "x", "token")])) == 2

    slow_helm = tmp_path / "slow-helm"
    # Fleet's agent install takes longer than a wait: the step after it, which revokes the run's registration token,
    # must renew the member lock first (a JSON patch; the role shipped before lacked patch, and the token stayed live).
    slow_helm.write_text('#!/bin/sh\ncase "$*" in upgrade*fleet-agent*) sleep 65;; esac\nexec %s "$@"\n' % lab_controllers.helm)
    slow_helm.chmod(0o700)
    as_joiner = ("-e", json.dumps({"fleetops_hub_kubeconfig": str(least_privilege_hub), "fleetops_hub_context": "least"}))
    renewing = ("-e", json.dumps({"fleetops_helm_binary": str(slow_helm), "member_join_wait_timeout": 60}))
    limit = ("--limit", "fleet-hub,member2")
    playbook(lab_controllers, "leave_cluster.yml", "--limit", "member2", *as_joiner, tmp_path=tmp_path)  # whatever came before
    leases = client.CoordinationV1Api(lab_controllers.api_client("hub"))
    renewed = []

    def watch_lock():  # the lock is renewed once a step starts a wait's time (60 s) after it was taken
        lease = read_or_none(lambda: leases.read_namespaced_lease("fleetops-member-member2", IDENTITY_NS))
        if lease is not None and lease.spec.renew_time != lease.spec.acquire_time:
            renewed.append(lease.spec.renew_time)
    joining = threading.Event()

    def watch():
        while not renewed and not joining.wait(1):
            watch_lock()
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        joined = playbook(lab_controllers, "join_cluster.yml", *limit, *as_joiner, *renewing, tmp_path=tmp_path)
    finally:
        joining.set()
        watcher.join()
    assert renewed, "the join never renewed its member lock: the test does not cover the renewal"
    assert joined.changed("member2") > 0
    assert condition(hub.member_cluster("member2"), "Joined") == "True"
    assert hub.member_cluster("member2")["spec"]["identity"]["namespace"] == IDENTITY_NS
    assert (hub.fleet_cluster("member2")["status"].get("agent") or {}).get("lastSeen")
    again = playbook(lab_controllers, "join_cluster.yml", *limit, *as_joiner, tmp_path=tmp_path)
    assert again.unchanged({"fleet-hub", "member2"}), again.recap
    rotated = playbook(lab_controllers, "join_cluster.yml", *limit, *as_joiner, "-e", "fleetops_rotate_credentials=true",
                       tmp_path=tmp_path)
    assert rotated.changed("member2") > 0
    assert hub.secret_value(hub.core, IDENTITY_NS, "member2-hub-cluster-access-token", "token") is None  # revoked
    status = playbook(lab_controllers, "cluster_status.yml", *as_joiner, tmp_path=tmp_path)
    assert "member2" in status.output
    playbook(lab_controllers, "leave_cluster.yml", "--limit", "member2", *as_joiner, tmp_path=tmp_path)
    assert_left(hub, ["member2"])

    # The forced leave of a member whose agent never came (its MemberCluster keeps the hub's finalizer): the least
    # role fails naming the forced leave's role and how to bind it; bound in that member's namespace, the leave is
    # forced, and no other member's Works or namespace are within reach.
    stuck = "rbac-stuck"
    try:
        least = {"kubeconfig": str(least_privilege_hub), "context": "least"}
        forced = dict(least, name=stuck, state="absent", force_remove_finalizers=True, force_grace_period=3, wait_timeout=60)
        assert not run_module("kubefleet_member_identity", dict(least, name=stuck)).get("failed")
        assert not run_module("kubefleet_member_cluster", dict(least, name=stuck)).get("failed")
        denied = run_module("kubefleet_member_cluster", forced)
        assert denied.get("failed") and "fleetops-registration-hub-forced-leave" in denied["msg"], denied["msg"]
        assert "create rolebinding fleetops-forced-leave -n fleet-member-%s" % stuck in denied["msg"], denied["msg"]
        hub_api = lab_controllers.api_client("hub")
        apply_rbac(hub_api, "hub-forced-leave.yml")
        client.RbacAuthorizationV1Api(hub_api).create_namespaced_role_binding("fleet-member-" + stuck, {
            "metadata": {"name": "fleetops-forced-leave"}, "subjects": [{"kind": "ServiceAccount", "name": "fleetops", "namespace": CREDENTIAL_NS}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "fleetops-registration-hub-forced-leave"}})
        wait_for(lambda: allowed_capabilities(restricted, [("patch", "placement.kubernetes-fleet.io", "works", "fleet-member-" + stuck,
                                                            None, None)]), 30, "the forced leave's role to be in force")
        beyond = [("patch", "placement.kubernetes-fleet.io", "works", "fleet-member-member1", None, None),
                  ("list", "placement.kubernetes-fleet.io", "works", None, None, None),
                  ("delete", "", "namespaces", "fleet-member-member1", "fleet-member-member1", None),
                  ("delete", "", "namespaces", None, "kube-system", None), ("create", "", "namespaces", None, None, None)]
        assert allowed_capabilities(restricted, beyond) == []
        left = run_module("kubefleet_member_cluster", forced)
        assert not left.get("failed") and left["changed"], left
        assert hub.member_cluster(stuck) is None
        assert not run_module("kubefleet_member_identity", dict(least, name=stuck, state="absent")).get("failed")
    finally:  # a failure above must not leave the next test a MemberCluster that never finishes leaving
        _remove_stuck_member(lab_controllers, stuck)


def _remove_stuck_member(lab, name):
    """The forced leave's member, removed with the lab's admin credential if the test left it (finalizers and all)."""
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    ignore_404(lambda: custom.patch_cluster_custom_object(*KUBEFLEET, "memberclusters", name, {"metadata": {"finalizers": None}}))
    ignore_404(lambda: custom.delete_cluster_custom_object(*KUBEFLEET, "memberclusters", name))
    run_module("kubefleet_member_identity", {"kubeconfig": str(lab.kubeconfig), "context": "hub", "name": name, "state": "absent"})
    ignore_404(lambda: client.RbacAuthorizationV1Api(lab.api_client("hub")).delete_namespaced_role_binding(
        "fleetops-forced-leave", "fleet-member-" + name))


def test_a_member_whose_identity_is_in_fleet_system_moves_to_the_collection_s_namespace(lab_controllers, hub, tmp_path):
    """Issue 31, item 2: a member joined with the earlier default (identity in fleet-system) moves on its next ordinary
    run - a new identity in fleetops-system, the MemberCluster pointed at it, the old ServiceAccount deleted."""
    limit = ("--limit", "fleet-hub,member2")
    playbook(lab_controllers, "leave_cluster.yml", "--limit", "member2", tmp_path=tmp_path)
    playbook(lab_controllers, "join_cluster.yml", *limit, "-e", "fleetops_kubefleet_namespace=fleet-system", tmp_path=tmp_path)
    assert hub.member_cluster("member2")["spec"]["identity"]["namespace"] == "fleet-system"
    moved = playbook(lab_controllers, "join_cluster.yml", *limit, tmp_path=tmp_path)
    assert moved.changed("member2") > 0
    assert hub.member_cluster("member2")["spec"]["identity"]["namespace"] == IDENTITY_NS
    assert condition(hub.member_cluster("member2"), "Joined") == "True"
    assert read_or_none(lambda: hub.core.read_namespaced_service_account("member2-hub-cluster-access", "fleet-system")) is None
    assert playbook(lab_controllers, "join_cluster.yml", *limit, tmp_path=tmp_path).unchanged({"fleet-hub", "member2"})
    playbook(lab_controllers, "leave_cluster.yml", "--limit", "member2", tmp_path=tmp_path)
    assert_left(hub, ["member2"])


@pytest.fixture
def hub_without_kubefleet(lab_controllers, hub, tmp_path):
    """The lab hub as a Rancher-Fleet-only hub: KubeFleet's cluster.kubernetes-fleet.io CRDs removed (so that API
    group is not served at all), restored afterwards with the hub agent restarted on them. Members joined before
    (a test before this one, or one that failed and was put back) leave first: removing the CRDs would delete their
    MemberClusters under their agents."""
    api = client.ApiextensionsV1Api(lab_controllers.api_client("hub"))
    crds = [crd for crd in api.list_custom_resource_definition().items if crd.spec.group == KUBEFLEET[0]]
    assert [crd.spec.names.plural for crd in crds if crd.spec.names.plural == "memberclusters"], "the lab hub has no KubeFleet"

    def member_clusters():
        return [item["metadata"]["name"] for item in hub.custom.list_cluster_custom_object(*KUBEFLEET, "memberclusters")["items"]]
    if member_clusters():
        playbook(lab_controllers, "leave_cluster.yml", "-e", "fleetops_leave_all=true", tmp_path=tmp_path)
    assert not member_clusters(), "MemberClusters of no lab member exist (%s): removing the CRDs would delete them" % member_clusters()
    saved = [api.api_client.sanitize_for_serialization(crd) for crd in crds]
    groups = client.ApisApi(lab_controllers.api_client("hub"))

    def served():
        return KUBEFLEET[0] in [group.name for group in groups.get_api_versions().groups]
    for crd in crds:
        api.delete_custom_resource_definition(crd.metadata.name)
    try:
        wait_for(lambda: not served(), 120, "the hub to stop serving %s" % KUBEFLEET[0])
        yield
    finally:
        for body in saved:
            name = body["metadata"]["name"]
            wait_for(lambda n=name: read_or_none(lambda: api.read_custom_resource_definition(n)) is None, 120,
                     "CRD %s to be deleted" % name)
            body["metadata"] = dict((k, v) for k, v in body["metadata"].items() if k in ("name", "labels", "annotations"))
            body.pop("status", None)
            api.create_custom_resource_definition(body)
        wait_for(served, 120, "the hub to serve %s again" % KUBEFLEET[0])
        # Its informers lost the resources they watch: a restarted hub agent starts over on the restored APIs.
        lab_controllers.kill("hub/fleet-system/hub-agent-*/hub-agent")
        wait_for(lambda: [name for name, state in lab_controllers.components().items()
                          if "/hub-agent-" in name and name.endswith("/hub-agent") and state == "running"], 120, "the hub agent to run again")


def test_a_rancher_fleet_only_hub_joins_and_leaves_members_that_name_no_manager(lab_controllers, hub, hub_without_kubefleet, tmp_path):
    """The lab's members set no fleetops_backends: on a hub that serves Rancher Fleet only, they join and leave that
    one (the hub role, member_info and the leave detect it); a member that names KubeFleet fails, naming the variable."""
    lab = lab_controllers
    joined = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    assert joined.changed("member2") > 0
    assert (hub.fleet_cluster("member2")["status"].get("agent") or {}).get("lastSeen")
    assert "member-agent" not in hub.releases("member2") and "fleet-agent" in hub.releases("member2")
    line = [text for text in joined.output.splitlines() if text.strip().startswith('"member2: ')]  # the batch's lines
    assert line and "rancher_fleet" in line[0] and "kubefleet" not in line[0], line
    again = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    assert again.unchanged({"fleet-hub", "member2"}), again.recap

    named = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", "-e", "fleetops_backends=kubefleet",
                     tmp_path=tmp_path, fails=True)
    assert "cluster.kubernetes-fleet.io" in named.output and "fleetops_backends" in named.output
    assert named.recap.get("member2", {}).get("changed", 0) == 0
    assert hub.fleet_cluster("member2") is not None, "the failed run changed member2"

    left = playbook(lab, "leave_cluster.yml", "--limit", "member2", tmp_path=tmp_path)
    assert left.changed("member2") > 0
    assert hub.fleet_cluster("member2") is None
    assert [r for r in hub.releases("member2") if r.startswith(("fleet-agent", "member-agent"))] == []


def awx_extra_vars(credential_type, filename, **inputs):
    """The extra vars an AWX credential of ``credential_type`` (extensions/awx/credential_types) injects, its file
    written at ``filename`` and its optional fields left blank unless given."""
    from jinja2 import Environment  # pylint: disable=import-outside-toplevel
    spec = yaml.safe_load((REPO / "extensions" / "awx" / "credential_types" / credential_type).read_text())
    fields = dict((field["id"], inputs.get(field["id"], "")) for field in spec["inputs"]["fields"])
    context = dict(fields, tower={"filename": {"kubeconfig": str(filename)}})
    return dict((name, Environment().from_string(template).render(**context))
                for name, template in spec["injectors"]["extra_vars"].items())


def awx_survey_answers(survey):
    """Every question of an extensions/awx survey answered with its default, as a job launched without changes sends."""
    spec = json.loads((REPO / "extensions" / "awx" / "surveys" / survey).read_text())["spec"]
    return dict((question["variable"], question.get("default", "")) for question in spec)


def ansible_runner_job(lab, tmp_path, playbook_name, extra_vars, limit):
    """One job as AWX runs it: ansible-runner over a private data directory (inventory/, env/extravars, env/envvars),
    credentials written 0600 into it; returns (status, rc, stdout, the job's artifacts as set_stats left them)."""
    data = tmp_path / ("awx-" + playbook_name.split(".")[-1])
    for folder in ("inventory", "env", "project"):
        (data / folder).mkdir(parents=True, exist_ok=True)
    inventory = yaml.safe_load(lab.inventory.read_text())
    for group in inventory["all"]["children"].values():
        for host in group["hosts"].values():
            host.pop("fleetops_kubeconfig", None)  # an AWX inventory holds no local paths: the credentials give them
    (data / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (data / "env" / "extravars").write_text(json.dumps(extra_vars))
    (data / "env" / "envvars").write_text(json.dumps({"ANSIBLE_COLLECTIONS_PATH": str(collections_root()), "ANSIBLE_NOCOLOR": "1",
                                                      "ANSIBLE_DEPRECATION_WARNINGS": "0"}))
    runner = os.path.join(os.path.dirname(sys.executable), "ansible-runner")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([runner, "run", str(data), "-p", playbook_name, "--limit", limit, "--ident", "job"],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    artifacts = data / "artifacts" / "job"
    stats = [json.loads(path.read_text()) for path in sorted((artifacts / "job_events").glob("*.json"))]
    stats = [event["event_data"] for event in stats if event.get("event") == "playbook_on_stats"]
    status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else None
    return status, (artifacts / "rc").read_text().strip() if (artifacts / "rc").exists() else None, \
        (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else proc.stdout + proc.stderr, \
        (stats[-1].get("artifact_data") if stats else None) or {}


def test_join_and_leave_as_awx_runs_them(lab_controllers, hub, tmp_path):
    """join_cluster and leave_cluster through ansible-runner, with extra vars as the three credential types and the
    surveys inject them - the contexts blank, every survey question at its default (the backends blank) - and an
    inventory without kubeconfig paths; the per-member summary is read from the job's artifacts."""
    lab = lab_controllers
    kubeconfig = tmp_path / "credential-kubeconfig"
    kubeconfig.write_text(lab.kubeconfig.read_text())
    os.chmod(kubeconfig, 0o600)
    credentials = dict(awx_extra_vars("fleet_hub_kubeconfig.yml", kubeconfig),
                       **awx_extra_vars("fleet_member_kubeconfig.yml", kubeconfig))
    assert credentials["fleetops_hub_context"] == "" and credentials["fleetops_hub_kubeconfig"] == str(kubeconfig)

    status, rc, stdout, artifacts = ansible_runner_job(lab, tmp_path, "fleetops.registration.join_cluster",
                                                       dict(credentials, **awx_survey_answers("join_cluster.json")),
                                                       "fleet-hub,member2")
    assert (status, rc) == ("successful", "0"), stdout[-4000:]
    summary = artifacts["fleetops_members"]["member2"]
    assert summary["line"].startswith("member2: ") and "rancher_fleet" in summary and "kubefleet" in summary, summary
    assert condition(hub.member_cluster("member2"), "Joined") == "True"
    assert (hub.fleet_cluster("member2")["status"].get("agent") or {}).get("lastSeen")
    assert "api_server_ca" not in json.dumps(artifacts) and "BEGIN" not in stdout

    status, rc, stdout, artifacts = ansible_runner_job(lab, tmp_path, "fleetops.registration.leave_cluster",
                                                       dict(credentials, **awx_survey_answers("leave_cluster.json")), "member2")
    assert (status, rc) == ("successful", "0"), stdout[-4000:]
    assert artifacts["fleetops_left"]["member2"]["line"].startswith("member2: "), artifacts
    assert_left(hub, ["member2"])


def test_bad_inventory_values_fail_naming_the_inventory_variable(lab_controllers, hub, tmp_path):
    """Through the roles an input error names the variable the user set and its value, before anything changes; a
    missing CA file is reported as that file, not as an unreachable hub."""
    lab = lab_controllers
    named = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", "-e", "fleetops_cluster_name=Member_2",
                     tmp_path=tmp_path, fails=True)
    assert "name (from fleetops_cluster_name" in named.output and "'Member_2' is not a valid name" in named.output
    assert named.recap.get("member2", {}).get("changed", 0) == 0 and hub.fleet_cluster("Member_2") is None
    # A role variable that does not fit the role's argument spec: join_cluster.yml imports member_join without Ansible's
    # own check (a task per member), and the role's first task makes it, with Ansible's message, before any read.
    unfit = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", "-e", "member_join_labels_mode=sideways",
                     tmp_path=tmp_path, fails=True)
    assert "Validation of arguments failed" in unfit.output and "member_join_labels_mode" in unfit.output, unfit.output[-3000:]
    assert "member_join : Validating arguments" not in unfit.output and "Read the state of every member" not in unfit.output
    assert unfit.recap.get("member2", {}).get("changed", 0) == 0
    # The leave too, before its lock is named after the member.
    leave = playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", "-e", "fleetops_cluster_name=Member_2",
                     tmp_path=tmp_path, fails=True)
    assert "name (from fleetops_cluster_name, or the inventory host name (member_leave_cluster_name)): 'Member_2' is not a valid" \
        in leave.output, leave.output[-3000:]
    assert leave.recap["member2"]["changed"] == 0
    missing = str(tmp_path / "pki" / "hub-ca.crt")
    no_ca = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", "-e", "fleetops_ca_file=%s" % missing,
                     tmp_path=tmp_path, fails=True)
    assert "hub_api_server_ca (from the hub host's fleetops_ca_file" in no_ca.output, no_ca.output[-3000:]
    assert "%s is neither PEM text nor an existing file" % missing in no_ca.output, no_ca.output[-3000:]
    assert "cannot reach" not in no_ca.output
    assert no_ca.recap.get("member2", {}).get("changed", 0) == 0
    # A later step's module error too: the KubeFleet identity namespace member2's inventory names is not on the hub.
    elsewhere = tmp_path / "member2-namespace.yml"
    elsewhere.write_text(yaml.safe_dump({"all": {"hosts": {"member2": {"fleetops_kubefleet_namespace": "no-such-namespace"}}}}))
    no_ns = playbook(lab, "join_cluster.yml", "-i", str(elsewhere), "--limit", "fleet-hub,member2", "-e",
                     json.dumps({"fleetops_survey_backends": ["kubefleet"]}), tmp_path=tmp_path, fails=True)
    assert "namespace (from fleetops_kubefleet_namespace (member_join_kubefleet_identity_namespace)): namespace " \
           "no-such-namespace does not exist on the hub" in no_ns.output, no_ns.output[-3000:]
    assert no_ns.recap["member2"]["changed"] == 0 and hub.member_cluster("member2") is None
    leases = client.CoordinationV1Api(lab.api_client("hub"))
    assert hub._get(lambda: leases.read_namespaced_lease("fleetops-member-member2", IDENTITY_NS)) is None  # released


def _task_outcome(output, task_name, host):
    """The first status line (``ok``, ``changed``, ``skipping``, ``fatal``) ``task_name`` printed for ``host``."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TASK [") and task_name in line)
    for line in lines[start + 1:]:
        if line.startswith("TASK ["):
            break
        if "[%s]" % host in line and line.split(":", 1)[0] in ("ok", "changed", "skipping", "fatal"):
            return line.split(":", 1)[0]
    return None


def test_a_quarantined_join_is_lifted_once_the_member_is_verified(lab_controllers, hub, tmp_path):
    """issue 17, item 5: with fleetops_kubefleet_quarantine a new member joins with the quarantine taint (KubeFleet
    places no work on it), and the role lifts it only once the member is joined, healthy and reporting; a re-run
    changes nothing."""
    lab = lab_controllers
    playbook(lab, "leave_cluster.yml", "--limit", "member2", tmp_path=tmp_path)
    quarantined = ("--limit", "fleet-hub,member2", "-e", "fleetops_backends=kubefleet", "-e", "fleetops_kubefleet_quarantine=true")
    joined = playbook(lab, "join_cluster.yml", *quarantined, tmp_path=tmp_path)
    assert _task_outcome(joined.output, "Create or update the MemberCluster", "member2") == "changed"
    assert _task_outcome(joined.output, "Lift the member's quarantine", "member2") == "changed", joined.output[-3000:]
    member_cluster = hub.member_cluster("member2")
    assert condition(member_cluster, "Joined") == "True"
    assert not [t for t in member_cluster["spec"].get("taints") or [] if t["key"] == "fleetops.registration/quarantine"]
    again = playbook(lab, "join_cluster.yml", *quarantined, tmp_path=tmp_path)
    assert again.unchanged({"fleet-hub", "member2"}), again.recap

    # Left quarantined by an earlier run, and the variable since turned off: the run lifts it (after the agent step,
    # which may be what repairs the member), and the next run has nothing to do.
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    custom.patch_cluster_custom_object("cluster.kubernetes-fleet.io", "v1beta1", "memberclusters", "member2", {"spec": {"taints": [
        {"key": "fleetops.registration/quarantine", "value": "unverified", "effect": "NoSchedule"}]}})
    plain = ("--limit", "fleet-hub,member2", "-e", "fleetops_backends=kubefleet")
    lifted = playbook(lab, "join_cluster.yml", *plain, tmp_path=tmp_path)
    assert _task_outcome(lifted.output, "Lift the member's quarantine", "member2") == "changed", lifted.output[-3000:]
    assert not hub.member_cluster("member2")["spec"].get("taints")
    assert playbook(lab, "join_cluster.yml", *plain, tmp_path=tmp_path).unchanged({"fleet-hub", "member2"})
    left = playbook(lab, "leave_cluster.yml", "--limit", "member2", "-e", "fleetops_backends=kubefleet", tmp_path=tmp_path)
    assert left.changed("member2") > 0 and hub.member_cluster("member2") is None
