"""Rancher Fleet decisions that are pure: token labels/expiry/pruning, the agent's plan, namespace leftovers,
the Cluster's desired state, preflight's token check, and the manager's decide()."""

import base64
import copy
import datetime
import json

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import ACTIONS, FleetManager
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import member as member_side, preflight, rules, views
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import AGENT_CREDENTIAL_KEY
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 1, 2, 12, 0, 0, tzinfo=UTC)
OURS = {"app.kubernetes.io/managed-by": "fleetops.registration"}


def _token(name, created="2026-01-02T11:00:00Z", labels=None, ttl=None, expires=None, annotations=None):
    token = {"metadata": {"name": name, "creationTimestamp": created, "labels": labels or {}, "annotations": annotations or {}},
             "spec": {}, "status": {}}
    if ttl:
        token["spec"]["ttl"] = ttl
    if expires:
        token["status"]["expires"] = expires
    return token


def test_token_metadata_labels_new_tokens_only_and_annotates_expiry():
    new = rules.token_metadata("t", "ns", None, run_id="job-42", ttl="1h", now=NOW)
    assert new["labels"] == dict(OURS, **{"fleetops.registration/run": "job-42"})
    assert new["annotations"] == {"fleetops.registration/expires": "2026-01-02T13:00:00Z"}
    existing = rules.token_metadata("t", "ns", _token("t", labels=OURS), run_id="job-43", ttl="2h")
    assert "labels" not in existing  # a later run does not take the token over
    assert existing["annotations"] == {"fleetops.registration/expires": "2026-01-02T13:00:00Z"}
    foreign = rules.token_metadata("t", "ns", _token("t"), ttl="2h")
    assert "labels" not in foreign and "annotations" not in foreign
    assert rules.token_metadata("t", "ns", None, ttl="0", now=NOW)["annotations"] == {"fleetops.registration/expires": None}
    assert "annotations" not in rules.token_metadata("t", "ns", None, now=NOW)


def test_token_expiry_annotation_is_kept_while_the_ttl_stays():
    # written from the module's clock at creation; the server's creationTimestamp can fall in the next second
    live = _token("t", created="2026-01-02T11:00:01Z", labels=OURS, ttl="1h",
                  annotations={"fleetops.registration/expires": "2026-01-02T12:00:00Z"})
    assert rules.token_metadata("t", "ns", live, ttl="1h")["annotations"] == {"fleetops.registration/expires": "2026-01-02T12:00:00Z"}
    assert rules.token_metadata("t", "ns", live, ttl="60m")["annotations"] == {"fleetops.registration/expires": "2026-01-02T12:00:00Z"}
    assert rules.token_metadata("t", "ns", live, ttl="2h")["annotations"] == {"fleetops.registration/expires": "2026-01-02T13:00:01Z"}


def test_a_token_made_under_a_member_lock_records_it_and_a_tidy_deletes_it_once_its_run_is_over():
    new = rules.token_metadata("t", "ns", None, run_id="r1", ttl="1h", now=NOW, lock="fleetops-system/fleetops-member-edge-07")
    assert new["annotations"]["fleetops.registration/lock"] == "fleetops-system/fleetops-member-edge-07"
    assert "annotations" not in rules.token_metadata("t", "ns", None, run_id=None, now=NOW, lock="fleetops-system/x")
    lock = {"fleetops.registration/lock": "fleetops-system/fleetops-member-edge-07"}
    tokens = [_token("running", labels=dict(OURS, **{"fleetops.registration/run": "r2"}), annotations=lock),
              _token("left", labels=dict(OURS, **{"fleetops.registration/run": "r1"}), annotations=lock),
              _token("unknown", labels=dict(OURS, **{"fleetops.registration/run": "r3"}), annotations=lock),
              _token("no-lock", labels=dict(OURS, **{"fleetops.registration/run": "r4"})),
              _token("foreign", labels={"fleetops.registration/run": "r1"}, annotations=lock),
              _token("expired", labels=OURS, expires="2026-01-02T11:30:00Z")]
    assert rules.token_runs(tokens) == {name: ("fleetops-system/fleetops-member-edge-07", run)
                                        for name, run in (("running", "r2"), ("left", "r1"), ("unknown", "r3"))}
    over = {("fleetops-system/fleetops-member-edge-07", "r1"): "its lock is held by run r2 now",
            ("fleetops-system/fleetops-member-edge-07", "r2"): None}
    assert rules.left_tokens(tokens, over, now=NOW) == [
        ("expired", "expired at 2026-01-02T11:30:00Z"),
        ("left", "left by run r1, which is over (its lock is held by run r2 now)")]


