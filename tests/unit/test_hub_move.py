"""Moving members to a new hub (playbook move_hub.yml): where a move stands, when the new hub has taken a member over,
what the roles get for each direction, and the run's summary - the pure decisions of module_utils/hub_move.py,
hub_move_check.py's reading of the hubs' placements, and role_wiring's move step."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request
from ansible_collections.fleetops.registration.plugins.module_utils import hub_move
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.workloads import placement_rows as kubefleet_placements
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.workloads import placement_rows as fleet_placements
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_wiring

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old, new, settled, phase", [
    (False, False, False, "not_member"),
    (True, False, False, "move"),
    (True, True, False, "finish"),
    (True, True, True, "finish"),     # taken over, but the old hub still has it: its leave is left to do
    (False, True, False, "verify"),
    (False, True, True, "moved"),
])
def test_a_manager_s_phase_follows_what_each_hub_has(old, new, settled, phase):
    assert hub_move.manager_phase(old, new, settled) == phase


APPLIED = {"name": "web", "applied": True, "message": None}


def test_the_new_hub_has_taken_a_member_over_only_healthy_with_everything_applied_and_nothing_of_the_old_hub_missing():
    assert hub_move.takeover_problems(True, True, None, [APPLIED], ["web"]) == []
    assert hub_move.takeover_problems(False, False, None, [], ["web"]) == ["the new hub has no object for the member"]
    unhealthy = hub_move.takeover_problems(True, False, "the agent never checked in", [APPLIED], [])
    assert unhealthy == ["the new hub does not judge the member healthy: the agent never checked in"]
    pending = hub_move.takeover_problems(True, True, None, [APPLIED, {"name": "db", "applied": False, "message": None}], [])
    assert pending == ["placement db: not applied yet"]
    missing = hub_move.takeover_problems(True, True, None, [APPLIED], ["web", "cache", "audit"])
    assert len(missing) == 1 and "audit, cache" in missing[0] and "the new hub does not" in missing[0]


def test_the_plan_joins_every_manager_the_member_is_in_and_leaves_only_where_the_old_hub_still_has_it():
    plan = hub_move.plan({"kubefleet": {"old_present": True, "new_present": True, "settled": False},
                          "rancher_fleet": {"old_present": False, "new_present": True, "settled": True}})
    assert plan == {"phases": {"kubefleet": "finish", "rancher_fleet": "moved"}, "join": ["kubefleet", "rancher_fleet"],
                    "leave": ["kubefleet"], "left_on_old_hub": [], "phase": "move"}
    done = hub_move.plan({"kubefleet": {"old_present": False, "new_present": True, "settled": True},
                          "rancher_fleet": {"old_present": False, "new_present": False}})
    assert (done["phase"], done["join"], done["leave"]) == ("moved", ["kubefleet"], [])
    nowhere = hub_move.plan({"kubefleet": {}, "rancher_fleet": {}})
    assert (nowhere["phase"], nowhere["join"]) == ("not_member", [])


def test_an_evacuation_joins_where_the_member_s_agents_run_and_leaves_nothing_on_the_lost_hub_but_names_it():
    """Issue 45 item 4: with the old hub lost, old_present says the member's agent of that manager runs."""
    lost = hub_move.plan({"kubefleet": {"old_present": True, "new_present": False},
                          "rancher_fleet": {"old_present": True, "new_present": True, "settled": False}}, old_hub_lost=True)
    assert (lost["join"], lost["leave"], lost["left_on_old_hub"], lost["phase"]) == (
        ["kubefleet", "rancher_fleet"], [], ["kubefleet", "rancher_fleet"], "move")
    moved = hub_move.member_outcome(dict(lost))
    assert moved["outcome"] == "moved" and moved["left_on_old_hub"] == ["kubefleet", "rancher_fleet"]
    assert moved["line"] == ("moved: kubefleet, rancher_fleet on the new hub, its placements applied there; the old hub not "
                             "reached; left there: its kubefleet, rancher_fleet objects of the member (a move_hub.yml run "
                             "with that hub back, or leave_cluster.yml against it, removes them)")
    assert "left there" in hub_move.member_outcome(dict(lost), "the agent never checked in", "the old hub is lost")["line"]
    assert "left_on_old_hub" not in hub_move.member_outcome(None)


