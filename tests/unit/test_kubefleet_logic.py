# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic of the KubeFleet modules: names, validation, MemberCluster changes, status, chart values."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json
import os

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import parsing
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import hub_access, resources, rules, views
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

UTC = datetime.timezone.utc
PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


# -- names and validation ------------------------------------------------------

@pytest.mark.parametrize("name", ["a", "east-1", "x" * 50])
def test_member_names_the_hub_can_use(name):
    assert resources.validate_member_name(name) == name


@pytest.mark.parametrize("name,fragment", [
    ("x" * 51, "at most 50"),
    ("East-1", "not a valid member cluster name"),
    ("-east", "not a valid member cluster name"),
    ("east_1", "not a valid member cluster name"),
    ("", "required"),
])
def test_member_names_rejected_with_the_reason(name, fragment):
    with pytest.raises(ParameterError) as err:
        resources.validate_member_name(name)
    assert fragment in err.value.msg
    assert err.value.param == "name"


def test_member_name_limit_leaves_room_for_the_hub_namespace():
    assert len(resources.member_namespace("x" * resources.MAX_MEMBER_NAME)) == 63


def test_default_names_follow_kubefleet_docs():
    assert resources.default_service_account("east-1") == "east-1-hub-cluster-access"
    assert resources.default_token_secret("east-1-hub-cluster-access") == "east-1-hub-cluster-access-token"
    assert resources.member_namespace("east-1") == "fleet-member-east-1"


@pytest.mark.parametrize("value", [1, 60, 600])
def test_heartbeat_in_range(value):
    assert resources.validate_heartbeat(value) == value


@pytest.mark.parametrize("value", [0, 601, -5, True, "60", None])
def test_heartbeat_out_of_range_names_the_parameter_and_the_limits(value):
    with pytest.raises(ParameterError) as err:
        resources.validate_heartbeat(value)
    assert err.value.param == "heartbeat_period_seconds"
    assert "1 to 600" in err.value.message()


# -- identity ---------------------------------------------------------------------

def test_service_account_subject_matches_the_docs():
    assert rules.identity_subject("ServiceAccount", "m-hub-cluster-access", "fleet-system") == {
        "kind": "ServiceAccount", "name": "m-hub-cluster-access", "namespace": "fleet-system", "apiGroup": ""}


def test_user_subject_has_no_namespace():
    assert rules.identity_subject("User", "alice") == {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}


def test_unknown_identity_kind_rejected():
    with pytest.raises(ParameterError):
        rules.identity_subject("Robot", "r2")


def test_same_identity_ignores_an_omitted_default_api_group():
    desired = rules.identity_subject("ServiceAccount", "sa", "fleet-system")
    assert rules.same_identity({"kind": "ServiceAccount", "name": "sa", "namespace": "fleet-system"}, desired)
    assert not rules.same_identity({"kind": "ServiceAccount", "name": "other", "namespace": "fleet-system"}, desired)
    assert not rules.same_identity(None, desired)


def test_secret_token_decodes_only_a_filled_token():
    assert rules.secret_token(None) is None
    assert rules.secret_token({"data": {}}) is None
    assert rules.secret_token({"data": {"token": base64.b64encode(b"abc.def").decode()}}) == "abc.def"


def test_token_secret_problem_detects_foreign_secrets():
    good = rules.desired_token_secret("s", "fleet-system", "sa")
    assert rules.token_secret_problem(good, "sa") is None
    assert "ServiceAccount 'sa', not 'other'" in rules.token_secret_problem(good, "other")
    opaque = dict(good, type="Opaque")
    assert "type Opaque" in rules.token_secret_problem(opaque, "sa")


def test_desired_token_secret_is_a_service_account_token():
    secret = rules.desired_token_secret("s", "fleet-system", "sa")
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "sa"}
    assert "data" not in secret


# -- MemberCluster ------------------------------------------------------------------

IDENTITY = {"kind": "ServiceAccount", "name": "m-hub-cluster-access", "namespace": "fleet-system", "apiGroup": ""}


def live(labels=None, heartbeat=60, taints=None, identity=None):
    spec = {"identity": dict(identity or IDENTITY), "heartbeatPeriodSeconds": heartbeat}
    if taints is not None:
        spec["taints"] = taints
    return {"metadata": {"name": "m", "labels": labels or {}}, "spec": spec}


