"""What the fault suite asserts after a plain re-run: the member is really healthy, seen from the
member and from the hub, and nothing of an earlier run is left on the hub.

Everything is read with the lab's admin kubeconfig and Helm, except the checks that a credential
works: those authenticate *with the credential* (the agent's kubeconfig, the member agent's token)
and ask the hub who they are (a SelfSubjectReview), as the agents do.
"""

import base64
import calendar
import os
import subprocess
import sys
import time

import pytest
import yaml
from kubernetes import client, config

from kube_helpers import ignore_404, read_or_none, unique, wait_for
from modrun import REPO, collections_root

FLEET = ("fleet.cattle.io", "v1alpha1")
KUBEFLEET = ("cluster.kubernetes-fleet.io", "v1beta1")
FLEET_NS = "fleet-default"             # member_join_fleet_namespace's default
FLEET_AGENT_NS = "cattle-fleet-system"
KUBEFLEET_RELEASE_NS = "fleet-hub-credentials"  # kubefleet_member_agent's release_namespace default
TOKEN_PREFIX = "fleetops-join-"        # the names of the registration tokens the role creates
# Namespaces the collection's flows create on a member (the Fleet agent's, the KubeFleet member agent's).
MEMBER_NAMESPACES = (FLEET_AGENT_NS, "fleet-system")
# The member the fault suite joins (one, to keep the suite short), and the playbooks' limit to it.
MEMBER = "member1"
LIMIT = ("--limit", MEMBER)


def recap_changed(output, host):
    for line in output.splitlines():
        if line.startswith(host + " ") and "changed=" in line:
            return int(line.split("changed=")[1].split()[0])
    return None


def joined(play, sides):
    """member1 freshly joined to both fleets and healthy (the starting point of a fault on a joined member); it leaves
    first, so an earlier test's fault does not carry over."""
    play.converges("leave_cluster.yml", *LIMIT)
    play.converges("join_cluster.yml", *LIMIT)
    sides.assert_fleet_member_healthy(MEMBER, since=0)
    sides.assert_kubefleet_member_healthy(MEMBER)


def assert_joined_since(sides, output, fault_at):
    """After the re-run: healthy on both sides, seen after the re-run ended, and nothing of a run left on the hub."""
    ended = time.time()
    assert "fatal:" not in output
    sides.assert_fleet_member_healthy(MEMBER, since=max(ended, fault_at))
    sides.assert_kubefleet_member_healthy(MEMBER)
    sides.assert_nothing_left_on_hub()


