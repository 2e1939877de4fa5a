"""Agent upgrades in waves: which release a member ran before, and what the run left on each member (pure filters)."""

from ansible_collections.fleetops.registration.plugins.plugin_utils.summaries import join_summary
from ansible_collections.fleetops.registration.plugins.plugin_utils.waves import agent_releases, wave_result, wave_summary

REV1 = {"name": "member-agent", "namespace": "default", "chart": "member-agent", "chart_version": "0.1.0", "revision": 1,
        "status": "deployed", "values": {"logVerbosity": 5}}


def _member(release):
    return {"name": "edge-07", "managers": {"kubefleet": {"action": "upgrade", "member": {"release": release}, "hub": {}}}}


def test_agent_releases_records_deployed_releases_without_their_values():
    assert agent_releases(_member(REV1)) == {"kubefleet": dict((k, v) for k, v in REV1.items() if k != "values")}
    assert agent_releases(_member(None)) == {}
    assert agent_releases(_member(dict(REV1, status="failed"))) == {}
    assert agent_releases({"name": "edge-07", "error": "unreachable"}) == {}


def _host(before=True, after_revision=None, **extra):
    host = {"inventory_hostname": "member1", "member_join_cluster_name": "member1"}
    if before:
        host["member_join_releases_before"] = agent_releases(_member(REV1))
    if after_revision is not None:
        host["member_join_summary"] = {"kubefleet": {"release": dict(REV1, revision=after_revision)}}
    host.update(extra)
    return host


def test_a_member_that_passed_is_upgraded_or_unchanged():
    upgraded = wave_result(_host(after_revision=2))
    assert upgraded["outcome"] == "upgraded" and upgraded["managers"]["kubefleet"]["after"]["revision"] == 2
    assert upgraded["line"] == ("upgraded: kubefleet upgraded: member-agent 0.1.0 (revision 2), before the run "
                                "member-agent 0.1.0 (revision 1)")
    assert "values" not in upgraded["managers"]["kubefleet"]["after"]
    assert wave_result(_host(after_revision=1))["outcome"] == "unchanged"
    installed = wave_result(_host(before=False, after_revision=1))
    assert installed["outcome"] == "upgraded" and installed["managers"]["kubefleet"]["outcome"] == "installed"


def test_a_member_that_failed_says_whether_it_was_rolled_back():
    rollback = {"changed": True, "release": dict(REV1, revision=3)}
    rolled = wave_result(_host(member_join_kubefleet_rollback=rollback), "timed out")
    assert rolled["outcome"] == "rolled back" and rolled["failure"] == "timed out"
    assert rolled["managers"]["kubefleet"]["after"]["revision"] == 3 and rolled["line"].endswith(" - timed out")
    unchanged = wave_result(_host(member_join_kubefleet_rollback={"changed": False, "release": REV1}), "preflight failed")
    assert (unchanged["outcome"], unchanged["managers"]["kubefleet"]["outcome"]) == ("failed", "nothing to roll back (as before the run)")
    broken = wave_result(_host(member_join_kubefleet_rollback={"failed": True, "msg": "no revision 1"}), "timed out")
    assert broken["outcome"] == "failed" and "rollback failed: no revision 1" in broken["line"]
    assert wave_result(_host(), "timed out")["managers"]["kubefleet"]["outcome"] == "failed, NOT rolled back"
    first_join = wave_result(_host(before=False, member_join_summary={"kubefleet": {}}), "timed out")
    assert first_join["managers"]["kubefleet"]["outcome"] == "failed (no earlier release to roll back to)"


def test_members_no_batch_reached_are_untouched():
    hostvars = {"member1": {"upgrade_agents_result": {"outcome": "rolled back", "line": "rolled back: ..."}}, "member2": {}}
    summary = wave_summary(["member1", "member2", "member3"], hostvars)
    assert summary["member1"]["outcome"] == "rolled back"
    assert summary["member2"]["outcome"] == summary["member3"]["outcome"] == "untouched"
    assert wave_summary(["member1"], hostvars, lines=True) == {"member1": "rolled back: ..."}


def test_join_summary_names_the_agent_release_after_the_run():
    info = {"name": "edge-07", "managers": {"kubefleet": {"action": "upgrade", "reasons": ["values differ"], "hub": {},
                                                          "member": {"release": REV1}}}}
    ran = join_summary(info, {"member_join__kf_agent": {"changed": True, "release": dict(REV1, revision=2)}})
    assert ran["kubefleet"]["release"]["revision"] == 2 and "values" not in ran["kubefleet"]["release"]
    assert join_summary(info, {})["kubefleet"]["release"]["revision"] == 1


FLEET_REV = {"name": "fleet-agent", "namespace": "cattle-fleet-system", "chart": "fleet-agent", "chart_version": "0.16.1",
             "revision": 1, "status": "deployed"}


def _both_before():
    managers = {"kubefleet": {"member": {"release": REV1}, "hub": {}},
                "rancher_fleet": {"member": {"release": FLEET_REV}, "hub": {"agent_fields": {"privateRepoURL": "mirror:5000"}}}}
    return agent_releases({"name": "member1", "managers": managers})


def test_a_fleet_release_records_the_clusters_agent_fields_before_the_run():
    before = _both_before()
    assert before["rancher_fleet"]["agent_fields"] == {"privateRepoURL": "mirror:5000"}
    assert "agent_fields" not in before["kubefleet"]


def test_a_fleet_managed_agent_is_rolled_back_only_by_its_restored_cluster():
    restored = {"changed": True, "release": FLEET_REV, "restored_agent_fields": ["privateRepoURL"]}
    host = _host(member_join_releases_before=_both_before(), member_join_fleet_rollback=restored,
                 member_join_kubefleet_rollback={"changed": True, "release": dict(REV1, revision=3)})
    result = wave_result(host, "timed out")
    assert result["outcome"] == "rolled back", result
    assert result["managers"]["rancher_fleet"]["outcome"] == ("rolled back (the Cluster's privateRepoURL restored, the agent "
                                                              "redeployed by Fleet)")
    assert "agent_fields" not in result["managers"]["rancher_fleet"]["after"]
    untouched = dict(host, member_join_fleet_rollback={"changed": False, "release": FLEET_REV, "restored_agent_fields": []})
    assert wave_result(untouched, "timed out")["outcome"] == "rolled back"
    refused = dict(host, member_join_fleet_rollback={"failed": True, "msg": "not recorded"})
    assert wave_result(refused, "timed out")["outcome"] == "failed"
