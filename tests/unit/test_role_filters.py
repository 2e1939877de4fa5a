"""The roles' filters: survey-style labels and the per-member join/leave summaries (pure, from module results)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request, requested_backends
from ansible_collections.fleetops.registration.plugins.plugin_utils.summaries import join_summary, leave_summary
from ansible_collections.fleetops.registration.plugins.filter.survey_labels import survey_labels


@pytest.mark.parametrize("given, expected", [
    ({"env": "prod", " tier ": 1, "ok": True}, {"env": "prod", "tier": "1", "ok": "true"}),
    ('{"env": "prod", "region": "eu"}', {"env": "prod", "region": "eu"}),
    ("env=prod, region=eu", {"env": "prod", "region": "eu"}),
    ("env=prod\nregion=eu\n", {"env": "prod", "region": "eu"}),
    ("env=prod region=eu", {"env": "prod", "region": "eu"}),
    ("team=", {"team": ""}),
    ("", {}),
    ("   ", {}),
    (None, {}),
])
def test_survey_labels_accepts_mapping_json_and_pairs(given, expected):
    assert survey_labels(given) == expected


@pytest.mark.parametrize("given, fragment", [
    ("env prod", "labels: 'env prod' is not key=value.*env=dev,tier=web"),
    ("{not json", "labels: is not valid JSON.*JSON object"),
    ('{"a": [1]}', "labels: invalid value for label 'a'"),
    ("Bad Key=1", "key=value"),
])
def test_survey_labels_says_how_to_write_labels(given, fragment):
    with pytest.raises(AnsibleFilterError, match=fragment):
        survey_labels(given)


def _state(manager, action, hub=None, reasons=()):
    return {"manager": manager, "action": action, "reasons": list(reasons), "hub": hub or {}, "member": {}}


def _info(**managers):
    return {"name": "edge-07", "managers": managers}


HEALTHY_FLEET = {"namespace": "fleet-default", "checked_in": True, "ready": True, "last_seen": "2026-11-23T05:00:00Z"}
HEALTHY_KUBEFLEET = {"joined": True, "healthy": True}


def test_join_summary_of_a_healthy_member_says_unchanged_and_in_sync():
    info = _info(rancher_fleet=_state("rancher_fleet", "none", HEALTHY_FLEET), kubefleet=_state("kubefleet", "none", HEALTHY_KUBEFLEET))
    skipped = {"skipped": True, "changed": False}
    host_vars = {"inventory_hostname": "edge-07", "member_join__fleet_cluster": skipped, "member_join__fleet_agent": skipped}
    summary = join_summary(info, host_vars)
    assert summary["line"] == ("edge-07: rancher_fleet fleet-default/edge-07: agent unchanged, checked in, ready; labels in sync | "
                               "kubefleet edge-07: agent unchanged, joined, healthy; labels in sync")
    assert summary["rancher_fleet"]["action"] == "none" and summary["kubefleet"]["agent"] == "unchanged"


def test_join_summary_names_each_workload_the_agent_was_allowed_to_remove():
    """Issue 45: with fleetops_allow_workload_removal the member's line says, per workload, what the hub does not place."""
    removed = [{"manager": "rancher_fleet", "name": "fleet-default/web", "why": "the hub has no Bundle fleet-default/web"}]
    info = _info(rancher_fleet=_state("rancher_fleet", "reregister", HEALTHY_FLEET))
    agent = {"changed": True, "workloads_removed": removed}
    summary = join_summary(info, {"inventory_hostname": "edge-07", "member_join__fleet_agent": agent})
    assert summary["rancher_fleet"]["workloads_removed"] == removed
    assert summary["line"].endswith("; removal allowed (fleetops_allow_workload_removal), the hub does not place: "
                                    "rancher_fleet fleet-default/web")
    assert "removal allowed" not in join_summary(info, {"member_join__fleet_agent": {"changed": True}})["line"]


