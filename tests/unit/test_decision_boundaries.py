"""Limits and orderings of the decision code that the mutation check (make test-mutations) found untested: the exact
length limits Kubernetes and Fleet set, every Go duration unit, RFC 3339 fractions of any length, and version or name
changes in either direction (a downgrade is a change too)."""

import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import labels as lbl
from ansible_collections.fleetops.registration.plugins.module_utils import parsing, times
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import judge as kf_judge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import judge as rf_judge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import rules as fleet_rules
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan


def test_label_limits_are_inclusive():
    assert lbl.label_key_problem("a" * 63) is None
    assert lbl.label_key_problem("a" * 64) is not None
    prefix = ".".join(["a" * 63] * 4)[:253].rstrip(".")
    assert len(prefix) in (252, 253) and lbl.label_key_problem(prefix.ljust(253, "a") + "/k") is None
    assert lbl.label_key_problem("a" * 254 + "/k") is not None
    assert lbl.label_value_problem("v" * 63) is None
    assert lbl.label_value_problem("v" * 64) is not None


def test_dns_name_limits_are_inclusive():
    assert parsing.validate_dns_label("a" * 63, "name") == "a" * 63
    with pytest.raises(ParameterError):
        parsing.validate_dns_label("a" * 64, "name")
    longest = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(longest) == 253 and parsing.validate_dns_subdomain(longest, "namespace") == longest
    with pytest.raises(ParameterError):
        parsing.validate_dns_subdomain(longest + "d", "namespace")


def test_ttl_length_limit_is_inclusive():
    fits = "1h" + "0m" * 15  # 32 characters, as Fleet's CRD allows
    assert len(fits) == 32 and fleet_rules.validate_ttl(fits) == fits
    with pytest.raises(ParameterError, match="32 characters"):
        fleet_rules.validate_ttl(fits + "0s")


@pytest.mark.parametrize("text, seconds", [
    ("1500000000ns", 1.5), ("2500000us", 2.5), ("2500000\u00b5s", 2.5), ("1500ms", 1.5), ("+90s", 90.0), ("-1m", -60.0),
])
def test_every_duration_unit_and_sign(text, seconds):
    assert times.parse_duration(text, "ttl") == pytest.approx(seconds)


@pytest.mark.parametrize("text, micro", [
    ("2026-01-02T03:04:05.5Z", 500000), ("2026-01-02T03:04:05.123456789Z", 123456), ("2026-01-02T03:04:05.1234567Z", 123456),
])
def test_fractions_of_any_length(text, micro):
    assert times.parse_time(text) == datetime.datetime(2026, 1, 2, 3, 4, 5, micro, tzinfo=datetime.timezone.utc)


def test_release_changes_in_either_direction():
    live = {"status": "deployed", "chart": "fleet-agent", "chart_version": "0.16.0", "values": {"a": "1"}}
    assert ReleasePlan.decide(live, "fleet-agent", "0.16.0", {"a": "1"}).action == ReleasePlan.NONE
    assert ReleasePlan.decide(live, "fleet-agent", "0.15.0", {"a": "1"}).reasons == ["chart version 0.16.0 -> 0.15.0"]
    assert ReleasePlan.decide(live, "aaa-agent", "0.16.0", {"a": "1"}).reasons == ["the release runs chart fleet-agent, not aaa-agent"]
    # Helm's 'uninstalling' and 'unknown' are not an uninstalled release kept in history: they are upgraded, not installed
    for status in ("uninstalling", "unknown"):
        plan = ReleasePlan.decide(dict(live, status=status), "fleet-agent", "0.16.0", {"a": "1"})
        assert plan.action == ReleasePlan.UPGRADE and plan.reasons == ["the release status is %s, not deployed" % status]


def test_kubefleet_upgrade_and_relabel_in_either_direction():
    member = {"release": {"chart_version": "0.14.0", "values": {}}, "configured": {"hub_url": "https://a:6443"},
              "wanted": {"hub_url": "https://b:6443"}}
    assert evidence(kf_judge, {}, member, {"chart_version": "0.13.0"}, "upgrade") == [
        "the member agent uses hub URL https://a:6443, not https://b:6443", "chart version 0.14.0 -> 0.13.0"]
    assert evidence(kf_judge, {}, dict(member, configured={"hub_url": "https://b:6443"}), {"chart_version": "0.14.0"}, "upgrade") == []
    assert evidence(kf_judge, {"labels": {"env": "prod"}}, {}, {"labels": {"env": "dev"}}, "relabel") == ["labels drift: set env"]
    assert evidence(kf_judge, {"labels": {"env": "dev"}}, {}, {"labels": {}, "labels_mode": "merge"}, "relabel") == []
    assert evidence(kf_judge, {"labels": {"env": "dev"}}, {}, {"labels": {}, "labels_mode": "replace"}, "relabel") == [
        "labels drift: remove env"]