def test_create_body_when_missing():
    body, patch = rules.member_cluster_changes(None, "m", IDENTITY, 30, [{"key": "k", "effect": "NoSchedule"}], {"env": "prod"})
    assert patch is None
    assert body == {"metadata": {"name": "m", "labels": {"env": "prod"}},
                    "spec": {"identity": IDENTITY, "heartbeatPeriodSeconds": 30, "taints": [{"key": "k", "effect": "NoSchedule"}]}}


def test_no_change_when_matching_even_without_api_group():
    current = live(labels={"env": "prod"})
    del current["spec"]["identity"]["apiGroup"]
    assert rules.member_cluster_changes(current, "m", IDENTITY, 60, None, {"env": "prod"}) == (None, None)


def test_heartbeat_and_identity_patched():
    _body, patch = rules.member_cluster_changes(live(heartbeat=60), "m", dict(IDENTITY, name="new"), 15)
    assert patch == {"spec": {"identity": dict(IDENTITY, name="new"), "heartbeatPeriodSeconds": 15}}


def test_labels_merge_adds_and_keeps():
    _body, patch = rules.member_cluster_changes(live(labels={"a": "1"}), "m", IDENTITY, 60, None, {"b": "2"}, "merge")
    assert patch == {"metadata": {"labels": {"b": "2"}}}


def test_labels_replace_removes_others_but_keeps_hub_tooling_labels():
    current = live(labels={"a": "1", "b": "2", "fleet.azure.com/location": "eastus"})
    _body, patch = rules.member_cluster_changes(current, "m", IDENTITY, 60, None, {"b": "3"}, "replace")
    assert patch == {"metadata": {"labels": {"a": None, "b": "3"}}}


def test_labels_none_leaves_labels_alone():
    assert rules.member_cluster_changes(live(labels={"a": "1"}), "m", IDENTITY, 60, None, None) == (None, None)


def test_taints_replaced_and_cleared():
    current = live(taints=[{"key": "k", "value": "", "effect": "NoSchedule"}])
    assert rules.member_cluster_changes(current, "m", IDENTITY, 60, [{"key": "k", "effect": "NoSchedule"}]) == (None, None)
    _b, patch = rules.member_cluster_changes(current, "m", IDENTITY, 60, [])
    assert patch == {"spec": {"taints": None}}
    _b, patch = rules.member_cluster_changes(current, "m", IDENTITY, 60, [{"key": "k", "value": "v", "effect": "NoSchedule"}])
    assert patch == {"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}


def test_normalize_taints():
    assert rules.normalize_taints(None) is None
    assert rules.normalize_taints([{"key": "k", "value": None, "effect": None}]) == [{"key": "k", "effect": "NoSchedule"}]
    assert rules.normalize_taints([{"key": "k", "value": True}]) == [{"key": "k", "value": "True", "effect": "NoSchedule"}]


@pytest.mark.parametrize("taints,fragment", [
    ([{"key": "k", "effect": "NoExecute"}], "only NoSchedule"),
    ([{"value": "v"}], "needs a key"),
    ([{"key": "bad key!"}], "invalid taint key"),
    ([{"key": "k"}, {"key": "k"}], "listed twice"),
    ("k=v", "expected a list"),
])
def test_normalize_taints_rejects(taints, fragment):
    with pytest.raises(ParameterError) as err:
        rules.normalize_taints(taints)
    assert fragment in err.value.message()


def test_for_diff_drops_status_and_noise():
    obj = {"metadata": {"name": "m", "resourceVersion": "5", "managedFields": []}, "spec": {}, "status": {"conditions": []}}
    assert rules.for_diff(obj) == {"metadata": {"name": "m"}, "spec": {}}


# -- status ------------------------------------------------------------------------

NOW = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("text,expected", [
    ("2026-11-21T09:59:48Z", datetime.datetime(2026, 11, 21, 9, 59, 48, tzinfo=UTC)),
    ("2026-11-21T09:59:48.123456789Z", datetime.datetime(2026, 11, 21, 9, 59, 48, 123456, tzinfo=UTC)),
    ("2026-11-21T11:59:48+02:00", datetime.datetime(2026, 11, 21, 9, 59, 48, tzinfo=UTC)),
    ("", None),
    (None, None),
    ("yesterday", None),
])
def test_parse_time(text, expected):
    assert parse_time(text) == expected


def test_heartbeat_age():
    assert views.heartbeat_age("2026-11-21T09:59:48Z", NOW) == 12
    assert views.heartbeat_age(None, NOW) is None
    assert views.heartbeat_age("2026-11-21T10:00:05Z", NOW) == 0


def member_object(joined="True", heartbeat="2026-11-21T09:59:30Z", healthy_on_mc=None):
    conditions = [
        {"type": "ReadyToJoin", "status": "True", "reason": "MemberClusterReadyToJoin", "lastTransitionTime": "2026-11-21T09:00:00Z"},
        {"type": "Joined", "status": joined, "reason": "MemberClusterJoined", "observedGeneration": 2},
    ]
    if healthy_on_mc:
        conditions.append({"type": "Healthy", "status": healthy_on_mc})
    return {
        "metadata": {"name": "east-1", "labels": {"env": "prod"}, "finalizers": [resources.MEMBER_CLUSTER_FINALIZER],
                     "creationTimestamp": "2026-11-21T09:00:00Z"},
        "spec": {"identity": IDENTITY, "heartbeatPeriodSeconds": 15},
        "status": {
            "conditions": conditions,
            "resourceUsage": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "7800m"}, "observationTime": "2026-11-21T09:59:30Z"},
            "agentStatus": [{
                "type": "MemberAgent", "lastReceivedHeartbeat": heartbeat,
                "conditions": [{"type": "Joined", "status": "True"}, {"type": "Healthy", "status": "False", "message": "boom"}],
            }],
        },
    }


