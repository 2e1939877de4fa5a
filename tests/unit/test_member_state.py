"""member_info's and fleet_status's pure parts: connection checks, desired state, steps per action, the status table."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import fleet_managers
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import MemberState
from ansible_collections.fleetops.registration.plugins.module_utils.registry import KUBEFLEET, RANCHER_FLEET
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import merge_rows, table
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import (
    check_distinct_connections, desired_for, new_run_id, summarize,
)


def test_member_and_hub_on_the_same_connection_is_an_inventory_mistake():
    with pytest.raises(ParameterError, match="hub_kubeconfig: the member and the hub resolve to the same connection"):
        check_distinct_connections({"kubeconfig": "/k", "context": "a", "hub_kubeconfig": "/k", "hub_context": "a"})
    with pytest.raises(ParameterError):
        check_distinct_connections({"kubeconfig": "", "hub_kubeconfig": None})
    check_distinct_connections({"kubeconfig": "/k", "context": "member1", "hub_kubeconfig": "/k", "hub_context": "hub"})


def test_desired_state_per_manager():
    params = {"labels": {"env": "prod"}, "labels_mode": "replace", "stale_after": 60, "fleet_namespace": "clusters",
              "agent_chart_versions": {"kubefleet": "0.1.0", "rancher_fleet": ""}, "agent_values": {"kubefleet": {"a": 1}},
              "force": ["rancher_fleet"]}
    assert desired_for(KUBEFLEET, params) == {"labels": {"env": "prod"}, "labels_mode": "replace", "stale_after": 60,
                                              "chart_version": "0.1.0", "values": {"a": 1}, "force": False,
                                              "rotate": False, "credential_max_age": None, "agent": None,
                                              "identity_namespace": None, "token_lifetime": None, "images": {},
                                              "heartbeat_period_seconds": None, "taints": None}
    fleet = desired_for(RANCHER_FLEET, params)
    assert fleet["chart_version"] is None and fleet["force"] and fleet["namespace"] == "clusters" and fleet["values"] == {}
    assert "taints" not in fleet and "namespace" not in desired_for(KUBEFLEET, params)  # each manager's own part is its own
    rotating = desired_for(KUBEFLEET, dict(params, credential_max_age="720h", rotate_credentials=True))
    assert rotating["credential_max_age"] == 720 * 3600 and rotating["rotate"] is True
    with pytest.raises(ParameterError, match="credential_max_age"):
        desired_for(KUBEFLEET, dict(params, credential_max_age="a month"))
    assert desired_for(KUBEFLEET, dict(params, kubefleet_token_lifetime="168h"))["token_lifetime"] == "168h"
    with pytest.raises(ParameterError, match="kubefleet_token_lifetime"):
        desired_for(KUBEFLEET, dict(params, kubefleet_token_lifetime="0"))
    setting = desired_for(KUBEFLEET, dict(params, agent={"env": {"HTTPS_PROXY": "http://proxy:3128"}, "affinity": None}))
    assert setting["agent"] == {"env": {"HTTPS_PROXY": "http://proxy:3128"}}
    with pytest.raises(ParameterError, match="agent.image_registry"):
        desired_for(KUBEFLEET, dict(params, agent={"image_registry": "https://mirror.example"}))
    spec = desired_for(KUBEFLEET, dict(params, heartbeat_period_seconds=30, taints=[{"key": "gpu", "value": "", "effect": "NoSchedule"}]))
    assert spec["heartbeat_period_seconds"] == 30 and spec["taints"] == [{"key": "gpu", "effect": "NoSchedule"}]
    assert desired_for(RANCHER_FLEET, dict(params, heartbeat_period_seconds=30)).get("heartbeat_period_seconds") is None
    with pytest.raises(ParameterError, match="heartbeat_period_seconds"):
        desired_for(KUBEFLEET, dict(params, heartbeat_period_seconds=0))


@pytest.mark.parametrize("action, steps", [
    ("none", []),
    ("relabel", ["member_object"]),
    ("upgrade", ["agent", "member_object"]),
    ("install", ["agent", "member_object"]),
    ("join", ["agent", "identity", "member_object"]),
    ("reregister", ["agent", "identity", "member_object", "new_token", "reset_credential", "revoke_previous"]),
    ("rotate", ["agent", "identity", "member_object", "new_token", "reset_credential", "revoke_previous"]),
    ("reconfigure", ["agent", "member_object"]),
])
def test_each_action_names_the_join_steps_it_needs(action, steps):
    state = MemberState("kubefleet", "edge-07", {}, {}, action, ["why"]).as_dict()
    assert sorted(step for step, needed in state["steps"].items() if needed) == steps
    assert state["healthy"] is (action in ("none", "relabel", "reconfigure", "rotate"))


def _needed(state):
    return sorted(step for step, needed in state.as_dict()["steps"].items() if needed)


def _finding(cause, action):
    return {"cause": cause, "evidence": cause, "action": action, "fix": ""}


def _judged(manager, findings):
    """The state ``manager``'s decide makes of ``findings`` (with its first_credential)."""
    return MemberState.judged(manager.name, "edge-07", None, {}, findings, manager.first_credential)


