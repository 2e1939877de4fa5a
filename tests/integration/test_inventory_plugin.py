"""The fleet_members inventory plugin against the lab's hub, after a real join.

member1 joins both managers with the lab's own inventory (join_cluster.yml); then the plugin's inventory, with the
members' kubeconfig mapped in by ``compose`` and the lab's shared variables in ``group_vars/`` beside it (as
docs/inventory-plugin.md tells users), must list member1 in the right groups with the hub's values, serve
cluster_status.yml, work from its cache when the hub is unreachable, and drive leave_cluster.yml --limit member1,
after which the hub no longer lists member1.
"""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from kubernetes import client

from modrun import REPO, collections_root
from kube_helpers import read_or_none

pytestmark = pytest.mark.lab

BIN = os.path.dirname(sys.executable)


def ansible(tool, *args, cwd):
    env = dict(os.environ)
    env.update({"ANSIBLE_COLLECTIONS_PATH": str(collections_root()), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "ANSIBLE_LOCAL_TEMP": str(cwd / "ansible-tmp"),
                "ANSIBLE_DEPRECATION_WARNINGS": "0", "PATH": BIN + os.pathsep + env.get("PATH", "")})
    return subprocess.run([os.path.join(BIN, tool)] + [str(a) for a in args], capture_output=True, text=True, env=env,
                          cwd=str(cwd), timeout=900, check=False)