def test_describe_member():
    member = views.describe_member(member_object(), NOW)
    assert member["name"] == "east-1"
    assert member["namespace"] == "fleet-member-east-1"
    assert (member["ready_to_join"], member["joined"]) == (True, True)
    assert member["healthy"] is False  # from the member agent: the hub does not aggregate Healthy in v0.14
    assert member["leaving"] is False
    assert member["heartbeat_period_seconds"] == 15
    assert member["resource_usage"]["capacity"] == {"cpu": "8"}
    assert member["resource_usage"]["available"] == {}
    agent = member["agents"][0]
    assert agent["type"] == "MemberAgent"
    assert agent["heartbeat_age_seconds"] == 30
    assert agent["healthy"] is False
    assert agent["conditions"][1]["message"] == "boom"
    assert member["conditions"][1]["observed_generation"] == 2


def test_describe_member_prefers_the_hub_healthy_condition_and_reports_unknown_as_none():
    member = views.describe_member(member_object(joined="Unknown", healthy_on_mc="True"), NOW)
    assert member["healthy"] is True
    assert member["joined"] is None


def test_describe_member_without_status():
    member = views.describe_member({"metadata": {"name": "new", "deletionTimestamp": "2026-11-21T09:00:00Z"}, "spec": {}}, NOW)
    assert member["joined"] is None and member["ready_to_join"] is None and member["agents"] == []
    assert member["leaving"] is True


def test_joined_needs_a_heartbeat():
    assert views.joined_with_heartbeat(member_object())
    assert not views.joined_with_heartbeat(member_object(heartbeat=None))
    assert not views.joined_with_heartbeat(member_object(joined="False"))
    assert not views.joined_with_heartbeat(None)


def test_joined_since_needs_a_newer_heartbeat_after_a_change():
    member = member_object(heartbeat="2026-11-21T09:59:30Z")
    assert views.joined_since(member, None)
    assert not views.joined_since(member, "2026-11-21T09:59:30Z")
    assert views.joined_since(member, "2026-11-21T09:59:29Z")
    assert not views.joined_since(member_object(joined="False"), "2026-11-21T09:00:00Z")


def test_label_selector():
    assert views.label_selector({"b": "2", "a": True}) == "a=true,b=2"
    assert views.label_selector({"a": "1"}, "env in (prod)") == "a=1,env in (prod)"
    assert views.label_selector(None, None) is None
    with pytest.raises(ParameterError):
        views.label_selector({"bad key!": "x"})


# -- member agent ----------------------------------------------------------------