def test_a_join_of_a_member_holding_no_credential_gives_it_one_without_a_re_registration():
    not_member = _finding("not_member", "join")
    fresh = _judged(KUBEFLEET, [not_member, _finding("credential_missing", "reregister")])
    assert fresh.action == "join"
    # No agent holds a token of the identity: the new one is issued and the older ones revoked at once, not after a
    # heartbeat, and nothing on the member is reset.
    assert _needed(fresh) == ["agent", "identity", "member_object", "new_token", "revoke_at_once"]
    fleet = _judged(RANCHER_FLEET, [not_member, _finding("bootstrap_missing", "reregister")])
    assert _needed(fleet) == ["agent", "identity", "member_object"]
    # Rancher Fleet's credential_missing leaves a bootstrap Secret behind: the agent is made to register again.
    stuck = _judged(RANCHER_FLEET, [not_member, _finding("credential_missing", "reregister")])
    assert "reset_credential" in _needed(stuck)


def test_a_join_of_a_member_whose_agent_holds_a_credential_registers_it_again():
    not_member = _finding("not_member", "join")
    for findings in ([not_member, _finding("credential_rejected", "reregister")],
                     [not_member, _finding("credential_missing", "reregister"), _finding("cluster_replaced", "reregister")]):
        moved = _judged(KUBEFLEET, findings)
        assert _needed(moved) == ["agent", "identity", "member_object", "new_token", "reset_credential", "revoke_previous"]
    wrong_hub = _judged(RANCHER_FLEET, [not_member, _finding("wrong_hub", "reregister")])
    assert _needed(wrong_hub) == ["agent", "identity", "member_object", "new_token", "reset_credential", "revoke_previous"]


def test_a_join_that_finds_its_member_object_leaving_lets_the_leave_finish_first_where_the_manager_waits_on_the_agent():
    leaving = _finding("leaving", "join")
    kubefleet = KUBEFLEET.decide("edge-07", {"name": "edge-07", "leaving": True}, {}, {})
    assert kubefleet.action == "join" and kubefleet.steps[0] == "finish_leave" and kubefleet.as_dict()["steps"]["finish_leave"]
    assert kubefleet.steps[1:] == fleet_managers.STEPS["join"]
    # Fleet deletes a Cluster without its agent: nothing to wait on
    fleet = MemberState.judged(RANCHER_FLEET.name, "edge-07", None, {}, [leaving], RANCHER_FLEET.first_credential, RANCHER_FLEET.leave_steps)
    assert fleet.steps == fleet_managers.STEPS["join"]
    # no leave, no step
    assert "finish_leave" not in _judged(KUBEFLEET, [_finding("not_member", "join")]).steps


def test_a_leave_s_agent_is_restarted_only_once_a_running_agent_would_have_acknowledged_it():
    import datetime  # pylint: disable=import-outside-toplevel
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.leave import (  # pylint: disable=import-outside-toplevel
        LEAVE_GRACE_SECONDS, deleting_since, unacknowledged,
    )
    deleted = {"metadata": {"name": "edge-07", "deletionTimestamp": "2026-11-29T10:00:00Z"}}
    at = datetime.datetime(2026, 11, 29, 10, 0, 0, tzinfo=datetime.timezone.utc)
    assert deleting_since(deleted) == at and deleting_since({"metadata": {"name": "edge-07"}}) is None and deleting_since(None) is None
    assert unacknowledged(deleted, at + datetime.timedelta(seconds=LEAVE_GRACE_SECONDS - 1)) is None
    why = unacknowledged(deleted, at + datetime.timedelta(seconds=45))
    assert why == "MemberCluster edge-07 has been leaving for 45 s and the member agent has not acknowledged it"
    assert unacknowledged({"metadata": {"name": "edge-07"}}, at) is None