def test_an_evacuation_takes_what_runs_on_the_member_and_refuses_what_it_could_not_read():
    """Issue 45 item 4: what runs on the member stands for the lost hub; an agent whose workloads are unreadable (null)
    stops the move, since the new hub could not be proven to place them."""
    running = [{"placement": "web", "record": "release web/web"}, {"placement": "web", "record": "release w2/web"}]
    managers = {"rancher_fleet": {"member": {"release": {"name": "fleet-agent"}, "workloads": running}},
                "kubefleet": {"member": {"release": None, "workloads": []}}}
    assert hub_move.lost_hub_options(managers) == {"old_hub_lost": True, "member_agents": ["rancher_fleet"],
                                                   "member_workloads": {"kubefleet": [], "rancher_fleet": ["web"]}}
    managers["kubefleet"]["member"] = {"release": {"name": "member-agent"}, "workloads": None}
    with pytest.raises(ValueError, match="what its kubefleet agent.s. run could not be read"):
        hub_move.lost_hub_options(managers)
    managers["kubefleet"]["member"]["release"] = None  # no agent: nothing of it to place
    assert hub_move.lost_hub_options(managers)["member_agents"] == ["rancher_fleet"]
    # a view credential reads no Secret: no release is known, so whether an agent runs is not known either
    managers["kubefleet"]["member"] = {"release": None, "workloads": [], "unread": ["secrets"]}
    with pytest.raises(ValueError, match="whether its kubefleet agent.s. run could not be read .* not the view role"):
        hub_move.lost_hub_options(managers)


BEFORE = {"phase": "move", "join": ["kubefleet", "rancher_fleet"], "leave": ["kubefleet", "rancher_fleet"]}


def test_the_summary_says_moved_moved_back_failed_or_untouched():
    assert hub_move.member_outcome(None)["outcome"] == "untouched"
    assert "not reached" in hub_move.member_outcome(None)["line"]
    nowhere = hub_move.member_outcome({"phase": "not_member", "join": []})
    assert (nowhere["outcome"], nowhere["changed"]) == ("untouched", False)
    moved = hub_move.member_outcome(BEFORE)
    assert (moved["outcome"], moved["changed"]) == ("moved", True) and "kubefleet, rancher_fleet" in moved["line"]
    assert moved["line"].endswith("the old hub's objects removed")
    assert hub_move.member_outcome(dict(BEFORE, leave=[]))["line"].endswith("the old hub had nothing of it")
    again = hub_move.member_outcome({"phase": "moved", "join": ["kubefleet"]})
    assert (again["outcome"], again["changed"]) == ("moved", False) and "nothing to do" in again["line"]
    back = hub_move.member_outcome(BEFORE, "the agent never checked in", True)
    assert (back["outcome"], back["failure"]) == ("moved back", "the agent never checked in")
    failed = hub_move.member_outcome(BEFORE, "the agent never checked in", "the old hub is gone")
    assert failed["outcome"] == "failed" and "the move back failed too: the old hub is gone" in failed["line"]
    assert "not moved back" in hub_move.member_outcome(BEFORE, "x", None)["line"]


def test_the_hubs_come_from_the_groups_or_the_extra_var_and_a_missing_or_same_hub_is_refused():
    groups = {"all": ["fleet-hub", "fleet-hub2", "hub-west", "m1"], "hub": ["fleet-hub"], "new_hub": ["fleet-hub2"]}
    assert hub_move.hub_hosts(groups) == ("fleet-hub", "fleet-hub2")
    assert hub_move.hub_hosts(groups, new_hub="hub-west") == ("fleet-hub", "hub-west")
    assert hub_move.hub_hosts(groups, new_hub="hub-west", old_hub="fleet-hub2") == ("fleet-hub2", "hub-west")
    with pytest.raises(ValueError, match="group 'new_hub'.*fleetops_new_hub"):
        hub_move.hub_hosts(dict(groups, new_hub=[]))
    with pytest.raises(ValueError, match="found 2 hosts"):
        hub_move.hub_hosts(dict(groups, new_hub=["a", "b"]))
    with pytest.raises(ValueError, match="already"):
        hub_move.hub_hosts(groups, new_hub="fleet-hub")
    with pytest.raises(ValueError, match="no host of the inventory"):
        hub_move.hub_hosts(groups, new_hub="hub-east")
    with pytest.raises(ValueError, match="group 'hub'"):
        hub_move.hub_hosts(dict(groups, hub=[]))


OLD = {"host": "fleet-hub", "kubeconfig": "/k/hub", "context": "hub"}
NEW = {"host": "fleet-hub2", "kubeconfig": "/k/hub", "context": "hub2"}