def test_agent_values_carry_hub_facts_and_leave_the_images_to_the_chart():
    values = rules.agent_values("east-1", "https://hub:6443", PEM, log_verbosity=3)
    assert values["config"] == {"provider": "secret", "hubURL": "https://hub:6443", "memberClusterName": "east-1",
                                "hubCA": base64.b64encode(PEM.encode()).decode()}
    assert values["secret"] == {"name": "hub-kubeconfig-secret", "namespace": "fleet-hub-credentials"}
    assert values["namespace"] == "fleet-system"
    # Nothing set, nothing overridden: the chart's images (a KubeFleet release's chart runs that release's agent)
    assert "image" not in values and "refreshtoken" not in values
    assert values["tlsClientInsecure"] is False
    assert values["enableV1Beta1APIs"] is True and values["enableV1Alpha1APIs"] is False
    assert values["logVerbosity"] == 3
    assert "token" not in _all_keys(values)  # the token travels only in the Secret


def _all_keys(data):
    keys = set()
    for key, value in data.items():
        keys.add(key)
        if isinstance(value, dict):
            keys |= _all_keys(value)
    return keys


def test_agent_values_overrides_for_air_gapped_sites():
    values = rules.agent_values("m", "https://hub", PEM, image_repository="reg.local/ma", image_tag="v9",
                                refresh_token_repository="reg.local/rt", pull_policy="Never")
    assert values["image"] == {"repository": "reg.local/ma", "tag": "v9", "pullPolicy": "Never"}
    assert values["refreshtoken"] == {"repository": "reg.local/rt", "tag": "v9", "pullPolicy": "Never"}


def test_agent_values_override_only_what_is_set():
    tag_only = rules.agent_values("m", "https://hub", PEM, image_tag="v0.14.0", image_repository="")
    assert tag_only["image"] == {"tag": "v0.14.0"} and tag_only["refreshtoken"] == {"tag": "v0.14.0"}
    mirror = rules.agent_values("m", "https://hub", PEM, image_repository="reg.local/ma")
    assert mirror["image"] == {"repository": "reg.local/ma"} and "refreshtoken" not in mirror
    # the chart's own values under extra are kept where no option is set
    chart_like = rules.agent_values("m", "https://hub", PEM, image_tag="v2", extra={"image": {"repository": "x/ma"}})
    assert chart_like["image"] == {"repository": "x/ma", "tag": "v2"}


def test_agent_values_extra_values_merge_under_the_options():
    extra = {"resources": {"limits": {"cpu": "1"}}, "config": {"hubURL": "https://wrong", "region": "x"}}
    values = rules.agent_values("m", "https://hub", PEM, extra=extra)
    assert values["resources"] == {"limits": {"cpu": "1"}}
    assert values["config"]["hubURL"] == "https://hub"
    assert values["config"]["region"] == "x"
    assert extra["config"]["hubURL"] == "https://wrong"  # caller's dict untouched


def test_agent_values_insecure_has_no_ca():
    values = rules.agent_values("m", "https://hub", None, insecure=True)
    assert values["tlsClientInsecure"] is True
    assert "hubCA" not in values["config"]


def test_chart_fullname_follows_the_chart_helper():
    assert resources.chart_fullname("member-agent") == "member-agent"
    assert resources.chart_fullname("fleet") == "fleet-member-agent"


def test_the_member_agent_release_decision_is_the_core_release_plan():
    """What kubefleet_member_agent asks of helm.ReleasePlan (formerly release_needs_upgrade)."""
    release = {"status": "deployed", "chart": "member-agent", "chart_version": "0.1.0", "values": {"a": 1}}
    values = {"a": 1}
    assert ReleasePlan.decide(release, "member-agent", "0.1.0", values).action == "none"
    assert ReleasePlan.decide(None, "member-agent", "0.1.0", values).action == "install"
    assert ReleasePlan.decide(dict(release, status="failed"), "member-agent", "0.1.0", values).action != "none"
    assert ReleasePlan.decide(release, "member-agent", "0.2.0", values).action == "upgrade"
    other = ReleasePlan.decide(dict(release, values={"a": 2}), "member-agent", "0.1.0", values)
    assert other.action == "upgrade" and "2" not in " ".join(other.reasons)