def test_token_metadata_names_the_member_it_is_for():
    new = rules.token_metadata("t", "ns", None, run_id="r1", cluster="edge-07", now=NOW)
    assert new["labels"] == dict(OURS, **{"fleetops.registration/run": "r1", "fleetops.registration/cluster": "edge-07"})
    assert "labels" not in rules.token_metadata("t", "ns", _token("t", labels=OURS), cluster="edge-08")


@pytest.mark.parametrize("value", ["", "has space", "x" * 64, 5])
def test_run_id_must_fit_a_label(value):
    with pytest.raises(ParameterError) as err:
        rules.validate_run_id(value)
    assert err.value.param == "run_id"


def test_token_expiry_sources():
    assert rules.token_expiry(_token("a", expires="2026-01-02T11:30:00Z")) == datetime.datetime(2026, 1, 2, 11, 30, tzinfo=UTC)
    annotated = _token("b", annotations={"fleetops.registration/expires": "2026-01-02T11:45:00Z"})
    assert rules.token_expiry(annotated) == datetime.datetime(2026, 1, 2, 11, 45, tzinfo=UTC)
    assert rules.token_expiry(_token("c", ttl="90m")) == datetime.datetime(2026, 1, 2, 12, 30, tzinfo=UTC)
    assert rules.token_expiry(_token("d")) is None
    assert rules.token_expiry(_token("e", ttl="0")) is None


def test_prunable_tokens_only_ours_expired_or_other_runs():
    tokens = [
        _token("expired", labels=OURS, expires="2026-01-02T11:59:00Z"),
        _token("other-run", labels=dict(OURS, **{"fleetops.registration/run": "old"}), ttl="24h"),
        _token("this-run", labels=dict(OURS, **{"fleetops.registration/run": "now"}), ttl="24h"),
        _token("young-other", created="2026-01-02T11:59:30Z", labels=dict(OURS, **{"fleetops.registration/run": "old"})),
        _token("users-own", expires="2026-01-02T11:00:00Z"),
        _token("keep-me", labels=OURS, expires="2026-01-02T11:00:00Z"),
    ]
    assert rules.prunable_tokens(tokens, keep="keep-me", run_id="now", grace=60, now=NOW) == [
        ("expired", "expired at 2026-01-02T11:59:00Z"), ("other-run", "left by run old")]
    # without a run id only expired tokens go, unless a grace is given
    assert [n for n, _why in rules.prunable_tokens(tokens, run_id=None, now=NOW)] == ["expired", "keep-me"]
    assert [n for n, _why in rules.prunable_tokens(tokens, run_id=None, grace=3000, now=NOW)] == [
        "expired", "keep-me", "other-run", "this-run"]
    # with a run id and no grace, every other run's token goes
    assert "young-other" in [n for n, _why in rules.prunable_tokens(tokens, run_id="now", now=NOW)]


HEALTHY = {"deployment": True, "credential": True, "bootstrap": False}
RELEASE = {"status": "deployed", "chart": "fleet-agent", "chart_version": "0.16.0", "values": {"a": 1}}