def test_each_direction_joins_one_hub_and_leaves_the_other_hub_side_only():
    forward = hub_move.role_steps(NEW, OLD, ["kubefleet"], ["kubefleet", "rancher_fleet"], 5)
    assert forward["member_join"] == {"hub_host": "fleet-hub2", "hub_kubeconfig": "/k/hub", "hub_context": "hub2",
                                      "backends": ["kubefleet"], "detect_backends": False}
    leave = forward["member_leave"]
    assert (leave["hub_host"], leave["hub_context"], leave["backends"]) == ("fleet-hub", "hub", ["kubefleet", "rancher_fleet"])
    assert leave["keep_agents"] is True and leave["kubefleet_force"] is True and leave["kubefleet_force_grace_period"] == 5


def _wiring(role, extra=None):
    defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    variables = dict(defaults, inventory_hostname="member1", groups={"hub": ["fleet-hub"]},
                     fleetops_hub_kubeconfig="/k/credential", **(extra or {}))
    hubs = {"fleet-hub": {"fleetops_api_server_url": "https://hub:6443"},
            "fleet-hub2": {"fleetops_api_server_url": "https://hub2:6443"}}
    return role_wiring.settings(role, lambda name: variables.get(name, role_wiring.MISSING),
                                lambda host, name: hubs.get(host, {}).get(name, role_wiring.MISSING), backend_request)


def test_the_move_step_points_the_roles_at_its_hubs_over_the_inventory():
    plain_join, plain_leave = _wiring("member_join"), _wiring("member_leave")
    assert (plain_join["hub_host"], plain_join["hub_api_server_url"], plain_join["hub_kubeconfig"]) == \
        ("fleet-hub", "https://hub:6443", "/k/credential")
    assert plain_leave["keep_agents"] is False and plain_leave["kubefleet_remove_identity"] is True
    step = {"roles": hub_move.role_steps(NEW, OLD, ["kubefleet"], ["rancher_fleet"], 5)}
    join = _wiring("member_join", {role_wiring.MOVE_STEP: step})
    assert (join["hub_host"], join["hub_api_server_url"], join["hub_context"]) == ("fleet-hub2", "https://hub2:6443", "hub2")
    assert (join["hub_kubeconfig"], join["backends"], join["detect_backends"]) == ("/k/hub", ["kubefleet"], False)
    leave = _wiring("member_leave", {role_wiring.MOVE_STEP: step})
    assert (leave["hub_host"], leave["hub_context"], leave["backends"]) == ("fleet-hub", "hub", ["rancher_fleet"])
    assert leave["keep_agents"] is True and leave["kubefleet_force"] is True


def _bd(name, deployment="s-1", applied="s-1", ready=True, message=None):
    return {"metadata": {"name": name}, "spec": {"deploymentID": deployment},
            "status": {"appliedDeploymentID": applied, "ready": ready, "display": {"message": message}}}


def test_a_fleet_placement_is_applied_when_ready_with_its_current_deployment_and_the_agent_bundle_is_no_placement():
    found = fleet_placements([_bd("web"), _bd("fleet-agent-member1"), _bd("db", applied="s-0"),
                              _bd("cache", ready=False, message="Deployment cache not ready")])
    assert [(item["name"], item["applied"]) for item in found] == [("cache", False), ("db", False), ("web", True)]
    assert "not ready: Deployment cache not ready" in found[0]["message"]
    assert "current content" in found[1]["message"]


def test_a_kubefleet_placement_counts_only_with_applied_true_in_its_status_for_this_member():
    def crp(name, statuses):
        return {"metadata": {"name": name}, "status": {"placementStatuses": statuses}}
    applied = {"type": "Applied", "status": "True"}
    pending = {"type": "Applied", "status": "False", "reason": "ApplyFailed", "message": "namespace missing"}
    found = kubefleet_placements([crp("web", [{"clusterName": "member1", "conditions": [applied]}]),
                                  crp("db", [{"clusterName": "member1", "conditions": [pending]}]),
                                  crp("other", [{"clusterName": "member2", "conditions": [applied]}]),
                                  crp("new", [{"clusterName": "member1", "conditions": []}])], "member1")
    assert [(item["name"], item["applied"], item["message"]) for item in found] == [
        ("db", False, "namespace missing"), ("new", False, "not applied yet"), ("web", True, None)]