def test_an_installed_release_whose_agent_deployment_was_deleted_is_upgraded_so_helm_makes_it_again():
    release = {"status": "deployed", "chart": "member-agent", "chart_version": "0.1.0", "values": {"a": 1}}
    gone = rules.release_plan(release, "member-agent", "0.1.0", {"a": 1}, "fleet-system/member-agent")
    assert gone.action == "upgrade" and gone.reasons == ["the agent Deployment fleet-system/member-agent is missing"]
    assert rules.release_plan(release, "member-agent", "0.1.0", {"a": 1}, None).action == "none"
    assert rules.release_plan(None, "member-agent", "0.1.0", {"a": 1}, "fleet-system/member-agent").action == "install"
    newer = rules.release_plan(release, "member-agent", "0.2.0", {"a": 1}, "fleet-system/member-agent")
    assert newer.action == "upgrade" and len(newer.reasons) == 2


SECRET = rules.desired_hub_secret("hub-kubeconfig-secret", "default", "tok")
NO_RELEASE_CHANGE = ReleasePlan("none", [])
UPGRADE = ReleasePlan("upgrade", ["values differ"])


def _live_secret(token="tok", **metadata):
    secret = rules.desired_hub_secret("hub-kubeconfig-secret", "default", token)
    secret["metadata"].update(metadata, resourceVersion="7")
    return secret


@pytest.mark.parametrize("live,desired,release,action,restart,token_changed,changed", [
    (None, SECRET, NO_RELEASE_CHANGE, "create", True, False, True),       # the running agent holds the token it read
    (None, SECRET, UPGRADE, "create", False, False, True),
    (_live_secret(), SECRET, NO_RELEASE_CHANGE, "none", False, False, False),
    (_live_secret("old"), SECRET, NO_RELEASE_CHANGE, "update", True, True, True),
    (_live_secret("old"), SECRET, UPGRADE, "update", False, True, True),   # Helm's rollout restarts the agent
    (_live_secret(), SECRET, UPGRADE, "none", False, False, True),
    (None, None, UPGRADE, "predict", False, False, True),                 # check mode before the identity exists
    (_live_secret("old"), None, NO_RELEASE_CHANGE, "predict", False, True, True),
])
def test_plan_agent(live, desired, release, action, restart, token_changed, changed):
    plan = rules.plan_agent(live, desired, release)
    assert plan.secret_action == action
    assert plan.restart is restart
    assert plan.token_changed is token_changed
    assert plan.changed is changed
    assert bool(plan.reasons) is changed
    assert all("tok" not in reason.replace("token", "") for reason in plan.reasons)


def test_plan_agent_says_why():
    plan = rules.plan_agent(_live_secret("old"), SECRET, UPGRADE)
    assert plan.reasons == ["the token Secret hub-kubeconfig-secret holds another token than the hub identity's",
                            "values differ"]
    assert plan.secret_patch == {"data": {"token": SECRET["data"]["token"]}}


def test_agent_hub_endpoint_reads_the_values_it_wrote():
    values = rules.agent_values("east-1", "https://hub:6443", PEM)
    assert rules.agent_hub_endpoint(values) == ("https://hub:6443", PEM, False, "east-1")
    assert rules.agent_hub_endpoint({}) == (None, None, False, None)


def test_identity_username():
    assert rules.identity_username(rules.identity_subject("ServiceAccount", "sa", "fleet-system")) == \
        "system:serviceaccount:fleet-system:sa"
    assert rules.identity_username({"kind": "User", "name": "alice"}) == "alice"
    assert rules.identity_username({"kind": "Group", "name": "g"}) is None


def test_release_view():
    assert rules.release_view(None, {"a": 1}) == {}
    assert rules.release_view({"chart": "c", "chart_version": "1", "status": "deployed", "revision": 3}, {"a": 1}) == {
        "chart": "c", "chart_version": "1", "status": "deployed", "values": {"a": 1}}


def test_hub_secret_holds_the_token_base64():
    secret = rules.desired_hub_secret("hub-kubeconfig-secret", "default", "tok")
    assert secret["data"] == {"token": base64.b64encode(b"tok").decode()}
    assert secret["type"] == "Opaque"


def _kubeconfig(cluster):
    return {"current-context": "hub", "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "u"}}],
            "clusters": [{"name": "hub", "cluster": dict(cluster, server="https://127.0.0.1:6443")}], "users": [{"name": "u", "user": {}}]}