@pytest.mark.parametrize("release,member,action,reason", [
    (None, {}, "install", "not installed"),
    (RELEASE, HEALTHY, "none", None),
    (RELEASE, dict(HEALTHY, deployment=False), "upgrade", "Deployment fleet-agent is missing"),
    (RELEASE, dict(HEALTHY, credential=False), "upgrade", "no hub credential"),
    (RELEASE, dict(HEALTHY, credential=False, bootstrap=True), "none", None),  # registering right now
    (dict(RELEASE, status="failed"), HEALTHY, "upgrade", "failed"),
])
def test_plan_agent_adds_the_members_health(release, member, action, reason):
    plan = rules.plan_agent(release, "fleet-agent", "0.16.0", {"a": 1}, member)
    assert plan.action == action
    assert (reason is None and plan.reasons == []) or any(reason in r for r in plan.reasons)


def test_namespace_keepers_ignores_the_agents_own_objects():
    objects = {
        "Deployment": [{"metadata": {"name": "fleet-agent"}}],
        "Secret": [{"metadata": {"name": "sh.helm.release.v1.fleet-agent.v1"}},
                   {"metadata": {"name": "default-token-x"}, "type": "kubernetes.io/service-account-token"},
                   {"metadata": {"name": "fleet-agent-bootstrap"}}],
        "ConfigMap": [{"metadata": {"name": "kube-root-ca.crt"}}],
    }
    assert rules.namespace_keepers(objects) == []
    objects["ConfigMap"].append({"metadata": {"name": "site-settings"}})
    objects["PersistentVolumeClaim"] = [{"metadata": {"name": "data", "deletionTimestamp": "2026-01-01T00:00:00Z"}}]
    assert rules.namespace_keepers(objects) == ["ConfigMap site-settings"]


def test_choose_client_id_and_desired_cluster():
    assert rules.choose_client_id("given-id", {"spec": {"clientID": "old"}}) == ("given-id", False)
    assert rules.choose_client_id(None, {"spec": {"clientID": "old"}}) == ("old", False)
    generated, was_generated = rules.choose_client_id(None, None)
    assert was_generated and len(generated) == 64
    with pytest.raises(ParameterError):
        rules.choose_client_id("has space", None)
    current = {"metadata": {"labels": {"a": "1", "fleet.cattle.io/x": "y"}}, "spec": {"clientID": "old"}}
    desired, result = rules.desired_cluster("c", "ns", current, "old", {"b": "2"}, "replace", "c-kubeconfig")
    assert result == {"b": "2", "fleet.cattle.io/x": "y"}
    assert desired["metadata"]["labels"] == {"b": "2", "fleet.cattle.io/x": "y", "a": None}
    assert desired["spec"] == {"clientID": "old", "kubeConfigSecret": "c-kubeconfig"}
    fresh, _labels = rules.desired_cluster("c", "ns", None, "id", {"b": "2"})
    assert fresh["metadata"]["labels"] == {"b": "2"}


def test_checked_in_since():
    cluster = {"status": {"agent": {"lastSeen": "2026-01-02T12:00:00Z"}}}
    assert rules.checked_in_since(cluster)
    assert rules.checked_in_since(cluster, NOW - datetime.timedelta(seconds=1))
    assert not rules.checked_in_since(cluster, NOW)
    assert not rules.checked_in_since({"status": {}})


def test_preflight_token_object_checks():
    with pytest.raises(ParameterError) as err:
        preflight.check_token_object(None, "ns", "t")
    assert err.value.param == "token_name" and "Fleet deletes expired tokens" in err.value.message()
    with pytest.raises(ParameterError) as err:
        preflight.check_token_object(_token("t", expires="2026-01-02T11:00:00Z"), "ns", "t", now=NOW)
    assert "expired at 2026-01-02T11:00:00Z" in err.value.message() and "Fleet deletes expired tokens" in err.value.message()
    preflight.check_token_object(_token("t", expires="2026-01-02T13:00:00Z"), "ns", "t", now=NOW)


# -- the manager ------------------------------------------------------------------------------------

