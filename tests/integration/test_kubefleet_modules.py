"""The KubeFleet modules against the lab: the real hub agent on the hub, the real member agent on member2.

Each test uses its own member names and removes what it made. The agent tests share member2's single
member-agent release, so they run one after the other and each leaves member2 without it.
"""

import base64
import datetime
import json
import uuid

import pytest
import yaml
from kubernetes import client

from modrun import run_module
from kube_helpers import ignore_404, read_or_none, unique, wait_for
from test_playbooks import AGENT_LEASES, hub_answer

pytestmark = pytest.mark.lab

GROUP, VERSION = "cluster.kubernetes-fleet.io", "v1beta1"
HUB_NS = "fleetops-system"  # the collection's own hub namespace, the identities' default (issue 31)
TOKEN_NS = "fleet-hub-credentials"  # kubefleet_member_agent's secret_namespace and release_namespace default
MEMBER_CTX = "member2"
MASK = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
THIRTY_DAYS = 30 * 86400


def jwt_claims(token):
    """The payload of a JWT, read as the tests' own check (not the collection's)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def stamp(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(autouse=True)
def _needs_controllers(lab_controllers):
    return lab_controllers


class Hub:
    """Direct reads of the lab (admin) to check what the modules did."""

    def __init__(self, lab):
        self.lab = lab
        self.core = client.CoreV1Api(lab.api_client("hub"))
        self.custom = client.CustomObjectsApi(lab.api_client("hub"))
        self.member_core = client.CoreV1Api(lab.api_client(MEMBER_CTX))

    _get = staticmethod(read_or_none)

    def member_cluster(self, name):
        return self._get(lambda: self.custom.get_cluster_custom_object(GROUP, VERSION, "memberclusters", name))

    def namespace(self, name, core=None):
        return self._get(lambda: (core or self.core).read_namespace(name))

    def service_account(self, name):
        return self._get(lambda: self.core.read_namespaced_service_account(name, HUB_NS))

    def secret(self, name, namespace=HUB_NS, core=None):
        return self._get(lambda: (core or self.core).read_namespaced_secret(name, namespace))

    def member_secret(self):
        return self.secret("hub-kubeconfig-secret", TOKEN_NS, self.member_core)

    def token(self, member):
        secret = self.secret("%s-hub-cluster-access-token" % member)
        return base64.b64decode(secret.data["token"]).decode()

    def release(self):
        proc = self.lab.run_helm(MEMBER_CTX, "list", "--namespace", TOKEN_NS, "--filter", "^member-agent$", "--output", "yaml")
        return yaml.safe_load(proc.stdout) or []

    def cleanup(self, member):
        """Remove every trace of ``member`` (forcing the MemberCluster out) and the agent on member2."""
        mc = self.member_cluster(member)
        if mc is not None:
            self._ignore_404(lambda: self.custom.patch_cluster_custom_object(GROUP, VERSION, "memberclusters", member,
                                                                             {"metadata": {"finalizers": None}}))
            self._ignore_404(lambda: self.custom.delete_cluster_custom_object(GROUP, VERSION, "memberclusters", member))
        self._ignore_404(lambda: self.core.delete_namespace("fleet-member-" + member))
        for name in ("%s-hub-cluster-access-token" % member, "%s-hub-cluster-access-token-2" % member):  # a rotated identity's two
            self._ignore_404(lambda name=name: self.core.delete_namespaced_secret(name, HUB_NS))
        self._ignore_404(lambda: self.core.delete_namespaced_service_account("%s-hub-cluster-access" % member, HUB_NS))

    def cleanup_agent(self):
        for namespace in (TOKEN_NS, "default"):  # default: where earlier versions kept the release
            self.lab.run_helm(MEMBER_CTX, "uninstall", "member-agent", "--namespace", namespace, "--ignore-not-found", check=False)
        for namespace in (TOKEN_NS, "default"):  # default: where earlier versions kept the token
            self._ignore_404(lambda: self.member_core.delete_namespaced_secret("hub-kubeconfig-secret", namespace))

    _ignore_404 = staticmethod(ignore_404)


@pytest.fixture
def hub(lab):
    hub = Hub(lab)
    if hub.namespace(HUB_NS) is None:  # hub_prepare makes it; these tests run the modules without the hub role
        hub.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=HUB_NS)))
    return hub


@pytest.fixture
def member(hub):
    """A fresh member name; everything made for it is removed afterwards."""
    name = unique("kf")
    yield name
    hub.cleanup(name)


@pytest.fixture
def agent_member(hub, member):
    """A fresh member name whose agent goes on member2 (which must not run another agent)."""
    assert not hub.release(), "member2 already runs a member-agent release; a previous run did not clean up"
    yield member
    hub.cleanup_agent()


def hub_args(lab, **kwargs):
    return dict(kubeconfig=str(lab.kubeconfig), context="hub", **kwargs)


def agent_args(lab, member, **kwargs):
    args = dict(kubeconfig=str(lab.kubeconfig), context=MEMBER_CTX, name=member,
                chart_ref=str(lab.kubefleet_chart("member-agent")), helm_binary=lab.helm, wait_timeout=240)
    args.update(kwargs)
    return args


def ok(result):
    assert not result.failed, result.get("msg")
    return result


def failed(result, *fragments):
    assert result.failed, "expected a failure, got %r" % dict((k, v) for k, v in result.items() if k != "raw_output")
    for fragment in fragments:
        assert fragment in result["msg"], result["msg"]
    return result


# -- identity ----------------------------------------------------------------------

def test_identity_waits_for_the_token_and_keeps_it_on_rerun(lab, hub, member):
    sa_name = "%s-hub-cluster-access" % member

    checked = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member), check=True, diff=True))
    assert checked.changed
    assert hub.service_account(sa_name) is None, "check mode created the ServiceAccount"
    assert hub.secret(sa_name + "-token") is None

    first = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member), diff=True))
    assert first.changed
    holder = hub.secret(sa_name + "-token")
    token = hub.token(member)
    claims = jwt_claims(token)
    assert first["token_secret"] == {"name": sa_name + "-token", "namespace": HUB_NS, "token_ready": True,
                                     "issued": holder.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     "expires": stamp(claims["exp"])}
    # By default a token that expires after 30 days, bound to the Secret that holds it (deleting it revokes the token).
    assert holder.type == "Opaque" and holder.metadata.labels == {"app.kubernetes.io/managed-by": "fleetops.registration"}
    assert THIRTY_DAYS - 120 <= claims["exp"] - claims["iat"] <= THIRTY_DAYS, claims
    assert claims["kubernetes.io"]["secret"] == {"name": sa_name + "-token", "uid": holder.metadata.uid}
    assert holder.metadata.annotations["fleetops.registration/token-expires"] == stamp(claims["exp"])
    assert hub_answer(lab, token) == 201
    assert first["identity"] == {"kind": "ServiceAccount", "name": sa_name, "namespace": HUB_NS, "apiGroup": ""}
    assert "token" not in first
    assert token not in first["raw_output"]
    assert base64.b64encode(token.encode()).decode() not in first["raw_output"]
    assert first["diff"]["after"]["token_secrets"][0]["data"]["token"] == MASK
    uid = hub.service_account(sa_name).metadata.uid
    assert first["service_account"]["uid"] == uid

    again = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, return_token=True)))
    assert not again.changed
    assert again["service_account"]["uid"] == uid, "the ServiceAccount was recreated"
    assert again["token"] == token, "the token changed on a re-run"
    assert hub.token(member) == token

    # A rotation issues a second token next to the first; both stay valid until the older one is revoked.
    rotated = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, rotate=True)))
    assert rotated.changed and rotated["rotated"] and rotated["token_secret"]["name"] == sa_name + "-token-2"
    assert hub.secret(sa_name + "-token") is not None and rotated["revoked"] == []
    under_way = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, rotate=True)))
    assert not under_way.changed and under_way["token_secret"]["name"] == sa_name + "-token-2", "a second rotation began"
    revoked = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, revoke_previous=True)))
    assert revoked.changed and revoked["revoked"] == [sa_name + "-token"] and hub.secret(sa_name + "-token") is None
    assert token not in revoked["raw_output"]
    assert not ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, revoke_previous=True, token_max_age="720h"))).changed


def test_identity_absent_removes_both(lab, hub, member):
    sa_name = "%s-hub-cluster-access" % member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    checked = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, state="absent"), check=True))
    assert checked.changed and hub.service_account(sa_name) is not None
    gone = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, state="absent")))
    assert gone.changed
    assert hub.service_account(sa_name) is None and hub.secret(sa_name + "-token") is None
    assert not ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, state="absent"))).changed


@pytest.mark.parametrize("lifetime, fragments", [
    ("720h", ("does not exist, so no token can be issued for it",)),
    ("never", ("was deleted before it was filled", "was never filled")),  # a legacy token: kube-controller-manager never fills it
])
def test_identity_token_never_filled_fails_clearly_and_leaves_nothing(lab, hub, member, lifetime, fragments):
    ghost = unique("ghost")
    result = failed(run_module("kubefleet_member_identity", hub_args(
        lab, name=member, service_account_name=ghost, create_service_account=False, wait_timeout=20, wait_sleep=1,
        token_lifetime=lifetime, allow_non_expiring_token=True)))
    assert any(fragment in result["msg"] for fragment in fragments), result["msg"]
    assert ghost in result["msg"]
    assert "create_service_account" in result["msg"]
    assert hub.secret(ghost + "-token") is None
    assert hub.service_account(ghost) is None


def test_identity_refuses_a_service_account_or_token_secret_the_collection_did_not_make(lab, hub, member):
    sa_name = "%s-hub-cluster-access" % member
    hub.core.create_namespaced_service_account(HUB_NS, {"metadata": {"name": sa_name}})
    refused = failed(run_module("kubefleet_member_identity", hub_args(lab, name=member)),
                     "service_account_name: ServiceAccount %s/%s exists but was not created by this collection" % (HUB_NS, sa_name),
                     "app.kubernetes.io/managed-by=fleetops.registration", "create_service_account: false")
    assert not refused.changed and hub.secret(sa_name + "-token") is None, "a token was issued for a foreign ServiceAccount"
    # Named as managed elsewhere on purpose, it is used.
    used = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, create_service_account=False)))
    assert used.changed and used["token_secret"]["token_ready"]
    hub.core.delete_namespaced_secret(sa_name + "-token", HUB_NS)
    hub.core.patch_namespaced_service_account(sa_name, HUB_NS, {"metadata": {"labels": {"app.kubernetes.io/managed-by": "fleetops.registration"}}})
    hub.core.create_namespaced_secret(HUB_NS, {"metadata": {"name": sa_name + "-token"}, "type": "Opaque", "data": {"token": "eA=="}})
    failed(run_module("kubefleet_member_identity", hub_args(lab, name=member)),
           "token_secret_name: Secret %s/%s-token exists but was not created by this collection" % (HUB_NS, sa_name))
    assert hub.secret(sa_name + "-token").data == {"token": "eA=="} and hub.secret(sa_name + "-token-2") is None


def test_identity_migrates_a_legacy_token_and_revoking_a_holder_revokes_its_token(lab, hub, member):
    sa_name = "%s-hub-cluster-access" % member
    legacy = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, token_lifetime="never", allow_non_expiring_token=True, return_token=True)))
    assert legacy["token_secret"]["expires"] is None and "exp" not in jwt_claims(legacy["token"])
    assert hub.secret(sa_name + "-token").type == "kubernetes.io/service-account-token"
    assert not ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, token_lifetime="never", allow_non_expiring_token=True))).changed

    # The default lifetime again: the legacy token is due, a new one is issued next to it, and revoked once asked.
    migrated = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, return_token=True)))
    assert migrated.changed and migrated["rotated"] and migrated["token_secret"]["name"] == sa_name + "-token-2"
    assert migrated["previous"] == [sa_name + "-token"] and migrated["token_secret"]["expires"]
    assert jwt_claims(migrated["token"])["exp"] and hub_answer(lab, migrated["token"]) == 201
    assert hub_answer(lab, legacy["token"]) == 201, "the old token must stay valid until it is revoked"
    revoked = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, revoke_previous=True)))
    assert revoked["revoked"] == [sa_name + "-token"] and revoked["previous"] == []
    wait_for(lambda: hub_answer(lab, legacy["token"]) == 401 or None, 60, "the hub to reject the revoked legacy token")

    # A shorter lifetime: the current token outlives it, so the next one is issued with it; the old holder's deletion
    # revokes the old time-bound token.
    shorter = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, token_lifetime="10m", return_token=True)))
    assert shorter["rotated"] and shorter["token_secret"]["name"] == sa_name + "-token"
    claims = jwt_claims(shorter["token"])
    assert 540 <= claims["exp"] - claims["iat"] <= 600, claims
    assert not ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, token_lifetime="10m"))).changed
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, token_lifetime="10m", revoke_previous=True)))
    wait_for(lambda: hub_answer(lab, migrated["token"]) == 401 or None, 60, "the hub to reject the token of a deleted holder")
    assert hub_answer(lab, shorter["token"]) == 201

    # fleet_status_info shows the hub side of it: which Secret holds the member's current token and when it expires.
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5)))
    status = ok(run_module("fleet_status_info", hub_args(lab, backends=["kubefleet"])))
    assert status["members"][member]["kubefleet"]["credential"] == {
        "secret": sa_name + "-token", "issued": shorter["token_secret"]["issued"], "expires": stamp(claims["exp"]), "warning": None}
    assert shorter["token"] not in status["raw_output"]


def test_identity_missing_namespace_is_a_parameter_error(lab, hub, member):
    failed(run_module("kubefleet_member_identity", hub_args(lab, name=member, namespace=unique("nope"))),
           "namespace", "does not exist on the hub")
    assert hub.service_account("%s-hub-cluster-access" % member) is None


# -- MemberCluster without an agent -------------------------------------------------

def test_member_cluster_bad_input_changes_nothing(lab, hub, member):
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    for heartbeat in (0, 601):
        failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=heartbeat)),
               "heartbeat_period_seconds", "1 to 600")
    failed(run_module("kubefleet_member_cluster", hub_args(lab, name="x" * 51)), "at most 50")
    failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, identity_name=unique("nobody"))),
           "identity_name", "does not exist on the hub", "kubefleet_member_identity")
    failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, taints=[{"key": "k", "effect": "NoExecute"}])), "taints")
    failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, labels={"bad key!": "x"})), "labels")
    assert hub.member_cluster(member) is None
    assert hub.namespace("fleet-member-" + member) is None


def test_member_cluster_labels_taints_check_mode_and_forced_leave(lab, hub, member):
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    base = hub_args(lab, name=member, heartbeat_period_seconds=5)

    checked = ok(run_module("kubefleet_member_cluster", dict(base, labels={"env": "test", "tier": "a"}), check=True, diff=True))
    assert checked.changed and checked["diff"]["before"] == {}
    assert checked["diff"]["after"]["metadata"]["labels"] == {"env": "test", "tier": "a"}
    assert hub.member_cluster(member) is None, "check mode created the MemberCluster"

    joined = ok(run_module("kubefleet_member_cluster", dict(base, labels={"env": "test", "tier": "a"})))
    assert joined.changed
    assert joined["member"]["ready_to_join"] is True
    mc = hub.member_cluster(member)
    assert mc["metadata"]["labels"] == {"env": "test", "tier": "a"}
    assert mc["spec"]["heartbeatPeriodSeconds"] == 5
    assert mc["spec"]["identity"]["name"] == "%s-hub-cluster-access" % member
    assert hub.namespace("fleet-member-" + member).status.phase == "Active"

    assert not ok(run_module("kubefleet_member_cluster", dict(base, labels={"env": "test", "tier": "a"}))).changed

    checked = ok(run_module("kubefleet_member_cluster", dict(base, labels={"tier": "b"}, labels_mode="replace"), check=True, diff=True))
    assert checked.changed
    assert checked["diff"]["after"]["metadata"]["labels"] == {"tier": "b"}
    assert hub.member_cluster(member)["metadata"]["labels"] == {"env": "test", "tier": "a"}, "check mode changed the labels"

    ok(run_module("kubefleet_member_cluster", dict(base, labels={"zone": "z1"})))
    assert hub.member_cluster(member)["metadata"]["labels"] == {"env": "test", "tier": "a", "zone": "z1"}
    replaced = ok(run_module("kubefleet_member_cluster", dict(base, labels={"tier": "b"}, labels_mode="replace")))
    assert replaced.changed
    assert hub.member_cluster(member)["metadata"]["labels"] == {"tier": "b"}

    tainted = ok(run_module("kubefleet_member_cluster", dict(base, taints=[{"key": "maintenance", "value": "true"}])))
    assert tainted.changed
    assert hub.member_cluster(member)["spec"]["taints"] == [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
    assert not ok(run_module("kubefleet_member_cluster", dict(base, taints=[{"key": "maintenance", "value": "true"}]))).changed
    ok(run_module("kubefleet_member_cluster", dict(base, taints=[])))
    assert not hub.member_cluster(member)["spec"].get("taints")

    # No member agent ever joined, so the hub would wait its 15 minute force-delete time: the stuck leave.
    checked = ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent"), check=True))
    assert checked.changed and hub.member_cluster(member) is not None
    left = ok(run_module("kubefleet_member_cluster", hub_args(
        lab, name=member, state="absent", force_remove_finalizers=True, force_grace_period=5, wait_timeout=120)))
    assert left.changed
    assert any("MemberCluster" in item for item in left["forced"]), left["forced"]
    assert hub.member_cluster(member) is None
    assert hub.namespace("fleet-member-" + member) is None
    assert not ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent"))).changed


QUARANTINE = {"key": "fleetops.registration/quarantine", "value": "unverified", "effect": "NoSchedule"}


def test_member_cluster_quarantine_holds_until_verified_and_says_why(lab, hub, member):
    """issue 17, item 5: only the quarantine option adds or lifts the taint, and a member that is not verified keeps it."""
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    maintenance = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
    base = hub_args(lab, name=member, heartbeat_period_seconds=5)
    held = ok(run_module("kubefleet_member_cluster", dict(base, quarantine="hold", taints=[maintenance])))
    assert held.changed and held["quarantine"] == {"held": True, "problems": []}
    assert hub.member_cluster(member)["spec"]["taints"] == [maintenance, QUARANTINE]
    assert not ok(run_module("kubefleet_member_cluster", dict(base, quarantine="hold", taints=[maintenance]))).changed
    ok(run_module("kubefleet_member_cluster", dict(base, taints=[])))
    assert hub.member_cluster(member)["spec"]["taints"] == [QUARANTINE], "taints: [] lifted the quarantine"

    # No member agent ever joins this member: the lift waits for the verification, then fails saying why.
    lifted = failed(run_module("kubefleet_member_cluster", dict(base, quarantine="lift", wait=True, wait_timeout=4)),
                    "MemberCluster %s stays quarantined" % member, "it has not joined", "no properties")
    assert not lifted.changed and lifted["quarantine"]["held"] is True
    predicted = ok(run_module("kubefleet_member_cluster", dict(base, quarantine="lift", wait=True), check=True))
    assert predicted["quarantine"]["problems"] and any("would stay quarantined" in str(w) for w in predicted.get("warnings") or []), predicted.get("warnings")
    assert hub.member_cluster(member)["spec"]["taints"] == [QUARANTINE]
    info = ok(run_module("fleet_status_info", hub_args(lab, backends=["kubefleet"])))
    assert info["members"][member]["kubefleet"]["quarantined"] is True


def test_stuck_leave_without_force_times_out_with_what_is_left(lab, hub, member):
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member)))
    result = failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent", wait_timeout=8)),
                    "timed out", "still there", "force_remove_finalizers")
    assert "kubernetes-fleet.io/membercluster-finalizer" in result["msg"]


# -- the full join with the real member agent on member2 -------------------------------

def test_join_rerun_info_leave_and_join_again(lab, hub, agent_member, tmp_path):
    member = agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5, labels={"site": "lab"})))
    token = hub.token(member)
    args = agent_args(lab, member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")

    checked = ok(run_module("kubefleet_member_agent", args, check=True, diff=True))
    assert checked.changed
    assert checked["diff"]["after"]["secret"]["data"]["token"] == MASK
    assert token not in checked["raw_output"]
    assert hub.member_secret() is None and not hub.release(), "check mode changed member2"

    joined = ok(run_module("kubefleet_member_agent", args, diff=True))
    assert joined.changed
    assert token not in joined["raw_output"]
    assert base64.b64encode(token.encode()).decode() not in joined["raw_output"]
    assert joined["member"]["joined"] is True
    agent = [a for a in joined["member"]["agents"] if a["type"] == "MemberAgent"][0]
    assert agent["last_received_heartbeat"]
    assert joined["preflight"]["username"] == "system:serviceaccount:%s:%s-hub-cluster-access" % (HUB_NS, member)
    assert joined["chart_values"]["config"]["hubURL"] == lab.api_urls["hub"]
    assert base64.b64decode(joined["chart_values"]["config"]["hubCA"]).decode() == lab.ca_pem("hub")
    assert base64.b64decode(hub.member_secret().data["token"]).decode() == token
    assert [r["name"] for r in hub.release()] == ["member-agent"]

    again = ok(run_module("kubefleet_member_agent", args, diff=True))
    assert not again.changed, again.get("diff")
    assert not ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5, labels={"site": "lab"}))).changed
    assert not ok(run_module("kubefleet_member_identity", hub_args(lab, name=member))).changed
    waited = ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5, labels={"site": "lab"},
                                                                wait_for="joined", wait_timeout=60)))
    assert not waited.changed and waited["member"]["joined"] is True

    # a values change shows in check mode's diff and changes nothing
    checked = ok(run_module("kubefleet_member_agent", dict(args, log_verbosity=3), check=True, diff=True))
    assert checked.changed
    assert checked["diff"]["after"]["release"]["values"]["logVerbosity"] == 3
    assert "logVerbosity" not in checked["diff"]["before"]["release"]["values"]
    assert token not in checked["raw_output"]
    assert str(hub.release()[0]["revision"]) == "1", "check mode upgraded the release"

    # labels added and removed on the hub show on the MemberCluster
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5, labels={"site": "lab", "ring": "0"})))
    assert hub.member_cluster(member)["metadata"]["labels"] == {"site": "lab", "ring": "0"}
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5, labels={"ring": "0"}, labels_mode="replace")))
    assert hub.member_cluster(member)["metadata"]["labels"] == {"ring": "0"}

    info = ok(run_module("kubefleet_member_cluster_info", hub_args(lab, name=member)))
    assert not info.changed
    [status] = info["members"]
    assert (status["ready_to_join"], status["joined"]) == (True, True)
    assert status["labels"] == {"ring": "0"}
    agent = [a for a in status["agents"] if a["type"] == "MemberAgent"][0]
    assert agent["joined"] is True and 0 <= agent["heartbeat_age_seconds"] < 60
    assert status["resource_usage"]["observation_time"]
    assert [m["name"] for m in ok(run_module("kubefleet_member_cluster_info", hub_args(lab, labels={"ring": "0"})))["members"]] == [member]
    assert ok(run_module("kubefleet_member_cluster_info", hub_args(lab, name=member, labels={"ring": "1"})))["members"] == []
    assert ok(run_module("kubefleet_member_cluster_info", hub_args(lab, name=unique("nobody"))))["members"] == []
    assert member in [m["name"] for m in ok(run_module("kubefleet_member_cluster_info", hub_args(lab)))["members"]]

    # re-join after an identity change (Azure/fleet#187): a new token reaches the running agent
    removed_identity = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, state="absent")))
    assert any("still names this identity" in str(w) for w in removed_identity.get("warnings", [])), removed_identity.get("warnings")
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    new_token = hub.token(member)
    assert new_token != token
    before = hub.member_cluster(member)["status"]["agentStatus"]
    old_beat = [a for a in before if a["type"] == "MemberAgent"][0]["lastReceivedHeartbeat"]
    rotated = ok(run_module("kubefleet_member_agent", args, diff=True))
    assert rotated.changed and rotated["agent_restarted"] is True
    assert rotated["diff"]["after"]["secret"]["data"]["token"] == MASK + " (changed)"
    assert new_token not in rotated["raw_output"] and token not in rotated["raw_output"]
    assert base64.b64decode(hub.member_secret().data["token"]).decode() == new_token
    fresh = [a for a in rotated["member"]["agents"] if a["type"] == "MemberAgent"][0]
    assert fresh["last_received_heartbeat"] > old_beat, "the module returned before a heartbeat with the new token"
    assert not ok(run_module("kubefleet_member_agent", args)).changed

    # leave while the agent runs: graceful, nothing forced
    left = ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent", wait_timeout=240)))
    assert left.changed and left["forced"] == []
    assert hub.member_cluster(member) is None and hub.namespace("fleet-member-" + member) is None
    checked = ok(run_module("kubefleet_member_agent", dict(args, state="absent"), check=True, diff=True))
    assert checked.changed and hub.release() and hub.member_secret() is not None, "check mode removed the agent"
    assert checked["diff"]["after"] == {"secret": {}, "release": {}}
    removed = ok(run_module("kubefleet_member_agent", dict(args, state="absent")))
    assert removed.changed
    assert not hub.release() and hub.member_secret() is None
    assert hub.namespace("fleet-system", hub.member_core) is None
    # The agent's leader-election Leases (kube-system, not a namespace the leave deletes) go once no agent pod is left.
    assert sorted(removed["removed_leases"]) == sorted(AGENT_LEASES), removed
    member_leases = client.CoordinationV1Api(hub.member_core.api_client)
    assert [n for n in AGENT_LEASES if read_or_none(lambda n=n: member_leases.read_namespaced_lease(n, "kube-system"))] == []
    assert not ok(run_module("kubefleet_member_agent", dict(args, state="absent"))).changed

    # join again, this time with a hub kubeconfig that names its CA file instead of inlining it
    config = yaml.safe_load(lab.kubeconfig.read_text())
    hub_context = [c for c in config["contexts"] if c["name"] == "hub"][0]["context"]
    cluster = [c for c in config["clusters"] if c["name"] == hub_context["cluster"]][0]["cluster"]
    cluster.pop("certificate-authority-data", None)
    cluster["certificate-authority"] = str(lab.ca_files["hub"])
    hub_kubeconfig = tmp_path / "hub.yaml"
    hub_kubeconfig.write_text(yaml.safe_dump(config))
    hub_kubeconfig.chmod(0o600)
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5)))
    rejoined = ok(run_module("kubefleet_member_agent", dict(args, hub_kubeconfig=str(hub_kubeconfig))))
    assert rejoined.changed and rejoined["member"]["joined"] is True
    # The leave removed the old agent's leader-election Leases: the new agent had no departed holder to wait for.
    assert rejoined["released_leases"] == [], rejoined
    assert base64.b64decode(rejoined["chart_values"]["config"]["hubCA"]).decode() == lab.ca_pem("hub")

    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent", wait_timeout=240)))
    ok(run_module("kubefleet_member_agent", dict(args, state="absent")))
    assert hub.member_cluster(member) is None and not hub.release() and hub.member_secret() is None


# -- agent bad input: fails before member2 is touched ---------------------------------

def _nothing_on_member(hub):
    assert hub.member_secret() is None, "a failed run left hub-kubeconfig-secret behind"
    assert not hub.release(), "a failed run left a release behind"


def test_agent_check_mode_before_the_hub_side_exists_predicts_the_join(lab, hub, agent_member):
    """A playbook's check run: identity and MemberCluster were only dry-run by earlier tasks."""
    result = ok(run_module("kubefleet_member_agent", agent_args(lab, agent_member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub"),
                           check=True, diff=True))
    assert result.changed
    warnings = " ".join(str(w) for w in result.get("warnings", []))
    assert "no MemberCluster named %s" % agent_member in warnings and "a real run fails without it" in warnings
    assert result["diff"]["before"] == {"secret": {}, "release": {}}
    assert result["diff"]["after"]["secret"]["data"] == {"token": MASK}
    assert result["diff"]["after"]["release"]["values"]["config"]["memberClusterName"] == agent_member
    assert result["preflight"] is None
    _nothing_on_member(hub)


def test_agent_for_an_unknown_member_fails_first(lab, hub, agent_member):
    result = failed(run_module("kubefleet_member_agent", agent_args(lab, agent_member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")),
                    "no MemberCluster named", "kubefleet_member_cluster")
    assert "name" in result["msg"]
    _nothing_on_member(hub)


def test_agent_with_the_hub_unreachable_fails_in_preflight(lab, hub, agent_member):
    token = "not-a-real-token-" + uuid.uuid4().hex
    result = failed(run_module("kubefleet_member_agent", agent_args(
        lab, agent_member, token=token, hub_api_server_url="https://127.0.0.1:1", hub_api_server_ca=lab.ca_pem("hub"))),
        "preflight", "cannot reach", "https://127.0.0.1:1")
    assert token not in result["raw_output"]
    _nothing_on_member(hub)


def test_agent_with_the_wrong_hub_ca_fails_in_preflight(lab, hub, agent_member):
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=agent_member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=agent_member)))
    result = failed(run_module("kubefleet_member_agent", agent_args(
        lab, agent_member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", hub_api_server_ca=lab.ca_pem(MEMBER_CTX))),
        "preflight", "certificate the given CA does not verify", "hub_api_server_ca")
    assert hub.token(agent_member) not in result["raw_output"]
    _nothing_on_member(hub)


def test_agent_with_a_refused_token_fails_in_preflight(lab, hub, agent_member):
    token = "bogus" + uuid.uuid4().hex
    result = failed(run_module("kubefleet_member_agent", agent_args(
        lab, agent_member, token=token, hub_api_server_url=lab.api_urls["hub"], hub_api_server_ca=lab.ca_pem("hub"))),
        "token: preflight", "refused the member agent's token")
    assert token not in result["raw_output"]
    _nothing_on_member(hub)


def test_agent_without_a_hub_ca_or_a_pinned_chart_is_a_parameter_error(lab, hub, agent_member):
    token = "tok-" + uuid.uuid4().hex  # a no_log value: Ansible masks every occurrence, so not a short string
    failed(run_module("kubefleet_member_agent", agent_args(lab, agent_member, token=token, hub_api_server_url=lab.api_urls["hub"])),
           "hub_api_server_ca")
    failed(run_module("kubefleet_member_agent", agent_args(lab, agent_member, token=token, hub_api_server_url=lab.api_urls["hub"],
                                                           hub_api_server_ca=lab.ca_pem("hub"), chart_ref="oci://example.invalid/member-agent")),
           "chart_version", "pinned")
    _nothing_on_member(hub)


# -- reliability: truthful changed, check mode on fresh targets, no leftovers (issue 8) ----------

def test_stuck_leave_that_times_out_after_the_delete_reports_changed(lab, hub, member):
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member)))
    first = failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent", wait_timeout=5)),
                   "timed out", "deleted MemberCluster %s" % member)
    assert first.changed, "the delete was issued, so the failed task changed the hub"
    assert "member_leave_kubefleet_force" in first["msg"] and "force_remove_finalizers" in first["msg"]
    assert hub.member_cluster(member)["metadata"].get("deletionTimestamp")
    again = failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent", wait_timeout=3)), "timed out")
    assert not again.changed, "a re-run that only waited changed nothing"