def test_an_unknown_action_is_a_programming_error():
    with pytest.raises(ValueError):
        MemberState("kubefleet", "edge-07", {}, {}, "explode")
    assert set(fleet_managers.STEPS) == set(fleet_managers.ACTIONS)


def test_summary_is_healthy_only_when_every_manager_is():
    fine = MemberState("rancher_fleet", "m", {}, {}, "relabel")
    broken = MemberState("kubefleet", "m", {}, {}, "install", ["the member-agent release is missing"])
    result = summarize([fine, broken])
    assert result["actions"] == {"rancher_fleet": "relabel", "kubefleet": "install"}
    assert result["healthy"] is False and result["managers"]["kubefleet"]["reasons"] == ["the member-agent release is missing"]
    assert summarize([fine])["healthy"] is True


def test_pending_lists_only_the_managers_that_need_a_step_in_order():
    healthy = MemberState("rancher_fleet", "m", {}, {}, "none")
    relabel = MemberState("rancher_fleet", "m", {}, {}, "relabel")
    install = MemberState("kubefleet", "m", {}, {}, "install")
    assert summarize([healthy, install])["pending"] == ["kubefleet"]
    assert summarize([relabel, install])["pending"] == ["rancher_fleet", "kubefleet"]
    assert summarize([healthy])["pending"] == []


def test_run_ids_are_random_dns_safe_names():
    ids = set(new_run_id() for dummy in range(50))
    assert len(ids) == 50
    assert all(len(i) == 10 and set(i) <= set("abcdefghijklmnopqrstuvwxyz0123456789") for i in ids)


def test_status_rows_merge_managers_and_inventory_by_name():
    views = {"rancher_fleet": {"b": {"state": "checked-in", "healthy": True, "last_contact_age_seconds": 4, "labels": {"env": "lab"}}},
             "kubefleet": {"b": {"state": "joined", "healthy": True, "last_contact_age_seconds": 9, "labels": {"env": "lab"}},
                           "c": {"state": "leaving", "healthy": None, "last_contact_age_seconds": None, "labels": {}}}}
    rows = merge_rows(views, ["a", "b", ""])
    assert [r["name"] for r in rows] == ["a", "b", "c"]
    assert rows[0] == {"name": "a", "in_inventory": True, "lock": None, "rancher_fleet": None, "kubefleet": None}
    lines = table(rows, ["rancher_fleet", "kubefleet"])
    assert lines[0].split() == ["MEMBER", "INV", "|", "RANCHER_FLEET", "HEALTHY", "CONTACT", "|", "KUBEFLEET", "HEALTHY", "CONTACT",
                                "|", "CLUSTER", "|", "CAUSE", "|", "LABELS"]
    assert lines[2].split() == ["b", "yes", "|", "checked-in", "yes", "4s", "|", "joined", "yes", "9s", "|", "-", "|", "-", "|", "env=lab"]
    assert lines[3].split() == ["c", "no", "|", "absent", "-", "-", "|", "leaving", "-", "-", "|", "-", "|", "-", "|", "-"]


def test_status_shows_which_cluster_the_hub_objects_record():
    same = {"uid": "6f1c2a9e-4b7d-4c1e-9a57-0d3e8f2b1c44", "ca_sha256": None}
    views = {"rancher_fleet": {"b": {"state": "checked-in", "identity": same}, "c": {"state": "checked-in", "identity": same}},
             "kubefleet": {"b": {"state": "joined", "identity": same}, "c": {"state": "joined", "identity": dict(same, uid="0b5e")}}}
    lines = table(merge_rows(views), ["rancher_fleet", "kubefleet"])
    assert lines[1].split()[-5:-2] == ["6f1c2a9e", "|", "-"] and lines[2].split()[-5:-2] == ["DIFFERS", "|", "-"]


def test_status_shows_the_first_cause_the_hub_shows():
    silent = {"cause": "silent", "evidence": "last heartbeat 900s ago", "fix": "..."}
    views = {"rancher_fleet": {"b": {"state": "checked-in", "diagnosis": []}},
             "kubefleet": {"b": {"state": "silent", "diagnosis": [silent, dict(silent, cause="hub_reports")]}}}
    assert table(merge_rows(views), ["rancher_fleet", "kubefleet"])[1].split()[-3:] == ["silent", "|", "-"]