def test_manager_implements_the_interface():
    assert isinstance(MANAGER, FleetManager)
    for method in ("read_hub", "hub_view", "member_view", "judge", "status_row"):
        assert getattr(type(MANAGER), method) is not getattr(FleetManager, method), method
    assert (MANAGER.name, MANAGER.title, MANAGER.group_version) == ("rancher_fleet", "Rancher Fleet", "fleet.cattle.io/v1alpha1")
    assert MANAGER.controller == ("cattle-fleet-system", "fleet-controller")
    assert MANAGER.install_hint


CLUSTER = {"metadata": {"name": "edge-1", "namespace": "clusters", "labels": {"env": "dev", "fleet.cattle.io/cluster": "edge-1"}},
           "spec": {"clientID": "abc"},
           "status": {"agent": {"lastSeen": "2026-01-02T11:59:00Z"}, "display": {"readyBundles": "1/1", "state": "Ready"},
                      "conditions": [{"type": "Ready", "status": "True"}]}}
HUB = views.hub_view(CLUSTER, NOW)
MEMBER = {"namespace": True, "release": {"name": "fleet-agent", "status": "deployed", "chart_version": "0.16.0"},
          "fleet_managed_releases": [], "credential": True, "credential_usable": True, "credential_accepted": True,
          "bootstrap": False, "deployment": True}
WANT = {"labels": {"env": "dev"}, "labels_mode": "merge", "stale_after": 3600, "chart_version": "0.16.0", "force": False}


def test_hub_view_and_status_row():
    assert HUB["seen_age_seconds"] == 60 and HUB["checked_in"] and HUB["ready"] and HUB["client_id"] == "abc"
    row = member_row(MANAGER, HUB)
    assert row["last_seen"] == "2026-01-02T11:59:00Z" and row["bundles_ready"] == "1/1" and row["last_contact_age_seconds"] == 60
    assert row["state"] == "checked-in" and row["healthy"] is True
    waiting = member_row(MANAGER, dict(HUB, checked_in=False, last_seen=None, ready=False, seen_age_seconds=None))
    assert waiting["state"] == "waiting" and waiting["last_contact_age_seconds"] is None
    assert member_row(MANAGER, dict(HUB, deleting=True))["state"] == "deleting"
    assert MANAGER.hub_view(None) is None and member_row(MANAGER, None) is None


def test_the_status_word_follows_the_findings_and_the_users_stale_after():
    """A check-in 60 s old is silent past a stale_after of 30 s, in the state word and the diagnosis alike."""
    row = member_row(MANAGER, HUB, stale_after=30)
    assert row["state"] == "silent" and row["healthy"] is False and row["diagnosis"][0]["cause"] == "silent"
    assert member_row(MANAGER, HUB, stale_after=120)["state"] == "checked-in"


