"""member_info and fleet_status_info against the lab: a member no fleet manager knows yet, and the status table.

The states of joined and broken members are asserted by the playbook and fault tests, which join for real.
"""

import os

import pytest
import yaml

from modrun import run_module
from kube_helpers import unique

pytestmark = pytest.mark.lab


def _connections(lab, member):
    return {"kubeconfig": str(lab.kubeconfig), "context": member, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"}


def test_a_member_the_hub_does_not_know_needs_a_join_in_both_managers(lab_controllers):
    name = unique("ghost")
    result = run_module("member_info", dict(_connections(lab_controllers, "member2"), name=name, labels={"env": "lab"}))
    assert not result.failed, result
    assert result["changed"] is False and result["healthy"] is False
    assert result["actions"] == {"rancher_fleet": "join", "kubefleet": "join"}
    for manager in ("rancher_fleet", "kubefleet"):
        state = result["managers"][manager]
        assert state["hub"] is None and state["reasons"] and name in " ".join(state["reasons"])
        # An agent another test left registered on member2 under its own name must register again as the new member
        # (a join with a re-registration finding takes its steps too); on a member without one, nothing is reset and
        # KubeFleet's new token replaces the identity's older ones at once.
        causes = set(item["cause"] for item in state["findings"] if item["action"] == "reregister")
        first = {"rancher_fleet": "bootstrap_missing", "kubefleet": "credential_missing"}[manager]
        again = bool(causes - {first})
        at_once = manager == "kubefleet" and causes == {first}
        assert state["steps"] == {"member_object": True, "identity": True, "new_token": again or at_once,
                                  "reset_credential": again, "agent": True, "revoke_previous": again,
                                  "revoke_at_once": at_once, "finish_leave": False}
        assert state["diagnosis"][0]["cause"] == "not_member" and state["diagnosis"][0]["fix"].endswith("(action join).")
    assert result["labels"] == {"env": "lab"} and len(result["run_id"]) == 10
    # The same answer in check mode: it only reads.
    checked = run_module("member_info", dict(_connections(lab_controllers, "member2"), name=name), check=True)
    assert checked["actions"] == result["actions"]
    # Read as a batch, the member needs a step: a run locks it, a check run (which changes nothing) does not.
    batch = {"members": [dict(_connections(lab_controllers, "member2"), name=name)]}
    for check, locks in ((False, True), (True, False)):
        read = run_module("member_info", batch, check=check)
        assert not read.failed and read["changing"] == [name] and read["lock_needed"] is locks, read.get("msg")


def test_member_info_refuses_the_hub_as_its_own_member(lab):
    result = run_module("member_info", dict(_connections(lab, "hub"), name="member1"))
    assert result.failed and "hub_kubeconfig" in result["msg"] and "same connection" in result["msg"]


def test_member_info_names_an_unknown_manager(lab):
    result = run_module("member_info", dict(_connections(lab, "member1"), name="member1", backends=["ocm"]))
    assert result.failed and "backends" in result["msg"] and "rancher_fleet" in result["msg"]


def test_fleet_status_lists_inventory_members_even_when_no_manager_knows_them(lab_controllers):
    name = unique("ghost")
    result = run_module("fleet_status_info", {"kubeconfig": str(lab_controllers.kubeconfig), "context": "hub",
                                              "inventory_names": [name]})
    assert not result.failed, result
    row = result["members"][name]
    assert row == {"name": name, "in_inventory": True, "lock": None, "rancher_fleet": None, "kubefleet": None}
    assert result["table"][0].startswith("MEMBER") and any(line.startswith(name) for line in result["table"])


def test_connections_come_from_the_files_kubeconfig_lists_as_kubectl_merges_them(lab, tmp_path):
    """No kubeconfig option anywhere: $KUBECONFIG names a file with the hub and one with the member, whose own entry
    named "hub" points at another cluster (the first file wins), and ~/.kube/config points elsewhere entirely."""
    full = yaml.safe_load(lab.kubeconfig.read_text())

    def part(path, contexts, rename=None):
        rename = rename or {}
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": contexts[0], "contexts": [], "clusters": [], "users": []}
        for ctx in [c for c in full["contexts"] if c["name"] in contexts]:
            name = rename.get(ctx["name"], ctx["name"])
            doc["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
            doc["clusters"] += [dict(c, name=name) for c in full["clusters"] if c["name"] == ctx["context"]["cluster"]]
            doc["users"] += [dict(u, name=name) for u in full["users"] if u["name"] == ctx["context"]["user"]]
        doc["current-context"] = rename.get(contexts[0], contexts[0])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc))
        return str(path)

    hub_file = part(tmp_path / "hub.yaml", ["hub"])
    member_file = part(tmp_path / "members" / "edge.yaml", ["member2", "member1"], rename={"member1": "hub"})
    part(tmp_path / "home" / ".kube" / "config", ["member1"], rename={"member1": "hub"})
    env = {"KUBECONFIG": os.pathsep.join([hub_file, member_file]), "HOME": str(tmp_path / "home"),
           "K8S_AUTH_KUBECONFIG": ""}
    name = unique("ghost")
    result = run_module("member_info", {"context": "member2", "hub_context": "hub", "name": name}, env=env)
    assert not result.failed, result.get("msg")
    assert result["actions"] == {"rancher_fleet": "join", "kubefleet": "join"}

    # the hub context of the second file (member1, which serves no fleet API) would have failed
    env["KUBECONFIG"] = os.pathsep.join([member_file, hub_file])
    wrong = run_module("member_info", {"context": "member2", "hub_context": "hub", "name": name}, env=env)
    assert wrong.failed and "fleet" in wrong["msg"].lower(), wrong.get("msg")