def ok(proc, what):
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (what, proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def write_plugin_inventory(lab, directory, **extra):
    """hub.fleet_members.yml + group_vars/{all,hub}.yml from the lab's inventory, as a user would set them up."""
    lab_inventory = yaml.safe_load(lab.inventory.read_text())["all"]
    hub_vars = lab_inventory["children"]["hub"]["hosts"]["fleet-hub"]
    (directory / "group_vars").mkdir(parents=True, exist_ok=True)
    common = dict((k, v) for k, v in lab_inventory["vars"].items() if k.startswith("fleetops_"))
    (directory / "group_vars" / "all.yml").write_text(yaml.safe_dump(common))
    (directory / "group_vars" / "hub.yml").write_text(yaml.safe_dump(
        {"fleetops_api_server_url": hub_vars["fleetops_api_server_url"], "fleetops_ca_file": hub_vars["fleetops_ca_file"]}))
    config = dict({
        "plugin": "fleetops.registration.fleet_members",
        "kubeconfig": str(lab.kubeconfig), "context": "hub",
        "compose": {"fleetops_kubeconfig": repr(str(lab.kubeconfig)), "fleetops_context": "inventory_hostname"},
        "keyed_groups": [{"key": "fleetops_hub_labels.env | default('none')", "prefix": "env"}],
    }, **extra)
    path = directory / "hub.fleet_members.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def plain(value):
    """JSON from ansible-inventory with its ``{"__ansible_unsafe": ...}`` wrappers (untrusted strings) removed."""
    if isinstance(value, dict):
        return plain(value["__ansible_unsafe"]) if set(value) == {"__ansible_unsafe"} else dict((k, plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def graph(inventory, cwd):
    """{group: set(hosts)} from ansible-inventory --list."""
    data = plain(json.loads(ok(ansible("ansible-inventory", "-i", inventory, "--list", cwd=cwd), "ansible-inventory --list").stdout))
    groups = dict((name, set(body.get("hosts") or [])) for name, body in data.items() if name != "_meta")
    return groups, data["_meta"]["hostvars"]


def test_join_then_list_status_and_leave_through_the_plugin(lab_controllers, tmp_path):
    lab = lab_controllers
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    ok(ansible("ansible-playbook", "-i", lab.inventory, REPO / "playbooks" / "join_cluster.yml", "--limit", "fleet-hub,member1",
               cwd=tmp_path), "join_cluster.yml --limit fleet-hub,member1")
    cluster = custom.get_namespaced_custom_object("fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", "member1")

    inventory = write_plugin_inventory(lab, tmp_path / "inventory", fleet_namespaces=["fleet-default"])
    tree = ok(ansible("ansible-inventory", "-i", inventory, "--graph", cwd=tmp_path), "ansible-inventory --graph").stdout
    assert "@rancher_fleet:" in tree and "@kubefleet:" in tree and "|--member1" in tree, tree
    groups, hostvars = graph(inventory, tmp_path)
    for group in ("members", "rancher_fleet", "kubefleet", "healthy", "env_lab"):
        assert "member1" in groups.get(group, set()), "member1 is not in group %s: %s" % (group, tree)
    assert groups["hub"] == {"fleet-hub"}
    member = hostvars["member1"]
    assert member["fleetops_managers"] == ["rancher_fleet", "kubefleet"]
    assert member["fleetops_fleet_client_id"] == cluster["spec"]["clientID"]
    assert member["fleetops_cluster_name"] == "member1" and member["fleetops_hub_labels"]["member"] == "member1"
    assert member["fleetops_joined"] is True and member["fleetops_health"] == "healthy"
    assert 0 <= member["fleetops_heartbeat_age_seconds"]["kubefleet"] <= 180
    assert (member["fleetops_kubeconfig"], member["fleetops_context"]) == (str(lab.kubeconfig), "member1")
    assert (hostvars["fleet-hub"]["fleetops_kubeconfig"], hostvars["fleet-hub"]["fleetops_context"]) == (str(lab.kubeconfig), "hub")

    status = ok(ansible("ansible-playbook", "-i", inventory, REPO / "playbooks" / "cluster_status.yml", cwd=tmp_path),
                "cluster_status.yml on the plugin's inventory")
    # the table's row of member1 (not the PLAY RECAP): known to both managers, checked in and joined, with its labels
    row = re.search(r'"member1 +yes +\| checked-in +yes .*\| joined +yes .*\| (?P<labels>[^"]*)"', status.stdout)
    assert row, status.stdout[-3000:]
    assert {"env=lab", "member=member1"} <= set(row.group("labels").split(",")), row.group(0)

    check_cache(lab, tmp_path)

    ok(ansible("ansible-playbook", "-i", inventory, REPO / "playbooks" / "leave_cluster.yml", "--limit", "member1", cwd=tmp_path),
       "leave_cluster.yml --limit member1 on the plugin's inventory")
    assert read_or_none(lambda: custom.get_namespaced_custom_object(
        "fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", "member1")) is None
    assert read_or_none(lambda: custom.get_cluster_custom_object(
        "cluster.kubernetes-fleet.io", "v1beta1", "memberclusters", "member1")) is None
    groups, _hostvars = graph(inventory, tmp_path)
    assert "member1" not in groups.get("members", set())


def check_cache(lab, tmp_path):
    """With cache on, a second run reads the cache (the hub is made unreachable); --flush-cache reads the hub again."""
    directory = tmp_path / "cached"
    cache = {"cache": True, "cache_plugin": "ansible.builtin.jsonfile", "cache_connection": str(tmp_path / "cache")}
    inventory = write_plugin_inventory(lab, directory, **cache)
    assert "member1" in graph(inventory, tmp_path)[0]["members"]
    cached = "".join(p.read_text() for p in (tmp_path / "cache").iterdir())
    assert "member1" in cached and "managedFields" not in cached
    write_plugin_inventory(lab, directory, host="https://127.0.0.1:1", validate_certs=False, **cache)
    groups, hostvars = graph(inventory, tmp_path)
    assert "member1" in groups["members"] and hostvars["member1"]["fleetops_heartbeat_age_seconds"]["kubefleet"] >= 0
    flushed = ansible("ansible-inventory", "-i", inventory, "--list", "--flush-cache", cwd=tmp_path)
    assert flushed.returncode != 0 and "cannot reach the hub API server" in flushed.stdout + flushed.stderr