def stamp(text):
    """Epoch seconds of a Kubernetes RFC 3339 timestamp (None stays None)."""
    if not text:
        return None
    return calendar.timegm(time.strptime(text.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S"))


def agent_pids(lab, member, container):
    """The pids of the lab's processes of an agent ``container`` on ``member``."""
    return {e["pid"] for e in lab.agent_processes(member) if e.get("container") == container}


class Playbook:
    """ansible-playbook against the lab's own inventory, the way the integration tests run it."""

    def __init__(self, lab, tmp_path):
        self.lab = lab
        self.tmp_path = tmp_path
        self.runs = 0
        self.env = dict(os.environ)
        self.env.update({"ANSIBLE_COLLECTIONS_PATH": str(collections_root()), "ANSIBLE_NOCOLOR": "1",
                         "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_HOST_KEY_CHECKING": "0",
                         "ANSIBLE_DEPRECATION_WARNINGS": "0",
                         "PATH": os.path.dirname(sys.executable) + os.pathsep + self.env.get("PATH", "")})

    def argv(self, name, *args):
        return [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(self.lab.inventory),
                str(REPO / "playbooks" / name)] + list(args)

    def start(self, name, *args):
        """Start a run in the background (output to a file, so a full pipe never blocks it); ``finish(proc)`` collects it."""
        self.runs += 1
        log = self.tmp_path / ("run-%d.log" % self.runs)
        with open(log, "w", encoding="utf-8") as handle:
            proc = subprocess.Popen(self.argv(name, *args), stdout=handle, stderr=subprocess.STDOUT, env=self.env,
                                    cwd=str(self.tmp_path))
        proc.log = log
        return proc

    @staticmethod
    def finish(proc, timeout=900):
        """(return code, output) of a background run."""
        proc.wait(timeout=timeout)
        return proc.returncode, proc.log.read_text(encoding="utf-8")

    def run(self, name, *args):
        """(return code, output) of a run."""
        return self.finish(self.start(name, *args))

    def converges(self, name, *args):
        """Run and require success; returns the output."""
        code, output = self.run(name, *args)
        if code != 0:
            failures = "\n".join(line for line in output.splitlines() if line.startswith(("fatal:", "failed:", "[ERROR]")))
            pytest.fail("one plain re-run of %s did not converge (exit %d):\n%s\n...\n%s" % (name, code, failures, output[-4000:]))
        return output


class Sides:
    """The hub and the members as the lab's admin sees them, plus the checks the suite asserts."""

    def __init__(self, lab):
        self.lab = lab
        self.hub_custom = client.CustomObjectsApi(lab.api_client("hub"))
        self.hub_core = client.CoreV1Api(lab.api_client("hub"))
        self.hub_rbac = client.RbacAuthorizationV1Api(lab.api_client("hub"))

    def core(self, member):
        return client.CoreV1Api(self.lab.api_client(member))

    # --- hub ---------------------------------------------------------------------------------
    def fleet_cluster(self, member):
        return read_or_none(lambda: self.hub_custom.get_namespaced_custom_object(*FLEET, FLEET_NS, "clusters", member))

    def kubefleet_heartbeat(self, member):
        """Epoch seconds of the member agent's last heartbeat on ``member``'s MemberCluster (0 without one)."""
        status = (self.member_cluster(member) or {}).get("status") or {}
        beats = [a.get("lastReceivedHeartbeat") for a in status.get("agentStatus") or [] if a.get("type") == "MemberAgent"]
        return stamp(beats[0]) if beats and beats[0] else 0

    def member_cluster(self, member):
        return read_or_none(lambda: self.hub_custom.get_cluster_custom_object(*KUBEFLEET, "memberclusters", member))

    def run_tokens(self):
        """Names of the registration tokens the role created that still exist (any namespace)."""
        items = self.hub_custom.list_cluster_custom_object(*FLEET, "clusterregistrationtokens")["items"]
        return sorted("%s/%s" % (t["metadata"]["namespace"], t["metadata"]["name"]) for t in items
                      if t["metadata"]["name"].startswith(TOKEN_PREFIX))

    def run_leftovers(self):
        """Every hub object a registration token of a run leaves behind while it lives: the token, its values
        Secret, its ServiceAccount and that account's token Secret, Role and RoleBinding (Fleet names them after
        the token)."""
        found = ["ClusterRegistrationToken " + name for name in self.run_tokens()]
        listings = {"Secret": self.hub_core.list_secret_for_all_namespaces,
                    "ServiceAccount": self.hub_core.list_service_account_for_all_namespaces,
                    "Role": self.hub_rbac.list_role_for_all_namespaces,
                    "RoleBinding": self.hub_rbac.list_role_binding_for_all_namespaces}
        for kind, listing in listings.items():
            found += ["%s %s/%s" % (kind, o.metadata.namespace, o.metadata.name) for o in listing().items
                      if o.metadata.name.startswith(TOKEN_PREFIX)]
        return sorted(found)

    def wait_fleet_handles_tokens(self, timeout=600):
        """Seconds until Fleet on the hub handles a new registration token again (writes its values Secret).

        Right after the hub API server was restarted, Fleet's agentmanagement was once seen to miss the event of the
        ServiceAccount it made for a token for 5 minutes (a watch re-established during the restart that delivered
        nothing until it timed out), so a re-run's token never got its values. How fast Fleet recovers is not what the
        fault suite tests; that one plain re-run converges once the hub works again is.
        """
        name = unique("probe")
        token = {"apiVersion": "%s/%s" % FLEET, "kind": "ClusterRegistrationToken", "metadata": {"name": name},
                 "spec": {"ttl": "1h"}}
        started = time.monotonic()
        self.hub_custom.create_namespaced_custom_object(*FLEET, FLEET_NS, "clusterregistrationtokens", token)
        try:
            wait_for(lambda: read_or_none(lambda: self.hub_core.read_namespaced_secret(name, FLEET_NS)), timeout,
                     "Fleet to write the values Secret of the probe token %s" % name, interval=2)
        finally:
            ignore_404(lambda: self.hub_custom.delete_namespaced_custom_object(*FLEET, FLEET_NS, "clusterregistrationtokens", name))
        return time.monotonic() - started

    def assert_nothing_left_on_hub(self, timeout=60):
        """No object of a run's registration token on the hub (the garbage collector gets ``timeout`` to finish)."""
        deadline = time.monotonic() + timeout
        while True:
            left = self.run_leftovers()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert left == [], "registration credentials of an earlier run are still on the hub: %s" % left

    # --- member --------------------------------------------------------------------------------
    def release(self, member, name, namespace):
        """``helm status`` of a release as a dict, None if it is not installed."""
        proc = self.lab.run_helm(member, "status", name, "--namespace", namespace, "--output", "yaml", check=False)
        return yaml.safe_load(proc.stdout) if proc.returncode == 0 else None

    def secret_value(self, context, namespace, name, key):
        secret = read_or_none(lambda: self.core(context).read_namespaced_secret(name, namespace))
        if secret is None or not (secret.data or {}).get(key):
            return None
        return base64.b64decode(secret.data[key]).decode()

    def whoami(self, api_client):
        """The user name the hub authenticates ``api_client``'s credential as (a SelfSubjectReview)."""
        review = client.AuthenticationV1Api(api_client).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _request_timeout=10)
        return review.status.user_info.username

    def token_client(self, token):
        conf = client.Configuration()
        conf.host = self.lab.api_urls["hub"]
        conf.ssl_ca_cert = str(self.lab.ca_files["hub"])
        conf.api_key = {"authorization": "Bearer " + token}
        return client.ApiClient(conf)

    def assert_fleet_member_healthy(self, member, since):
        """The Fleet agent release deployed, its credential Secret present and accepted by the hub, and the hub's
        Cluster seen by the agent after ``since`` (epoch seconds)."""
        release = self.release(member, "fleet-agent", FLEET_AGENT_NS)
        assert release is not None, "%s: the fleet-agent release is not installed" % member
        assert release["info"]["status"] == "deployed", "%s: fleet-agent release is %s" % (member, release["info"]["status"])
        kubeconfig = self.secret_value(member, FLEET_AGENT_NS, "fleet-agent", "kubeconfig")
        assert kubeconfig, "%s: the agent's credential Secret %s/fleet-agent is missing" % (member, FLEET_AGENT_NS)
        agent_client = config.new_client_from_config_dict(yaml.safe_load(kubeconfig))
        try:
            user = self.whoami(agent_client)
        except client.exceptions.ApiException as exc:
            pytest.fail("%s: the hub does not accept the agent's credential (%s %s)" % (member, exc.status, exc.reason))
        assert user.startswith("system:serviceaccount:"), user
        wait_for(lambda: (stamp(((self.fleet_cluster(member) or {}).get("status") or {}).get("agent", {}).get("lastSeen"))
                          or 0) > since, 90, "%s: the Fleet agent to check in with the hub after the re-run" % member)

    def assert_kubefleet_member_healthy(self, member):
        """The member-agent release deployed, its token accepted by the hub, the MemberCluster Joined with a heartbeat
        younger than two heartbeat periods."""
        release = self.release(member, "member-agent", KUBEFLEET_RELEASE_NS)
        assert release is not None and release["info"]["status"] == "deployed", "%s: member-agent release: %s" % (
            member, release and release["info"]["status"])
        token = self.secret_value(member, "fleet-hub-credentials", "hub-kubeconfig-secret", "token")
        assert token, "%s: fleet-hub-credentials/hub-kubeconfig-secret has no token" % member
        assert self.whoami(self.token_client(token)).startswith("system:serviceaccount:")

        def joined_and_fresh():
            mc = self.member_cluster(member) or {}
            period = ((mc.get("spec") or {}).get("heartbeatPeriodSeconds") or 60)
            for agent in (mc.get("status") or {}).get("agentStatus") or []:
                joined = [c["status"] for c in agent.get("conditions") or [] if c["type"] == "Joined"]
                beat = stamp(agent.get("lastReceivedHeartbeat"))
                if agent["type"] == "MemberAgent" and joined == ["True"] and beat and time.time() - beat < 2 * period + 10:
                    return True
            return False
        wait_for(joined_and_fresh, 150, "%s: MemberCluster Joined with a fresh heartbeat" % member)

    def assert_member_left(self, member, timeout=120):
        """Neither fleet holds the member, and the member holds no agent release and no namespace the collection created."""
        assert self.fleet_cluster(member) is None, "%s: the Fleet Cluster is still on the hub" % member
        assert self.member_cluster(member) is None, "%s: the MemberCluster is still on the hub" % member
        for name, namespace in (("fleet-agent", FLEET_AGENT_NS), ("member-agent", KUBEFLEET_RELEASE_NS)):
            assert self.release(member, name, namespace) is None, "%s: release %s is still installed" % (member, name)
        core = self.core(member)
        deadline = time.monotonic() + timeout
        while True:
            left = [ns for ns in MEMBER_NAMESPACES if read_or_none(lambda n=ns: core.read_namespace(n)) is not None]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert left == [], "%s: namespaces the collection created are still on the member: %s" % (member, left)