def _Params(**params):  # pylint: disable=invalid-name
    """A task's options as hub_access.agent_endpoint reads them."""
    return dict({"hub_api_server_url": None, "hub_api_server_ca": None, "hub_insecure_skip_tls_verify": False}, **params)


def _url_and_ca(params):
    return hub_access.agent_endpoint(params)[:2]


def test_hub_ca_from_inline_kubeconfig_data():
    config = _kubeconfig({"certificate-authority-data": base64.b64encode(PEM.encode()).decode()})
    assert _url_and_ca(_Params(hub_kubeconfig=config)) == ("https://127.0.0.1:6443", PEM)


def test_hub_ca_from_a_file_named_by_the_kubeconfig_relative_to_it(tmp_path):
    (tmp_path / "ca.crt").write_text(PEM)
    (tmp_path / "hub.yaml").write_text(json.dumps(_kubeconfig({"certificate-authority": "ca.crt"})))
    assert _url_and_ca(_Params(hub_kubeconfig=str(tmp_path / "hub.yaml")))[1] == PEM


def test_hub_ca_precedence_explicit_then_file_then_kubeconfig(tmp_path):
    other = PEM.replace("fake", "file")
    path = tmp_path / "hub.pem"
    path.write_text(other)
    config = _kubeconfig({"certificate-authority-data": base64.b64encode(PEM.encode()).decode()})
    both = dict(hub_kubeconfig=config, hub_ca_cert=str(path))
    assert _url_and_ca(_Params(hub_api_server_ca="# the hub CA\n" + PEM, **both))[1] == PEM
    assert _url_and_ca(_Params(**both))[1] == other
    assert _url_and_ca(_Params(hub_api_server_url="https://hub:6443", hub_ca_cert=str(path))) == ("https://hub:6443", other)
    assert _url_and_ca(_Params(hub_api_server_url="https://hub:6443/", hub_insecure_skip_tls_verify=True)) == ("https://hub:6443", None)


def test_hub_url_and_ca_name_the_missing_option():
    with pytest.raises(ParameterError) as err:
        _url_and_ca(_Params())
    assert err.value.param == "hub_api_server_url"
    with pytest.raises(ParameterError) as err:
        _url_and_ca(_Params(hub_api_server_url="http://hub"))
    assert err.value.param == "hub_api_server_url"
    with pytest.raises(ParameterError) as err:
        _url_and_ca(_Params(hub_api_server_url="https://hub"))
    assert err.value.param == "hub_api_server_ca"


KEY = "-----BEGIN PRIVATE KEY-----\nMIIEsecretkey\n-----END PRIVATE KEY-----\n"


def test_a_hub_ca_bundle_passes_on_only_its_certificates_never_a_private_key(tmp_path):
    """hub_ca_pem given whole once shipped a bundle's private key into the agent's values; now every CA option, inline
    or a file, keeps only the CERTIFICATE blocks (kubeconfig.pem_certificates)."""
    other = PEM.replace("fake", "second")
    bundle = KEY + PEM + "-----BEGIN EC PRIVATE KEY-----\nMHcsecret\n-----END EC PRIVATE KEY-----\n" + other
    assert rules.explicit_hub_ca(bundle) == PEM + other
    url, ca = _url_and_ca(_Params(hub_api_server_url="https://hub:6443", hub_api_server_ca=bundle))
    assert ca == PEM + other and "secret" not in ca
    values = rules.agent_values("east-1", url, ca)
    assert "secret" not in base64.b64decode(values["config"]["hubCA"]).decode()
    path = tmp_path / "bundle.pem"
    path.write_text(bundle)
    assert _url_and_ca(_Params(hub_api_server_url="https://hub:6443", hub_ca_cert=str(path)))[1] == PEM + other
    with pytest.raises(ParameterError) as err:
        rules.explicit_hub_ca(KEY)
    assert err.value.param == "hub_ca_pem"


def test_hub_ca_rejects_non_pem(tmp_path):
    with pytest.raises(ParameterError) as err:
        rules.explicit_hub_ca("not a cert")
    assert err.value.param == "hub_ca_pem"
    path = tmp_path / "x"
    path.write_text("nope")
    with pytest.raises(ParameterError):
        _url_and_ca(_Params(hub_api_server_url="https://hub", hub_ca_cert=str(path)))
    with pytest.raises(ParameterError):
        _url_and_ca(_Params(hub_api_server_url="https://hub", hub_ca_cert=os.path.join(str(tmp_path), "missing.pem")))