def test_join_summary_says_which_placements_member_info_found_running_on_the_member():
    """Issue 45: what the agents ran on the member when it was read, per manager; nothing said when none or unreadable."""
    fleet = dict(_state("rancher_fleet", "none", HEALTHY_FLEET), member={"workloads": [
        {"placement": "web", "record": "release web/web"}, {"placement": "api", "record": "release api/api"},
        {"placement": "web", "record": "release web2/web"}]})
    kubefleet = dict(_state("kubefleet", "none", HEALTHY_KUBEFLEET), member={"workloads": None})
    summary = join_summary(_info(rancher_fleet=fleet, kubefleet=kubefleet), {"inventory_hostname": "edge-07"})
    assert summary["rancher_fleet"]["workloads"] == ["api", "web"] and summary["kubefleet"]["workloads"] is None
    assert summary["line"] == ("edge-07: rancher_fleet fleet-default/edge-07: agent unchanged, checked in, ready; labels in sync; "
                               "runs api, web | kubefleet edge-07: agent unchanged, joined, healthy; labels in sync")
    many = dict(fleet, member={"workloads": [{"placement": "p%d" % n, "record": "-"} for n in range(7)]})
    assert join_summary(_info(rancher_fleet=many), {})["line"].endswith("; runs p0, p1, p2, p3, p4 and 2 more")


def test_join_summary_says_when_the_member_s_secrets_could_not_be_read():
    """Issue 46 item 3: a member read without its Secrets is judged on the rest; its line says what was not checked."""
    kubefleet = dict(_state("kubefleet", "none", HEALTHY_KUBEFLEET), member={"workloads": [], "unread": ["secrets"]})
    line = join_summary(_info(kubefleet=kubefleet), {"inventory_hostname": "edge-07"})["line"]
    assert line == ("edge-07: kubefleet edge-07: agent unchanged, joined, healthy; labels in sync; its release and agent "
                    "credential not checked (the member credential may not read Secrets)")
    kubefleet["member"] = {"workloads": []}
    assert "not checked" not in join_summary(_info(kubefleet=kubefleet), {})["line"]


def test_join_summary_says_healthy_only_when_member_info_judged_it_so():
    """A member the run did not change is as healthy as member_info's findings say, whatever one hub flag says."""
    unhealthy = dict(_state("kubefleet", "none", HEALTHY_KUBEFLEET), healthy=False,
                     diagnosis=[{"cause": "not_rolled_out", "evidence": "the agent Deployment is scaled to 0 replicas", "fix": "-"}])
    line = join_summary(_info(kubefleet=unhealthy), {})["line"]
    assert line == ("edge-07: kubefleet edge-07: agent unchanged, joined; labels in sync; cause found before the run not_rolled_out: "
                    "the agent Deployment is scaled to 0 replicas")
    assert join_summary(_info(kubefleet=dict(unhealthy, healthy=True, diagnosis=[])), {})["kubefleet"]["healthy"] is True


def test_join_summary_reports_a_reregistration_with_its_reason_and_the_new_view():
    info = _info(rancher_fleet=_state("rancher_fleet", "reregister", {"checked_in": True}, ["the hub rejects the agent's credential"]))
    host_vars = {
        "inventory_hostname": "edge-07",
        "member_join__fleet_cluster": {"changed": False, "label_changes": {}},
        "member_join__fleet_agent": {"changed": True, "cluster": dict(HEALTHY_FLEET, namespace="clusters")},
    }
    line = join_summary(info, host_vars)["line"]
    assert line == ("edge-07: rancher_fleet clusters/edge-07: agent re-registered (the hub rejects the agent's credential), "
                    "checked in, ready; labels in sync")


def test_join_summary_in_check_mode_predicts_and_shows_label_drift():
    info = _info(kubefleet=_state("kubefleet", "join"))
    host_vars = {
        "member_join__kf_cluster": {"changed": True, "label_changes": {"added": {"env": "prod"}, "changed": {"tier": "1"},
                                                                       "removed": ["old"]}},
        "member_join__kf_agent": {"changed": True},
    }
    summary = join_summary(info, host_vars, check_mode=True)
    assert summary["line"] == "edge-07: kubefleet edge-07: agent would register, not joined; labels +env=prod ~tier=1 -old"
    # The role passes no check_mode: the member's own ansible_check_mode says it.
    assert join_summary(info, dict(host_vars, ansible_check_mode=True)) == summary
    assert "would register" not in join_summary(info, dict(host_vars, ansible_check_mode=False))["line"]


