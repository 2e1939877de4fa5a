"""The fleet_members plugin's inventory from given hub objects: groups, the hub host, compose on members only.

The plugin is loaded by Ansible's plugin loader from the installed collection and parses a real config file; only
its ``read_hub`` (the API reads, tested against the lab in tests/integration/test_inventory_plugin.py) is replaced by
the objects below, so this checks what the plugin makes of them.
"""

import datetime
import sys

import pytest
import yaml
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader

from modrun import collections_root


def stamp(seconds_ago):
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def hub_objects():
    """The hub's objects, their times relative to now: made when a test reads them, not when the module is imported
    (under pytest-xdist a worker imports every test file long before it runs the last ones)."""
    return {"objects": {
        "rancher_fleet": [
            {"metadata": {"name": "edge-01", "namespace": "fleet-default", "labels": {"env": "prod"}},
             "spec": {"clientID": "a" * 64}, "status": {"agent": {"lastSeen": stamp(10)},
                                                        "conditions": [{"type": "Ready", "status": "True"}]}},
            {"metadata": {"name": "edge-02", "namespace": "fleet-default", "labels": {"env": "dev"}},
             "spec": {"clientID": "b" * 64}, "status": {}},
        ],
        "kubefleet": [
            {"metadata": {"name": "edge-01", "labels": {"env": "prod"}}, "spec": {"heartbeatPeriodSeconds": 60},
             "status": {"conditions": [{"type": "Joined", "status": "True"}],
                        "agentStatus": [{"type": "MemberAgent", "lastReceivedHeartbeat": stamp(5)}]}},
            {"metadata": {"name": "edge-03"}, "spec": {},
             "status": {"conditions": [{"type": "Joined", "status": "True"}],
                        "agentStatus": [{"type": "MemberAgent", "lastReceivedHeartbeat": stamp(900)}]}},
        ]},
        "member_urls": {},
    }


@pytest.fixture(scope="module")
def load_plugin():
    """A new plugin instance from Ansible's plugin loader (which gives it its option definitions)."""
    collections_root()
    init_plugin_loader()

    def load():
        plugin = inventory_loader.get("fleetops.registration.fleet_members")
        assert plugin is not None, "Ansible cannot load the fleet_members inventory plugin from the installed collection"
        return plugin
    return load


def build(load_plugin, tmp_path, **config):
    path = tmp_path / "hub.fleet_members.yml"
    path.write_text(yaml.safe_dump(dict({"plugin": "fleetops.registration.fleet_members", "kubeconfig": "/k/hub.yaml",
                                         "context": "hub"}, **config)))
    plugin = load_plugin()
    assert plugin.verify_file(str(path))
    plugin.read_hub = hub_objects
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), str(path), cache=False)
    groups = dict((name, sorted(h.name for h in group.get_hosts())) for name, group in inventory.groups.items())
    return groups, dict((name, host.get_vars()) for name, host in inventory.hosts.items())


def test_groups_by_manager_and_health_and_the_hub_host(load_plugin, tmp_path):
    groups, hostvars = build(load_plugin, tmp_path)
    assert groups["members"] == ["edge-01", "edge-02", "edge-03"]
    assert groups["rancher_fleet"] == ["edge-01", "edge-02"] and groups["kubefleet"] == ["edge-01", "edge-03"]
    assert (groups["healthy"], groups["not_joined"], groups["stale"]) == (["edge-01"], ["edge-02"], ["edge-03"])
    assert groups["hub"] == ["fleet-hub"]
    assert (hostvars["fleet-hub"]["fleetops_kubeconfig"], hostvars["fleet-hub"]["fleetops_context"]) == ("/k/hub.yaml", "hub")
    assert hostvars["edge-01"]["ansible_connection"] == "local"
    assert hostvars["edge-02"]["fleetops_fleet_client_id"] == "b" * 64


def test_compose_and_keyed_groups_apply_to_members_not_to_the_hub(load_plugin, tmp_path):
    groups, hostvars = build(load_plugin, tmp_path, hub_host="my-hub", local_connection=False,
                             compose={"fleetops_kubeconfig": "'/k/members.yaml'", "fleetops_context": "'ctx-' + inventory_hostname"},
                             keyed_groups=[{"key": "fleetops_hub_labels.env | default('none')", "prefix": "env"}],
                             groups={"kubefleet_only": "fleetops_managers == ['kubefleet']"})
    assert hostvars["edge-03"]["fleetops_context"] == "ctx-edge-03" and hostvars["edge-03"]["fleetops_kubeconfig"] == "/k/members.yaml"
    assert hostvars["my-hub"]["fleetops_kubeconfig"] == "/k/hub.yaml" and groups["hub"] == ["my-hub"]
    assert groups["env_prod"] == ["edge-01"] and groups["env_dev"] == ["edge-02"] and groups["env_none"] == ["edge-03"]
    assert groups["kubefleet_only"] == ["edge-03"]
    assert "ansible_connection" not in hostvars["edge-01"]


def test_an_empty_hub_host_adds_no_hub_and_unknown_stale_after_keys_are_refused(load_plugin, tmp_path):
    groups, hostvars = build(load_plugin, tmp_path, hub_host="")
    assert groups["hub"] == [] and "fleet-hub" not in hostvars
    with pytest.raises(Exception, match="stale_after has unknown managers karmada"):
        build(load_plugin, tmp_path, stale_after={"karmada": 10})


def test_only_plugin_files_with_the_right_name_are_taken(load_plugin, tmp_path):
    other = tmp_path / "hosts.yml"
    other.write_text("plugin: fleetops.registration.fleet_members\n")
    assert not load_plugin().verify_file(str(other))


class Unsafe(str):
    """What wrap_var makes of a string on ansible-core < 2.19 (AnsibleUnsafeText), recognisable here on any release."""


def mark(value):
    if isinstance(value, dict):
        return dict((key, mark(item)) for key, item in value.items())
    if isinstance(value, list):
        return [mark(item) for item in value]
    return Unsafe(value) if isinstance(value, str) else value


def strings(value):
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return [value] if isinstance(value, str) else []


def test_every_string_from_the_hub_is_marked_unsafe(load_plugin, tmp_path, monkeypatch):
    plugin_module = sys.modules[type(load_plugin()).__module__]
    monkeypatch.setattr(plugin_module, "wrap_var", mark)
    _groups, hostvars = build(load_plugin, tmp_path)
    for name in ("edge-01", "edge-02", "edge-03"):
        from_hub = dict((key, value) for key, value in hostvars[name].items() if key.startswith("fleetops_"))
        assert len(strings(from_hub)) >= 3, from_hub
        unmarked = [s for s in strings(from_hub) if not isinstance(s, Unsafe)]
        assert unmarked == [], "%s: strings from the hub not marked unsafe: %s" % (name, unmarked)
    assert not isinstance(hostvars["edge-01"]["ansible_connection"], Unsafe)