def evidence(table, hub, member, desired, action):
    """The evidence of a rule table's findings with ``action``, in the table's order."""
    return [item["evidence"] for item in table.judge(hub, member, desired) if item["action"] == action]


def _token(name, born, run=None, ttl=None):
    labels = {fleet_rules.MANAGED_BY_LABEL: fleet_rules.MANAGED_BY}
    if run:
        labels[fleet_rules.RUN_LABEL] = run
    return {"metadata": {"name": name, "labels": labels, "creationTimestamp": born}, "spec": {"ttl": ttl} if ttl else {}}


def test_token_pruning_at_the_limits():
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    born_now = times.format_time(now)
    # another run's token is pruned whether its run id sorts before or after this run's; one born this very second too
    for other in ("a-run", "z-run"):
        assert [found[0] for found in fleet_rules.prunable_tokens([_token("t", born_now, run=other)], run_id="m-run", now=now)] == ["t"]
    assert fleet_rules.prunable_tokens([_token("t", born_now, run="m-run")], run_id="m-run", now=now) == []
    # a TTL that cannot be parsed gives no expiry (never 'expired a second after birth')
    assert fleet_rules.token_expiry(_token("t", "2020-01-01T00:00:00Z", ttl="bogus")) is None
    assert fleet_rules.same_ttl("2h", "1h") is False and fleet_rules.same_ttl("1h", "2h") is False


def test_values_secret_made_in_the_same_second_as_its_token_belongs_to_it():
    token = {"metadata": {"creationTimestamp": "2026-01-02T03:04:05Z"}}
    secret = {"type": fleet_rules.VALUES_SECRET_TYPE, "data": {fleet_rules.VALUES_KEY: "eA=="},
              "metadata": {"creationTimestamp": "2026-01-02T03:04:05Z"}}
    assert fleet_rules.secret_belongs_to_token(secret, token)
    assert fleet_rules.secret_belongs_to_token(dict(secret, metadata={}), token)
    assert not fleet_rules.secret_belongs_to_token(dict(secret, type="zz.example/other"), token)


def test_namespace_keepers_see_every_other_secret():
    token = {"metadata": {"name": "sa-token"}, "type": "kubernetes.io/service-account-token"}
    opaque = {"metadata": {"name": "site-settings"}, "type": "Opaque"}
    assert fleet_rules.namespace_keepers({"Secret": [token, opaque]}) == ["Secret site-settings"]
    assert fleet_rules.namespace_keepers({"ConfigMap": [dict(token)]}) == ["ConfigMap sa-token"]


def test_agent_values_and_release_identity_refused_on_either_side():
    token = {"tokenName": "t", "token": "x", "apiServerURL": "https://hub:6443"}
    with pytest.raises(ParameterError, match="token_name"):
        fleet_rules.build_agent_values(dict(token, token=""))
    for internal in ({"systemNamespace": "aaa"}, {"systemNamespace": "zzz"}, {"managedReleaseName": "aaa"},
                     {"managedReleaseName": "zzz"}):
        with pytest.raises(ParameterError, match="values"):
            fleet_rules.build_agent_values(dict(token, internal=internal))
    for namespace, name, param in (("aaa", "fleet-agent", "release_namespace"), ("cattle-fleet-system", "zzz", "release_name")):
        with pytest.raises(ParameterError, match=param):
            fleet_rules.check_release_identity(namespace, name)


def test_check_in_must_be_newer():
    cluster = {"status": {"agent": {"lastSeen": "2026-01-02T03:04:05Z"}}}
    later = datetime.datetime(2026, 1, 2, 3, 5, tzinfo=datetime.timezone.utc)
    assert not fleet_rules.checked_in_since(cluster, later)
    assert fleet_rules.checked_in_since(cluster, later - datetime.timedelta(minutes=2))


def test_kubefleet_token_secret_and_taints_refused_on_either_side():
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import rules as kf_rules
    good = {"type": kf_rules.SA_TOKEN_TYPE, "metadata": {"annotations": {kf_rules.SA_NAME_ANNOTATION: "m-sa"}}}
    assert kf_rules.token_secret_problem(good, "m-sa") is None
    assert kf_rules.token_secret_problem(dict(good, type="Opaque"), "m-sa")
    for other in ("a-sa", "z-sa"):
        assert kf_rules.token_secret_problem(good, other)
    for effect in ("AaaEffect", "PreferNoSchedule"):
        with pytest.raises(ParameterError, match="has effect"):
            kf_rules.normalize_taints([{"key": "k", "value": "v", "effect": effect}])


def test_kubeconfig_entries_found_by_exact_name_in_any_order():
    from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import resolve_context
    contexts = [{"name": "zeta", "context": {"cluster": "z"}}, {"name": "alpha", "context": {"cluster": "a"}}]
    clusters = [{"name": "z", "cluster": {"server": "https://z"}}, {"name": "a", "cluster": {"server": "https://a"}}]
    for order in (1, -1):
        config = {"contexts": contexts[::order], "clusters": clusters[::order]}
        assert resolve_context(config, "alpha")[2] == {"server": "https://a"}
        assert resolve_context(config, "zeta")[2] == {"server": "https://z"}