def test_deep_merge_does_not_alias():
    base = {"a": {"b": [1]}}
    merged = parsing.deep_merge(base, {"a": {"c": 2}})
    merged["a"]["b"].append(2)
    assert base == {"a": {"b": [1]}}
    assert merged == {"a": {"b": [1, 2], "c": 2}}


def test_plan_agent_creates_missing_namespaces_and_says_so():
    plan = rules.plan_agent(_live_secret(), SECRET, NO_RELEASE_CHANGE, missing_namespaces=["agent-records", "fleet-hub-credentials"])
    assert plan.changed and plan.create_namespaces == ("agent-records", "fleet-hub-credentials")
    assert plan.reasons == ["the namespace agent-records does not exist on the member",
                            "the namespace fleet-hub-credentials does not exist on the member"]
    assert rules.plan_agent(_live_secret(), SECRET, NO_RELEASE_CHANGE).create_namespaces == ()


def test_a_token_the_release_reads_elsewhere_is_removed_only_after_helm_moved_the_agent():
    moved = (("default", "hub-kubeconfig-secret"), ("fleet-hub-credentials", "hub-kubeconfig-secret"))
    upgrade = UPGRADE
    plan = rules.plan_agent(None, SECRET, upgrade, ["fleet-hub-credentials"], moved)
    assert plan.stale_secret == ("default", "hub-kubeconfig-secret") and plan.secret_action == "create"
    assert "the member agent reads its token from default/hub-kubeconfig-secret, which moves to " \
        "fleet-hub-credentials/hub-kubeconfig-secret" in plan.reasons
    # Helm leaves the release alone (it would keep reading the old Secret): the old one stays.
    assert rules.plan_agent(None, SECRET, NO_RELEASE_CHANGE, (), moved).stale_secret is None
    assert rules.plan_agent(None, SECRET, upgrade).stale_secret is None


def test_token_location_is_read_from_the_release_values():
    assert rules.token_location({"secret": {"name": "s", "namespace": "n"}}) == ("n", "s")
    assert rules.token_location({"secret": {"name": "s"}}) is None and rules.token_location(None) is None


def test_namespaces_the_collection_makes_are_recognised_by_their_label():
    made = rules.desired_namespace("agent-records")
    assert rules.made_by_collection(made)
    assert not rules.made_by_collection({"metadata": {"name": "default"}})
    assert not rules.made_by_collection(None)


# -- the agent's configuration: member state is evidence, the options are the measure -------------------------------

def test_agent_configuration_reads_what_a_release_says_without_following_it():
    values = rules.agent_values("east-1", "https://hub:6443/", PEM, secret_name="s", secret_namespace="n")
    assert rules.agent_configuration(values) == {
        "hub_url": "https://hub:6443", "hub_ca_sha256": rules.hub_ca_digest(PEM), "hub_ca_extra": False, "insecure": False,
        "token_secret": "n/s", "member_name": "east-1"}
    forged = {"config": {"hubURL": "https://127.0.0.1:9", "hubCA": "%%%"}, "tlsClientInsecure": True,
              "secret": {"name": "admin-token", "namespace": "kube-system"}}
    seen = rules.agent_configuration(forged)
    assert (seen["hub_ca_sha256"], seen["insecure"], seen["token_secret"]) == (None, True, "kube-system/admin-token")
    assert rules.agent_configuration({"config": {"hubCA": "//4="}})["hub_ca_sha256"] == "unreadable"  # not UTF-8
    with_key = rules.agent_values("east-1", "https://hub:6443", KEY + PEM)
    assert rules.agent_configuration(with_key)["hub_ca_extra"] is True
    assert rules.agent_configuration({"config": "junk", "secret": []}) == {
        "hub_url": None, "hub_ca_sha256": None, "hub_ca_extra": False, "insecure": False, "token_secret": None, "member_name": None}