def test_status_labels_shown_per_manager_when_they_disagree():
    views = {"rancher_fleet": {"b": {"state": "checked-in", "labels": {"env": "a"}}},
             "kubefleet": {"b": {"state": "joined", "labels": {"env": "b"}}}}
    line = table(merge_rows(views), ["rancher_fleet", "kubefleet"])[1]
    assert line.endswith("rancher_fleet: env=a; kubefleet: env=b")


def test_status_shows_the_run_changing_a_member_only_when_one_is():
    views = {"rancher_fleet": {"b": {"state": "checked-in"}, "c": {"state": "checked-in"}}}
    assert "BEING CHANGED BY" not in table(merge_rows(views), ["rancher_fleet"])[0]
    lock = {"holder": "k3v9x0a7qp", "by": "AWX job 42", "since": "2026-11-24T17:00:00.000000Z", "expires": "2026-11-24T17:15:00Z"}
    rows = merge_rows(views, locks={"c": lock})
    assert rows[1]["lock"] == lock and rows[0]["lock"] is None
    lines = table(rows, ["rancher_fleet"])
    assert lines[0].endswith("| BEING CHANGED BY") and lines[1].endswith("| -")
    assert lines[2].endswith("| AWX job 42 (run k3v9x0a7qp, until 2026-11-24T17:15:00Z)")


def detecting_reader(backends, detect=True):
    from ansible_collections.fleetops.registration.plugins.module_utils.member_state import MemberInfo
    params = {"name": "edge-1", "backends": backends, "detect_backends": detect, "kubeconfig": "/k", "context": "edge-1",
              "hub_kubeconfig": "/k", "hub_context": "hub", "labels": {}}
    reader = MemberInfo(object(), params)
    reader.state = lambda name, listed: MemberState(name, "edge-1", None, None, "join", ["not a member yet"])
    reader.identity = lambda: {"uid": "6f1c2a9e", "ca_sha256": None}
    return reader


def test_detection_reads_every_manager_and_leaves_out_what_the_hub_does_not_serve():
    from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiNotServed
    reader = detecting_reader([])
    assert [manager for manager, _ns in reader.hub_reads()] == ["rancher_fleet", "kubefleet"]
    result = reader.run({"rancher_fleet": {}, "kubefleet": ApiNotServed("the hub does not serve cluster.kubernetes-fleet.io/v1beta1")})
    assert result["backends"] == ["rancher_fleet"] and result["unserved"] == ["kubefleet"]
    assert result["pending"] == ["rancher_fleet"] and list(result["managers"]) == ["rancher_fleet"]
    assert result["identity"] == {"uid": "6f1c2a9e", "ca_sha256": None} and result["rebuilt"] == []


def test_a_manager_asked_for_by_name_still_fails_when_the_hub_does_not_serve_it():
    from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiNotServed
    with pytest.raises(ApiNotServed) as err:
        detecting_reader(["kubefleet"]).run({"kubefleet": ApiNotServed("the hub does not serve it"), "rancher_fleet": {}})
    assert "the hub does not serve it" in err.value.message() and "fleetops_backends" in err.value.message()
    assert [m for m, _ns in detecting_reader(["kubefleet"], detect=False).hub_reads()] == ["kubefleet"]


def test_a_hub_serving_no_manager_fails_saying_so():
    from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiNotServed
    with pytest.raises(ApiNotServed) as err:
        detecting_reader([]).run({"rancher_fleet": ApiNotServed("no"), "kubefleet": ApiNotServed("no")})
    assert "serves no fleet manager's API (rancher_fleet, kubefleet)" in err.value.message()


def test_a_proxy_password_in_the_agent_setting_is_masked_in_member_info_output():
    from ansible_collections.fleetops.registration.plugins.module_utils.member_state import MemberInfo

    class Module:
        hidden = []

        def hide(self, *values):
            self.hidden.extend(values)
    params = {"name": "edge-1", "backends": ["kubefleet"], "kubeconfig": "/k", "context": "edge-1", "hub_kubeconfig": "/k",
              "hub_context": "hub", "labels": {}, "agent": {"env": {"HTTPS_PROXY": "http://me:s3cret@proxy:3128", "NO_PROXY": ".svc"}}}
    module = Module()
    MemberInfo(module, params)
    assert module.hidden == ["http://me:s3cret@proxy:3128", "s3cret"]
    with pytest.raises(ParameterError, match="agent.env"):
        MemberInfo(module, dict(params, agent={"env": {"A B": "x"}}))