def test_join_summary_says_what_the_member_object_step_changed_of_the_spec():
    state = dict(_state("kubefleet", "relabel", HEALTHY_KUBEFLEET, ["heartbeatPeriodSeconds is 60, the inventory asks for 30"]),
                 healthy=True)
    changed = {"changed": True, "label_changes": {}, "spec_changes": ["heartbeatPeriodSeconds 60 -> 30"]}
    summary = join_summary(_info(kubefleet=state), {"member_join__kf_cluster": changed, "member_join__kf_agent": {"skipped": True}})
    assert summary["line"] == "edge-07: kubefleet edge-07: agent unchanged, joined, healthy; labels in sync; heartbeatPeriodSeconds 60 -> 30"
    assert summary["kubefleet"]["spec"] == ["heartbeatPeriodSeconds 60 -> 30"]
    untouched = join_summary(_info(kubefleet=state), {"member_join__kf_cluster": {"skipped": True}})
    assert "spec" not in untouched["kubefleet"] and "heartbeat" not in untouched["line"]


def test_join_summary_names_the_first_cause_found_before_the_run_or_predicted_in_check_mode():
    state = _state("kubefleet", "reregister", HEALTHY_KUBEFLEET, ["the hub rejects the member agent's token"])
    state["diagnosis"] = [{"cause": "token_expired", "evidence": "the agent's token expired at 2026-11-21T09:00:00Z", "fix": "re-run"},
                          {"cause": "crash_loop", "evidence": "pod x restarted 3 times", "fix": "logs"}]
    info = _info(kubefleet=state)
    summary = join_summary(info, {"member_join__kf_agent": {"changed": True}})
    assert summary["kubefleet"]["cause"]["cause"] == "token_expired"
    assert summary["line"].endswith("; cause found before the run token_expired: the agent's token expired at 2026-11-21T09:00:00Z")
    predicted = join_summary(info, {"member_join__kf_agent": {"changed": True}}, check_mode=True)["line"]
    assert "agent would re-register" in predicted and predicted.endswith("; cause token_expired: the agent's token expired at 2026-11-21T09:00:00Z")


def test_join_summary_of_a_credential_rotation():
    info = _info(kubefleet=_state("kubefleet", "rotate", HEALTHY_KUBEFLEET, ["credential rotation was asked for"]))
    assert "agent credential rotated, joined, healthy" in join_summary(info, {"member_join__kf_agent": {"changed": True}})["line"]
    assert "agent would rotate its credential" in join_summary(info, {}, check_mode=True)["line"]
    assert "agent unchanged" in join_summary(info, {"member_join__kf_agent": {"skipped": True}})["line"]


def test_join_summary_of_an_upgrade_and_an_unrun_agent_step():
    info = _info(kubefleet=_state("kubefleet", "upgrade", HEALTHY_KUBEFLEET))
    assert "agent installed/updated" in join_summary(info, {"member_join__kf_agent": {"changed": True}})["line"]
    assert "agent unchanged" in join_summary(info, {"member_join__kf_agent": {"changed": False}})["line"]
    assert "agent unchanged" in join_summary(info, {})["line"]


def test_join_summary_of_a_silent_agent_restarted_says_it_was_restarted_not_installed():
    info = _info(kubefleet=_state("kubefleet", "install", HEALTHY_KUBEFLEET, ["the member agent's last heartbeat is 310s old"]))
    repaired = "the agent was restarted (rollout restart): the member agent's last heartbeat is 310s old"
    line = join_summary(info, {"member_join__kf_agent": {"changed": True, "repaired": repaired, "reasons": [repaired]}})["line"]
    assert "agent repaired (%s), joined" % repaired in line and "installed" not in line
    upgraded = join_summary(info, {"member_join__kf_agent": {"changed": True, "repaired": repaired, "reasons": ["values differ", repaired]}})
    assert "agent installed/updated" in upgraded["line"]