def test_namespace_keepers_keep_tls_secrets():
    tls = {"metadata": {"name": "ingress-cert"}, "type": "kubernetes.io/tls"}
    assert fleet_rules.namespace_keepers({"Secret": [tls]}) == ["Secret ingress-cert"]


def test_kubefleet_identities_compare_by_kind_namespace_and_default_group():
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import rules as kf_rules
    assert kf_rules.identity_subject("Group", "admins")["kind"] == "Group"
    user = {"kind": "User", "name": "u"}
    assert kf_rules.same_identity(user, dict(user, apiGroup="rbac.authorization.k8s.io"))
    sa = {"kind": "ServiceAccount", "name": "m", "namespace": "fleet-system"}
    assert kf_rules.same_identity(sa, dict(sa, apiGroup=""))
    assert not kf_rules.same_identity(sa, dict(sa, namespace="other"))
    current = {"metadata": {"name": "m"}, "spec": {"identity": sa, "heartbeatPeriodSeconds": 60}}
    assert kf_rules.member_cluster_changes(current, "m", sa, 30)[1] == {"spec": {"heartbeatPeriodSeconds": 30}}
    assert kf_rules.agent_values("m", "https://hub:6443")["useCAAuth"] is False
    assert kf_rules.agent_hub_endpoint(None) == (None, None, False, None)
    same = {"metadata": {"name": "hub-kubeconfig-secret"}, "data": {"token": "dA=="}}
    assert kf_rules.plan_agent(same, same, ReleasePlan(ReleasePlan.INSTALL, ["the release is not installed"])).changed


def test_kubefleet_join_and_relabel_decisions():
    assert evidence(kf_judge, {"joined": True, "name": "m"}, {}, {}, "join") == []
    assert evidence(kf_judge, {"joined": None, "name": "m"}, {}, {}, "join") == ["the member agent never joined MemberCluster m (no heartbeat)"]
    assert evidence(kf_judge, {"joined": True, "heartbeat": "x", "labels": {"env": "dev"}}, {}, {"labels": {"env": "prod"}},
                    "relabel") == ["labels drift: set env"]


def test_rancher_fleet_chart_downgrade_is_wanted():
    member = {"release": {"chart_version": "0.16.0", "status": "deployed"}, "deployment": True, "credential": True, "credential_usable": True}
    assert evidence(rf_judge, None, member, {"chart_version": "0.15.0"}, "upgrade") == ["chart version 0.16.0 -> 0.15.0"]


def test_label_keys_are_strings_stripped_and_base64_errors_named():
    assert lbl.label_key_problem(5) == "a label key must be a non-empty string"
    assert lbl.normalize_labels({" env ": "dev"}) == {"env": "dev"}
    for bad in ("not base64!", "//79"):  # not base64; base64 of bytes that are not UTF-8
        with pytest.raises(ParameterError, match="base64"):
            parsing.unb64(bad, "hubCA")


def test_changes_that_sort_either_way():
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import rules as kf_rules
    with pytest.raises(ParameterError, match="32 characters"):
        fleet_rules.validate_ttl("10h" + "0m" * 15)  # 33 characters
    live = {"status": "deployed", "chart": "fleet-agent", "chart_version": "0.16.0", "values": {}}
    assert ReleasePlan.decide(live, "zzz-agent", "0.16.0", {}).reasons == ["the release runs chart fleet-agent, not zzz-agent"]
    good = {"type": kf_rules.SA_TOKEN_TYPE, "metadata": {"annotations": {kf_rules.SA_NAME_ANNOTATION: "m-sa"}}}
    assert kf_rules.token_secret_problem(dict(good, type="kubernetes.io/tls"), "m-sa")
    sa = {"kind": "ServiceAccount", "name": "m", "namespace": "fleet-system"}
    current = {"metadata": {"name": "m"}, "spec": {"identity": sa, "heartbeatPeriodSeconds": 30}}
    assert kf_rules.member_cluster_changes(current, "m", sa, 60)[1] == {"spec": {"heartbeatPeriodSeconds": 60}}
    member = {"credential": {"present": True, "username": "abe"}}
    assert "the member agent's token authenticates as abe, but the MemberCluster names zed" in evidence(
        kf_judge, {"identity": {"kind": "User", "name": "zed"}, "joined": True, "heartbeat": "x"}, member, {}, "reregister")


def test_rancher_fleet_credential_of_unknown_standing_is_no_reason():
    member = {"credential": {"name": "fleet-agent"}, "credential_accepted": None, "credential_usable": True, "release": None}
    assert evidence(rf_judge, {}, member, {}, "reregister") == []
    assert evidence(rf_judge, {}, dict(member, credential_accepted=False), {}, "reregister") == [
        "the hub rejects the agent's credential in Secret cattle-fleet-system/fleet-agent (401)"]