@pytest.mark.parametrize("hub,member,want,action,reason", [
    (HUB, MEMBER, WANT, "none", None),
    (None, None, WANT, "join", "has no Cluster"),
    (dict(HUB, checked_in=False, last_seen=None, seen_age_seconds=None), MEMBER, WANT, "join", "never checked in"),
    # a broken member is not healthy although the hub saw it a minute ago
    (HUB, dict(MEMBER, release=None), WANT, "install", "not installed"),
    (HUB, dict(MEMBER, release=dict(MEMBER["release"], status="failed")), WANT, "install", "failed, not deployed"),
    (HUB, dict(MEMBER, credential=False, credential_usable=False, credential_accepted=None), WANT, "reregister", "credential"),
    (HUB, dict(MEMBER, credential_accepted=False), WANT, "reregister", "rejects the agent's credential"),
    (HUB, dict(MEMBER, deployment=False), WANT, "install", "Deployment"),
    (dict(HUB, seen_age_seconds=7200), MEMBER, WANT, "reregister", "more than stale_after"),
    (HUB, MEMBER, dict(WANT, force=True), "reregister", "force"),
    (HUB, MEMBER, dict(WANT, chart_version="0.17.0"), "upgrade", "0.16.0 -> 0.17.0"),
    (HUB, dict(MEMBER, fleet_managed_releases=["fleet-agent-edge-1"]), dict(WANT, chart_version="0.17.0"), "none", None),
    (HUB, MEMBER, dict(WANT, labels={"env": "prod"}), "relabel", "labels"),
    (HUB, MEMBER, dict(WANT, labels={}, labels_mode="replace"), "relabel", "labels"),
    (HUB, MEMBER, dict(WANT, labels={"env": "dev"}, labels_mode="replace"), "none", None),
    # a credential rotation: asked for, or the credential is older than the max age (its Secret's creation time)
    (HUB, MEMBER, dict(WANT, rotate=True), "rotate", "asked for"),
    (HUB, dict(MEMBER, credential_age_seconds=7200), dict(WANT, credential_max_age=3600), "rotate", "more than the credential max age"),
    (HUB, dict(MEMBER, credential_age_seconds=60), dict(WANT, credential_max_age=3600), "none", None),
    (HUB, dict(MEMBER, credential_accepted=False), dict(WANT, rotate=True), "reregister", "rejects the agent's credential"),
    # the most urgent action wins, every reason is kept
    (HUB, dict(MEMBER, release=None, credential=False), dict(WANT, labels={"env": "prod"}), "reregister", "labels"),
])
def test_decide(hub, member, want, action, reason):
    state = MANAGER.decide("edge-1", hub, member, want)
    assert state.action == action and state.action in ACTIONS
    assert state.healthy == (action in ("none", "relabel", "rotate"))
    if reason is None:
        assert state.reasons == []
    else:
        assert any(reason in r for r in state.reasons), state.reasons
    assert state.as_dict()["manager"] == "rancher_fleet"


SECRET_TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LWFnZW50LXRva2Vu.s1gnature"


def _secret_bearing_facts():
    """What read_member returns for a joined member: the release's values, the credential's kubeconfig and the bootstrap
    Secret all hold SECRET_TOKEN."""
    kubeconfig = yaml.safe_dump({"clusters": [{"name": "hub", "cluster": {"server": "https://hub.example:6443"}}],
                                 "users": [{"name": "agent", "user": {"token": SECRET_TOKEN}}],
                                 "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "agent"}}],
                                 "current-context": "hub"})
    release = {"name": "fleet-agent", "namespace": "cattle-fleet-system", "revision": 1, "status": "deployed", "chart": "fleet-agent",
               "chart_version": "0.16.0", "values": {"token": SECRET_TOKEN, "apiServerURL": "https://hub.example:6443"}}
    return {"namespace": {"metadata": {"name": "cattle-fleet-system"}}, "releases": {"fleet-agent": release}, "release": release,
            "adopted": [], "credential": {"data": {AGENT_CREDENTIAL_KEY: _b64(kubeconfig)}},
            "bootstrap": {"data": {"token": _b64(SECRET_TOKEN)}}, "deployment": {"status": {"availableReplicas": 1}}}


def _b64(text):
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("check", [{"accepted": True, "user": "system:serviceaccount:x:y", "error": None},
                                   {"accepted": False, "user": None, "error": "Unauthorized"}])
def test_decide_is_pure_and_never_leaks_the_secrets_the_member_holds(check):
    facts = _secret_bearing_facts()
    view = member_side.member_view(facts, check)
    assert view["credential_usable"] and view["credential_server"] == "https://hub.example:6443"  # the secret was read
    before = copy.deepcopy(view)
    state = MANAGER.decide("edge-1", HUB, view, WANT)
    assert view == before
    shown = json.dumps(state.as_dict())
    for secret in (SECRET_TOKEN, _b64(SECRET_TOKEN), facts["credential"]["data"][AGENT_CREDENTIAL_KEY]):
        assert secret not in shown
    assert state.action == ("none" if check["accepted"] else "reregister")


# -- the agent's credential is evidence: checked only at the hub the collection gives the agent ----------------------

CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def _config_map(config):
    return {"data": {"config": json.dumps(config)}}