def test_leave_summary_names_what_was_removed_per_manager():
    host_vars = {
        "inventory_hostname": "member1", "member_leave_cluster_name": "member1",
        "member_leave__kf_cluster": {"changed": True, "forced": ["finalizers"]},
        "member_leave__kf_agent": {"changed": True},
        "member_leave__kf_identity": {"changed": False},
        "member_leave__fleet_agent": {"changed": True, "removed_credential": True, "fleet_managed_releases": ["fleet-agent-member1"]},
        "member_leave__fleet_cluster": {"changed": True, "removed_registrations": ["a"]},
        "member_leave__fleet_tokens": {"changed": True, "pruned": [{"name": "fleetops-join-x", "reason": "left by run y"}]},
    }
    summary = leave_summary(host_vars, ["kubefleet", "rancher_fleet"])
    assert summary["line"] == ("member1: kubefleet removed: MemberCluster, agent (forced: finalizers) | rancher_fleet removed: agent, "
                               "agent credential, Fleet-managed agent release fleet-agent-member1, Cluster, 1 ClusterRegistration(s), "
                               "1 registration token(s) of a failed join")
    assert summary["rancher_fleet"]["removed_registrations"] == 1
    again = leave_summary({"inventory_hostname": "member1", "member_leave_cluster_name": "member1"}, ["rancher_fleet"])
    assert again["line"] == "member1: rancher_fleet removed: nothing left to remove" and "kubefleet" not in again


def test_leave_summary_says_when_the_agent_was_restarted_to_acknowledge_the_leave():
    restarted = "the agent Deployment was scaled to 0 replicas: its replica was restored"
    host_vars = {"inventory_hostname": "member1", "member_leave_cluster_name": "member1",
                 "member_leave__kf_cluster": {"changed": True},
                 "member_leave__kf_agent": {"changed": True, "repaired": restarted, "left": "member1"}}
    summary = leave_summary(host_vars, ["kubefleet"])
    assert summary["kubefleet"]["agent_repaired_for_leave"] == restarted
    assert summary["line"] == "member1: kubefleet removed: MemberCluster, agent (the agent was restarted to acknowledge the leave)"
    quiet = leave_summary(dict(host_vars, member_leave__kf_agent={"changed": True}), ["kubefleet"])
    assert quiet["kubefleet"]["agent_repaired_for_leave"] is None and "restarted" not in quiet["line"]


def test_leave_summary_lists_what_the_leave_could_not_remove_and_the_leases_it_did():
    host_vars = {"inventory_hostname": "member1", "member_leave_cluster_name": "member1",
                 "member_leave__kf_agent": {"changed": True, "removed_leases": ["136224848560.member.fleet.azure.com"]},
                 "member_leave__fleet_agent": {"changed": True, "namespace_kept_for": ["Deployment other"],
                                               "release": {"name": "fleet-agent", "namespace": "cattle-fleet-system"}}}
    summary = leave_summary(host_vars, ["kubefleet", "rancher_fleet"])
    assert summary["rancher_fleet"]["kept"] == ["namespace cattle-fleet-system (kept for Deployment other)"]
    assert summary["line"].endswith("rancher_fleet removed: agent; kept: namespace cattle-fleet-system (kept for Deployment other)")
    assert summary["kubefleet"]["removed_leases"] == ["136224848560.member.fleet.azure.com"]


BOTH = ["rancher_fleet", "kubefleet"]