def test_member_cluster_check_mode_before_the_identity_exists_predicts_the_join(lab, hub, member):
    """A playbook's check run: kubefleet_member_identity only dry-ran the ServiceAccount."""
    result = ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, labels={"site": "lab"}), check=True, diff=True))
    assert result.changed
    warnings = " ".join(str(w) for w in result.get("warnings", []))
    assert "ServiceAccount %s/%s-hub-cluster-access" % (HUB_NS, member) in warnings and "a real run fails without it" in warnings
    assert result["diff"]["after"]["spec"]["identity"]["name"] == "%s-hub-cluster-access" % member
    assert hub.member_cluster(member) is None
    failed(run_module("kubefleet_member_cluster", hub_args(lab, name=member)), "identity_name", "does not exist on the hub")


def test_identity_removal_in_check_mode_does_not_warn_about_the_member_cluster(lab, hub, member):
    """leave_cluster.yml --check: the MemberCluster's delete was only dry-run, so it still names the identity."""
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent"), check=True))
    checked = ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, state="absent"), check=True))
    assert checked.changed and checked["member_cluster_names_identity"] is True
    assert not any("still names this identity" in str(w) for w in checked.get("warnings", [])), checked.get("warnings")
    assert hub.service_account("%s-hub-cluster-access" % member) is not None