def test_fleet_config_endpoint_reads_fleets_own_api_server_url_and_ca():
    key = "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n"
    config = _config_map({"apiServerURL": "https://hub:6443", "apiServerCA": _b64(key + CA_PEM)})
    assert member_side.fleet_config_endpoint(config) == ("https://hub:6443", CA_PEM)
    assert member_side.fleet_config_endpoint(_config_map({"apiServerURL": "", "apiServerCA": ""})) == (None, None)
    for broken in (None, {}, {"data": {"config": "not json"}}, {"data": {"config": "[]"}}, _config_map({"apiServerCA": "//4="})):
        assert member_side.fleet_config_endpoint(broken) == (None, None)


def test_the_credential_secret_gives_its_server_and_token_never_a_ca_or_a_file_to_read():
    kubeconfig = {"clusters": [{"name": "h", "cluster": {"server": "https://elsewhere:443", "certificate-authority": "/etc/shadow"}}],
                  "users": [{"name": "a", "user": {"token": "t0k"}}], "contexts": [{"name": "h", "context": {"cluster": "h", "user": "a"}}],
                  "current-context": "h"}
    secret = {"data": {AGENT_CREDENTIAL_KEY: _b64(yaml.safe_dump(kubeconfig))}}
    assert member_side.credential_endpoint(secret) == ("https://elsewhere:443", "t0k")
    assert member_side.credential_endpoint({"data": {AGENT_CREDENTIAL_KEY: _b64("- not a kubeconfig")}}) is None


class _Hub:
    def __init__(self, config_map):
        self.config_map = config_map

    def get(self, _resource, _name, _namespace=None):
        return self.config_map


def test_the_expected_hub_comes_from_the_options_then_fleets_configuration_then_the_hub_connection(tmp_path):
    fleet = _Hub(_config_map({"apiServerURL": "https://fleet-config:6443/", "apiServerCA": _b64(CA_PEM)}))
    assert member_side.expected_endpoint({}, fleet) == (("https://fleet-config:6443", CA_PEM), None)
    other = CA_PEM.replace("fake", "file")
    path = tmp_path / "ca.pem"
    path.write_text(other)
    assert member_side.expected_endpoint({"hub_api_server_url": "https://given:6443", "hub_api_server_ca": str(path)}, fleet) == (
        ("https://given:6443", other), None)
    # hub_ca_cert is the hub connection's CA: after Fleet's, as fleet_agent gives the agent the token's CA before it
    assert member_side.expected_endpoint({"hub_ca_cert": str(path)}, fleet) == (("https://fleet-config:6443", CA_PEM), None)
    kubeconfig = {"current-context": "hub", "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "u"}}],
                  "clusters": [{"name": "hub", "cluster": {"server": "https://connection:6443",
                                                           "certificate-authority-data": _b64(CA_PEM)}}],
                  "users": [{"name": "u", "user": {}}]}
    assert member_side.expected_endpoint({"hub_kubeconfig": kubeconfig}, _Hub(None)) == (("https://connection:6443", CA_PEM), None)
    endpoint, why = member_side.expected_endpoint({}, None)
    assert endpoint is None and "not known" in why and "not checked" in why


def test_a_credential_naming_another_hub_is_re_registered_and_not_checked():
    view = member_side.member_view(_secret_bearing_facts(), None, "https://hub.collection:6443")
    assert view["credential_accepted"] is None and view["expected_server"] == "https://hub.collection:6443"
    state = MANAGER.decide("edge-1", HUB, view, WANT)
    assert state.action == "reregister"
    assert "names the hub https://hub.example:6443, not https://hub.collection:6443" in " ".join(state.reasons), state.reasons
    same = member_side.member_view(_secret_bearing_facts(), {"accepted": True, "user": "u", "error": None}, "https://hub.example:6443")
    assert MANAGER.decide("edge-1", HUB, same, WANT).action == "none"
    assert member_side.same_server("https://hub:6443/", "https://hub:6443") and not member_side.same_server(None, "https://hub:6443")