@pytest.mark.parametrize("asks, chosen, expected", [
    ([["rancher_fleet"], ["rancher_fleet"]], None, ["rancher_fleet"]),  # a Fleet-only hub needs Fleet only
    ([["kubefleet"], "kubefleet"], "", ["kubefleet"]),
    ([["kubefleet"], ["rancher_fleet"]], None, BOTH),
    ([["kubefleet"], None], None, BOTH),  # a member that asks for nothing needs both
    ([""], None, BOTH),  # AWX injects an empty field as ""
    ([[]], [], BOTH),
    ([], None, []),  # no member at all: the hub needs nothing
    ([["kubefleet", "rancher_fleet"]], None, BOTH),  # always in the same order
    ([["kubefleet"]], ["rancher_fleet"], ["rancher_fleet"]),  # a survey's choice wins
    ([None], "kubefleet\nrancher_fleet", BOTH),  # a multiselect answer as lines
    ([None], "kubefleet, rancher_fleet", BOTH),
])
def test_requested_backends(asks, chosen, expected):
    assert requested_backends(asks, chosen) == expected


def test_requested_backends_of_members_named_in_hostvars():
    hostvars = {"a": {"fleetops_backends": ["kubefleet"]}, "b": {"fleetops_backends": "kubefleet"}, "c": {}}
    assert requested_backends(["a", "b"], "", hostvars) == ["kubefleet"]
    assert requested_backends(["a", "c"], None, hostvars) == BOTH


@pytest.mark.parametrize("asks, chosen, variable", [([["ocm"]], None, "fleetops_backends"), ([None], ["karmada"], "fleetops_survey_backends")])
def test_an_unknown_manager_is_refused_naming_the_variable(asks, chosen, variable):
    with pytest.raises(AnsibleFilterError) as err:
        requested_backends(asks, chosen)
    assert variable in str(err.value) and "rancher_fleet" in str(err.value)


@pytest.mark.parametrize("asks, chosen, served, expected", [
    ([["rancher_fleet"]], None, None, {"backends": ["rancher_fleet"], "detect": False}),
    ([None], None, None, {"backends": [], "detect": True}),  # a member that asks for nothing: what the hub serves
    ([""], None, None, {"backends": [], "detect": True}),  # AWX's empty field
    ([["kubefleet"], None], None, None, {"backends": ["kubefleet"], "detect": True}),  # the hub: kubefleet, and what it serves
    ([None], None, ["kubefleet"], {"backends": ["kubefleet"], "detect": False}),  # the hub said what it serves
    ([["rancher_fleet"]], None, ["kubefleet"], {"backends": ["rancher_fleet"], "detect": False}),  # an explicit ask stays
    ([None], "rancher_fleet", None, {"backends": ["rancher_fleet"], "detect": False}),  # a survey's choice wins
    ([], None, None, {"backends": [], "detect": False}),
])
def test_backend_request(asks, chosen, served, expected):
    assert backend_request(asks, chosen, served=served) == expected


def test_backend_request_of_members_named_in_hostvars():
    hostvars = {"a": {"fleetops_backends": ["kubefleet"]}, "c": {"fleetops_backends": ""}}
    assert backend_request(["a", "c"], None, hostvars) == {"backends": ["kubefleet"], "detect": True}


def test_errors_name_the_inventory_variable_a_role_user_set():
    from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
    said = inventory_terms("name: 'Member_2' is not a valid name. Use lower-case letters", "member_join")
    assert said.startswith("name (from fleetops_cluster_name") and said.endswith(": 'Member_2' is not a valid name. Use lower-case letters")
    assert "the hub host's fleetops_ca_file" in inventory_terms("hub_api_server_ca: /x does not exist", "member_join")
    assert inventory_terms("cannot reach the hub API server", "member_join") == "cannot reach the hub API server"
    assert inventory_terms("wait_sleep: bad", "member_join") == "wait_sleep: bad"  # no role variable behind it
    with pytest.raises(AnsibleFilterError):
        inventory_terms("x", "member_dance")