def _clients(lab):
    """KubeClients for member2 and the hub, built the way the modules build them (real API, admin)."""
    from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings
    from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient

    def client(context):
        settings = ConnectionSettings({"kubeconfig": str(lab.kubeconfig), "context": context})
        return KubeClient(settings.client_configuration(), label=context)
    return client(MEMBER_CTX), client("hub")


def _state(lab, member, **desired):
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER
    member_client, hub_client = _clients(lab)
    hub_object = MANAGER.read_hub(hub_client, names=[member]).get(member)
    # member_info's options: the hub connection says where the agent should connect, not the member's release
    view = MANAGER.member_view(member_client, hub_client, {"name": member, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"})
    wanted = dict({"labels": {}, "labels_mode": "merge", "stale_after": 3600, "chart_version": None, "values": {},
                   "force": False}, **desired)
    return MANAGER.decide(member, MANAGER.hub_view(hub_object), view, wanted)


def test_member_view_sees_broken_agents_and_a_plain_rerun_repairs_them(lab, hub, agent_member):
    member = agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5)))
    # an agent of another release than the lab's hub agent (v0.14.0; the lab runs any tag of the image)
    args = agent_args(lab, member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", image_tag="v0.13.0")
    ok(run_module("kubefleet_member_agent", args))
    token = hub.token(member)

    healthy = _state(lab, member)
    assert (healthy.action, healthy.reasons) == ("none", []), healthy.reasons
    info = ok(run_module("member_info", {"name": member, "kubeconfig": str(lab.kubeconfig), "context": MEMBER_CTX,
                                         "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub", "backends": ["kubefleet"]}))
    skew = [str(w) for w in info.get("warnings", []) if "the agent runs KubeFleet 0.13.0, the hub KubeFleet 0.14.0" in str(w)]
    assert skew and "fleet-system/hub-agent" in skew[0] and "fleetops_kubefleet_member_agent_image_tag" in skew[0], info.get("warnings")
    assert "0.13.0" not in str(info["managers"]["kubefleet"]["reasons"])  # a warning, not a reason to act
    view = healthy.member
    assert view["release"]["status"] == "deployed" and view["deployment"]["present"] is True
    assert view["credential"]["present"] is True and view["credential"]["accepted"] is True
    assert view["credential"]["username"] == "system:serviceaccount:%s:%s-hub-cluster-access" % (HUB_NS, member)
    assert view["hub_url"] == lab.api_urls["hub"]
    assert token not in str(healthy.as_dict())
    assert healthy.hub["joined"] is True and not healthy.hub["heartbeat_stale"]

    # the agent's credential deleted on the member
    hub.member_core.delete_namespaced_secret("hub-kubeconfig-secret", TOKEN_NS)
    broken = _state(lab, member)
    assert broken.action == "reregister" and "hub-kubeconfig-secret is missing" in broken.reasons[0]
    repaired = ok(run_module("kubefleet_member_agent", args))
    assert repaired.changed and any("missing on the member" in r for r in repaired["reasons"]), repaired["reasons"]
    assert _state(lab, member).action == "none"

    # the release uninstalled
    lab.run_helm(MEMBER_CTX, "uninstall", "member-agent", "--namespace", TOKEN_NS, "--wait")
    broken = _state(lab, member)
    assert broken.action == "install" and "not installed" in broken.reasons[0], broken.reasons
    assert broken.member["release"] is None
    repaired = ok(run_module("kubefleet_member_agent", args))
    assert repaired.changed and repaired["member"]["joined"] is True
    assert _state(lab, member).action == "none"

    # the identity removed on the hub: judged gone at once, and the token the member holds is rejected
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member, state="absent")))
    gone = _state(lab, member)
    assert gone.action == "reregister" and "%s-hub-cluster-access, does not exist on the hub" % member in gone.reasons[0], gone.reasons
    # The API server keeps a token it authenticated for 10 s: the rejection follows within seconds.

    def decided():
        state = _state(lab, member)
        return state if state.member["credential"]["accepted"] is False else None

    rejected = wait_for(decided, 30, "the hub to reject the token")
    assert rejected.action == "reregister" and any("rejects the member agent's token" in r for r in rejected.reasons), rejected.reasons
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    rotated = ok(run_module("kubefleet_member_agent", args))
    assert rotated.changed and rotated["agent_restarted"] is True
    assert _state(lab, member).action == "none"
    agent_setting_applied_and_repaired(lab, member, args)

    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, state="absent", wait_timeout=240)))
    ok(run_module("kubefleet_member_agent", dict(args, state="absent")))
    assert _state(lab, member).action == "join"