def test_what_the_collection_configures_is_compared_with_the_release_not_taken_from_it():
    wanted = rules.wanted_configuration(("https://hub:6443", PEM, False), "fleet-hub-credentials", "hub-kubeconfig-secret", "east-1")
    same = rules.agent_configuration(rules.agent_values("east-1", "https://hub:6443", PEM))
    assert rules.configuration_drift(same, wanted) == []
    forged = dict(same, hub_url="https://127.0.0.1:9", insecure=True, token_secret="kube-system/admin-token", member_name="x")
    assert rules.configuration_drift(forged, wanted) == [
        "the member agent uses hub URL https://127.0.0.1:9, not https://hub:6443",
        "the member agent does not verify the hub's certificate (tlsClientInsecure), which the options do not ask for",
        "the member agent reads its token from kube-system/admin-token, not fleet-hub-credentials/hub-kubeconfig-secret",
        "the member agent joins as x, not east-1"]
    other_ca = dict(same, hub_ca_sha256=rules.hub_ca_digest(PEM.replace("fake", "other")))
    assert rules.configuration_drift(other_ca, wanted)[0].startswith("the member agent trusts another hub CA")
    insecure_wanted = rules.wanted_configuration(("https://hub:6443", None, True), "fleet-hub-credentials", "hub-kubeconfig-secret", "east-1")
    assert rules.configuration_drift(dict(same, insecure=True), insecure_wanted) == []  # asked for in the options
    assert "asks it not to" in rules.configuration_drift(same, insecure_wanted)[0]
    assert rules.configuration_drift(None, wanted) == [] and rules.configuration_drift(forged, None) == []
    # the digest covers every certificate of a bundle, and nothing else
    assert rules.hub_ca_digest(KEY + PEM) == rules.hub_ca_digest(PEM) != rules.hub_ca_digest(PEM + PEM)
    assert rules.hub_ca_digest(None) is None and rules.hub_ca_digest(KEY) is None


def test_the_endpoint_a_member_is_checked_against_comes_from_the_options_and_the_hub_connection_only(tmp_path):
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import configured_endpoint
    config = _kubeconfig({"certificate-authority-data": base64.b64encode(PEM.encode()).decode()})
    assert configured_endpoint({"hub_kubeconfig": config}) == (("https://127.0.0.1:6443", PEM, False), None)
    other = PEM.replace("fake", "given")
    assert configured_endpoint({"hub_kubeconfig": config, "hub_api_server_url": "https://hub.example:6443/", "hub_api_server_ca": KEY + other}) == (
        ("https://hub.example:6443", other, False), None)
    # verification is off only when the options say so
    assert configured_endpoint({"hub_api_server_url": "https://hub:6443", "hub_insecure_skip_tls_verify": True}) == (
        ("https://hub:6443", None, True), None)
    endpoint, why = configured_endpoint({"name": "east-1"})
    assert endpoint is None and "not known, so its token was not checked" in why and "hub_api_server_url" in why
    endpoint, why = configured_endpoint({"hub_api_server_url": "https://hub:6443"})
    assert endpoint is None and "hub_api_server_ca" in why


def test_spec_drift_compares_the_heartbeat_period_and_the_user_s_taints_leaving_the_quarantine_alone():
    gpu = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    quarantine = dict(rules.QUARANTINE_TAINT)
    hub = {"heartbeat_period_seconds": 60, "taints": [gpu, quarantine]}
    assert rules.spec_drift(hub, 60, [gpu]) == []
    assert rules.spec_drift(hub, None, None) == []
    assert rules.spec_drift({"heartbeat_period_seconds": None, "taints": []}, 60, []) == []  # the API's default period
    assert rules.spec_drift(hub, 30, [gpu]) == ["heartbeatPeriodSeconds is 60, the inventory asks for 30"]
    assert rules.spec_drift(hub, 60, []) == ["taints are gpu=yes:NoSchedule, the inventory asks for none"]


def test_spec_changes_lists_what_a_write_changed():
    gpu = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    before = {"spec": {"heartbeatPeriodSeconds": 60, "taints": [dict(rules.QUARANTINE_TAINT)]}}
    after = {"spec": {"heartbeatPeriodSeconds": 30, "taints": [gpu]}}
    assert rules.spec_changes(before, after) == ["heartbeatPeriodSeconds 60 -> 30", "taints none -> gpu=yes:NoSchedule"]
    assert rules.spec_changes(None, after) == [] and rules.spec_changes(after, after) == []