def test_a_later_step_s_error_names_the_variable_behind_that_module_s_option():
    from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
    chart = "chart_version: the local chart /c is version 0.16.0, not 9.9.9"
    assert inventory_terms(chart, "member_join", "fleetops.registration.fleet_agent").startswith(
        "chart_version (from fleetops_fleet_agent_chart_version (member_join_fleet_agent_chart_version)): the local chart")
    assert "fleetops_kubefleet_member_agent_chart_version" in inventory_terms(chart, "member_join", "kubefleet_member_agent")
    missing = "namespace: namespace nope does not exist on the hub"
    assert "(from fleetops_kubefleet_namespace" in inventory_terms(missing, "member_join", "fleetops.registration.kubefleet_member_identity")
    assert "(from fleetops_fleet_namespace" in inventory_terms(missing, "member_join", "fleetops.registration.fleet_cluster")
    # The role's own options keep their words; an already translated message (the state check's) stays as it is.
    assert inventory_terms("name: bad", "member_join", "fleet_agent").startswith("name (from fleetops_cluster_name")
    said = inventory_terms("name: bad", "member_join")
    assert inventory_terms(said, "member_join", "ansible.builtin.assert") == said


def test_a_hub_side_step_s_connection_is_the_hub_s_and_the_leave_speaks_its_own_words():
    from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
    said = inventory_terms("context: context 'nope' is not in /k", "member_join", "fleetops.registration.fleet_cluster")
    assert said.startswith("context (from the hub host's fleetops_context, or the hub credential's fleetops_hub_context "
                           "(member_join_hub_context))")
    assert inventory_terms("context: x", "member_join", "fleet_agent").startswith("context (from fleetops_context (member_join_context))")
    assert inventory_terms("name: bad", "member_leave", "kubefleet_member_cluster").startswith(
        "name (from fleetops_cluster_name, or the inventory host name (member_leave_cluster_name))")
    assert "(from fleetops_kubefleet_namespace (member_leave_kubefleet_identity_namespace))" in inventory_terms(
        "namespace: namespace nope does not exist on the hub", "member_leave", "kubefleet_member_identity")
    assert "(member_leave_hub_kubeconfig)" in inventory_terms("kubeconfig: /x does not exist", "member_leave", "fleet_registration_token")
    assert "(member_leave_kubeconfig)" in inventory_terms("kubeconfig: /x does not exist", "member_leave", "fleet_agent")


def test_host_facts_collects_what_each_host_noted_in_order_and_skips_the_others():
    from ansible_collections.fleetops.registration.plugins.filter.host_facts import host_facts
    hostvars = {"a": {"req": {"name": "a"}}, "b": {}, "c": {"req": {"name": "c"}}}
    assert host_facts(["c", "b", "a", "gone"], hostvars, "req") == [{"name": "c"}, {"name": "a"}]
    assert host_facts([], hostvars, "req") == []


def test_join_summary_of_a_reconfigured_agent():
    info = _info(kubefleet=_state("kubefleet", "reconfigure", HEALTHY_KUBEFLEET, ["container member-agent's environment lacks NO_PROXY"]))
    line = join_summary(info, {"member_join__kf_agent": {"changed": True}})["line"]
    assert "agent reconfigured, joined, healthy" in line and "cause" not in line
    assert "agent would be reconfigured" in join_summary(info, {}, check_mode=True)["line"]
    assert "agent unchanged" in join_summary(info, {"member_join__kf_agent": {"skipped": True}})["line"]


def test_leave_summary_lists_the_kept_workloads_per_manager():
    host_vars = {"inventory_hostname": "member1", "member_leave_cluster_name": "member1",
                 "member_leave__kf_agent": {"changed": True, "workloads": {"action": "keep", "applied_works": [
                     {"name": "web-work", "resources": ["Namespace web", "ConfigMap web/web"]}]}},
                 "member_leave__fleet_agent": {"changed": True, "workloads": {
                     "action": "keep", "releases": ["shop/shop (bundle shop)"], "namespaces": ["shop"]}},
                 "member_leave__fleet_cluster": {"changed": True, "bundle_deployments": ["shop"]}}
    summary = leave_summary(host_vars, ["kubefleet", "rancher_fleet"])
    assert summary["kubefleet"]["kept"] == ["AppliedWork web-work (Namespace web, ConfigMap web/web)"]
    assert summary["rancher_fleet"]["kept"] == ["release shop/shop (bundle shop)", "namespace shop"]
    assert summary["line"] == ("member1: kubefleet removed: agent; kept: AppliedWork web-work (Namespace web, ConfigMap web/web) | "
                               "rancher_fleet removed: agent, Cluster; kept: release shop/shop (bundle shop), namespace shop")