AGENT_SETTING = {
    "tolerations": [{"key": "fleetops.test/dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "image_registry": "mirror.invalid:5000", "priority_class_name": "system-cluster-critical", "image_pull_secrets": ["mirror-pull"],
    # NO_PROXY=* keeps the agent off the proxy; the password must never reach the output.
    "env": {"HTTPS_PROXY": "http://fleetops:s3cret@proxy.invalid:3128", "NO_PROXY": "*"},
}


def agent_setting_applied_and_repaired(lab, member, args):
    """The agent setting: what the chart takes in its values, the rest patched onto the Deployment; an edit made since
    is the action reconfigure (healthy meanwhile), which the module repairs."""
    from ansible_collections.fleetops.registration.plugins.module_utils.agent_settings import validate
    apps = client.AppsV1Api(lab.api_client(MEMBER_CTX))
    set_up = ok(run_module("kubefleet_member_agent", dict(args, agent=AGENT_SETTING)))
    assert set_up.changed and set_up["agent_setting"]["patched"] and set_up["member"]["joined"] is True
    assert "s3cret" not in set_up["raw_output"]
    assert set_up["chart_values"]["tolerations"] == AGENT_SETTING["tolerations"]
    spec = apps.read_namespaced_deployment("member-agent", "fleet-system").spec.template.spec
    assert spec.priority_class_name == "system-cluster-critical" and [s.name for s in spec.image_pull_secrets] == ["mirror-pull"]
    assert all(c.image.startswith("mirror.invalid:5000/azure/fleet/") for c in spec.containers), [c.image for c in spec.containers]
    assert all({e.name for e in c.env or []} >= {"HTTPS_PROXY", "NO_PROXY"} for c in spec.containers)
    assert "fleetops.test/dedicated" in [t.key for t in spec.tolerations]
    assert _state(lab, member, agent=validate(AGENT_SETTING)).action == "none"
    assert not ok(run_module("kubefleet_member_agent", dict(args, agent=AGENT_SETTING))).changed

    apps.patch_namespaced_deployment("member-agent", "fleet-system", {"spec": {"template": {"spec": {"priorityClassName": None}}}})
    drifted = _state(lab, member, agent=validate(AGENT_SETTING))
    assert drifted.action == "reconfigure" and "priority class is ''" in drifted.reasons[0], drifted.reasons
    # the drift alone keeps the member healthy; the rollout the edit started may still be under way when it is read
    unhealthy = {f["cause"] for f in drifted.findings if f["action"] not in ("rotate", "reconfigure", "relabel")}
    assert unhealthy <= {"not_rolled_out"} and drifted.healthy == (not unhealthy), drifted.findings
    assert "s3cret" not in str(drifted.as_dict())
    repaired = ok(run_module("kubefleet_member_agent", dict(args, agent=AGENT_SETTING)))
    assert repaired.changed and repaired["agent_setting"]["drift"] == drifted.reasons
    assert _state(lab, member, agent=validate(AGENT_SETTING)).action == "none"


def test_agent_leave_removes_the_release_namespace_it_created_unless_kept(lab, hub, agent_member):
    member = agent_member
    records = unique("kf-records")
    wait_for(lambda: hub.namespace("fleet-system", hub.member_core) is None, 120, "member2's agent namespace to be gone")
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member)))
    args = agent_args(lab, member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", release_namespace=records, wait=False)
    try:
        checked = ok(run_module("kubefleet_member_agent", args, check=True))
        assert checked.changed and any(records in r for r in checked["reasons"])
        assert hub.namespace(records, hub.member_core) is None, "check mode created the namespace"
        installed = ok(run_module("kubefleet_member_agent", args))
        assert installed.changed
        namespace = hub.namespace(records, hub.member_core)
        assert namespace.metadata.labels["app.kubernetes.io/managed-by"] == "fleetops.registration"
        assert not ok(run_module("kubefleet_member_agent", args)).changed

        kept = ok(run_module("kubefleet_member_agent", dict(args, state="absent", wait=True, keep_release_namespace=True)))
        assert kept.changed and kept["removed_namespaces"] == [TOKEN_NS]
        assert hub.namespace(records, hub.member_core) is not None
        wait_for(lambda: hub.namespace(TOKEN_NS, hub.member_core) is None, 60, "the token namespace to be gone")

        ok(run_module("kubefleet_member_agent", args))
        removed = ok(run_module("kubefleet_member_agent", dict(args, state="absent", wait=True)))
        assert removed["removed_namespaces"] == [records, TOKEN_NS]
        leftover = hub.namespace(records, hub.member_core)
        assert leftover is None or leftover.metadata.deletion_timestamp
        assert hub.namespace("fleet-system", hub.member_core) is None and hub.member_secret() is None
        assert not ok(run_module("kubefleet_member_agent", dict(args, state="absent"))).changed
    finally:
        lab.run_helm(MEMBER_CTX, "uninstall", "member-agent", "--namespace", records, "--ignore-not-found", check=False)
        ignore_404(lambda: hub.member_core.delete_namespace(records))


def test_an_agent_reading_its_token_from_default_is_moved_to_a_namespace_of_its_own(lab, hub, agent_member):
    """Earlier versions kept the token in ``default``: the next run writes it to TOKEN_NS, upgrades the release to read
    it there, removes the old Secret once Helm has moved the agent, and the member stays joined."""
    member = agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5)))
    args = agent_args(lab, member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")
    ok(run_module("kubefleet_member_agent", dict(args, secret_namespace="default")))
    assert hub.secret("hub-kubeconfig-secret", "default", hub.member_core) is not None

    before = _state(lab, member)
    assert before.action == "upgrade", before.reasons
    assert before.reasons == ["the member agent reads its token from default/hub-kubeconfig-secret, not %s/hub-kubeconfig-secret" % TOKEN_NS]
    checked = ok(run_module("kubefleet_member_agent", args, check=True))
    assert checked.changed and any("which moves to %s/hub-kubeconfig-secret" % TOKEN_NS in r for r in checked["reasons"])
    assert hub.secret("hub-kubeconfig-secret", "default", hub.member_core) is not None, "check mode removed the old token"

    moved = ok(run_module("kubefleet_member_agent", args))
    assert moved.changed and moved["removed_secrets"] == ["default/hub-kubeconfig-secret"]
    assert moved["chart_values"]["secret"] == {"name": "hub-kubeconfig-secret", "namespace": TOKEN_NS}
    assert hub.secret("hub-kubeconfig-secret", "default", hub.member_core) is None
    new = hub.member_secret()
    assert new is not None and new.metadata.labels["app.kubernetes.io/managed-by"] == "fleetops.registration"
    assert base64.b64decode(new.data["token"]).decode() == hub.token(member)
    assert moved["member"]["joined"] is True, "the moved agent did not heartbeat with its token from %s" % TOKEN_NS
    assert _state(lab, member).action == "none"
    assert not ok(run_module("kubefleet_member_agent", args)).changed

    left = ok(run_module("kubefleet_member_agent", dict(args, state="absent")))
    assert TOKEN_NS in left["removed_namespaces"] and hub.member_secret() is None