def test_leave_summary_names_the_removed_workloads_per_manager():
    host_vars = {"inventory_hostname": "member1", "member_leave_cluster_name": "member1",
                 "member_leave__kf_agent": {"changed": True, "workloads": {"action": "remove", "applied_works": [
                     {"name": "web-work", "resources": ["Namespace web"]}]}},
                 "member_leave__fleet_agent": {"changed": True, "workloads": {"action": "remove", "releases": [], "namespaces": []}},
                 "member_leave__fleet_cluster": {"changed": True, "bundle_deployments": ["shop", "web"]}}
    summary = leave_summary(host_vars, ["kubefleet", "rancher_fleet"])
    assert summary["kubefleet"]["kept"] == [] and summary["rancher_fleet"]["kept"] == []
    assert summary["line"] == ("member1: kubefleet removed: agent, AppliedWork web-work (Namespace web) | "
                               "rancher_fleet removed: agent, Cluster, the releases of bundle(s) shop, web")
    assert summary["rancher_fleet"]["workloads"]["bundles"] == ["shop", "web"]


def test_a_rescue_passes_the_failed_result_and_task_as_they_are():
    from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
    failed = {"failed": True, "msg": "namespace: namespace nope does not exist on the hub"}
    said = inventory_terms(failed, "member_join", {"action": "fleetops.registration.fleet_cluster", "name": "x"})
    assert said == inventory_terms(failed["msg"], "member_join", "fleetops.registration.fleet_cluster")
    assert "(from fleetops_fleet_namespace" in said
    assert inventory_terms({"failed": True}, "member_join", {}) == ""


def test_host_facts_of_a_batch_in_its_order_and_a_key_of_each():
    from ansible_collections.fleetops.registration.plugins.filter.host_facts import host_facts
    hostvars = {"m1": {"member_join_summary": {"line": "m1: ok"}}, "m2": {},
                "m3": {"member_join_summary": {"line": "m3: ok"}}, "m4": {"member_join_summary": "not a mapping"}}
    assert host_facts(["m3", "m1", "m2", "gone"], hostvars, "member_join_summary.line") == ["m3: ok", "m1: ok"]
    assert host_facts(["m4", "m1"], hostvars, "member_join_summary.line") == ["m1: ok"]
    assert host_facts(["m4", "m2"], hostvars, "member_join_summary") == ["not a mapping"]


def test_join_summary_says_an_agent_that_joined_a_new_member_cluster_by_itself_was_unchanged_and_what_the_leave_repaired():
    """Soak seed 3187 round 7: the MemberCluster left and was made again; the agent step changed nothing, and the step
    that let the leave finish had made the agent's Deployment again."""
    info = _info(kubefleet=_state("kubefleet", "join", HEALTHY_KUBEFLEET, ["MemberCluster edge-07 is being deleted"]))
    restored = "the member agent's Deployment fleet-system/member-agent was gone; Helm made it again"
    steps = {"member_join__kf_cluster": {"changed": True, "label_changes": {}}, "member_join__kf_agent": {"changed": False},
             "member_join__kf_leave": {"changed": True, "repaired": restored}}
    assert "agent repaired (%s), joined, healthy" % restored in join_summary(info, steps)["line"]
    assert "agent unchanged, joined" in join_summary(info, dict(steps, member_join__kf_leave={"changed": False, "repaired": None}))["line"]
    reinstalled = dict(steps, member_join__kf_agent={"changed": True})
    assert "agent installed/updated, and earlier repaired (%s)" % restored in join_summary(info, reinstalled)["line"]
    assert "agent would register" in join_summary(info, steps, check_mode=True)["line"]
