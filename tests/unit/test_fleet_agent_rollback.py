"""Rolling back an agent Fleet manages: what fleet_cluster records of the Cluster's agent fields a change replaces, and
what fleet_agent's rollback writes back (pure rules; the lab test is test_upgrade_waves)."""

import json

from ansible_collections.fleetops.registration.plugins.module_utils.agent_settings import secret_reference, validate
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_rollback import redeployed
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import (
    change_record, env_secret, fields_setting, fleet_setting, recorded_fields, restore_update, spec_update, spec_view,
)

OLD_ENV = env_secret({"env": {"HTTPS_PROXY": "http://u:old@proxy:3128"}})[0]
GOOD = {"clientID": "abc", "privateRepoURL": "mirror.example:5000",
        "agentEnvVars": [{"name": "HTTPS_PROXY", "valueFrom": {"secretKeyRef": {"name": OLD_ENV, "key": "HTTPS_PROXY"}}}]}


def _setting(**given):
    return fleet_setting(validate(given))[0]


def _apply(spec, update):
    spec = dict(spec)
    for field, value in update.items():
        if value is None:
            spec.pop(field, None)
        else:
            spec[field] = value
    return spec


def test_a_change_records_only_the_fields_it_replaces_with_their_old_values():
    record = change_record(_setting(image_registry="bad.invalid/x"), GOOD)
    assert json.loads(record) == {"fields": {"privateRepoURL": "mirror.example:5000"}}
    assert change_record(_setting(image_registry="mirror.example:5000"), GOOD) is None  # nothing changes
    assert change_record(None, GOOD) is None
    added = json.loads(change_record(_setting(tolerations=[{"key": "edge", "operator": "Exists"}]), GOOD))
    assert added == {"fields": {"agentTolerations": None}}
    assert recorded_fields(record) == {"privateRepoURL": "mirror.example:5000"}
    assert recorded_fields("not json") is None and recorded_fields(json.dumps({"fields": {"spec": 1}})) is None


def test_the_rollback_restores_the_fields_before_the_change():
    before_view = spec_view(GOOD)
    setting = _setting(image_registry="bad.invalid/x", env={"HTTPS_PROXY": "http://u:new@proxy:3128"})
    record = change_record(setting, GOOD)
    changed = _apply(GOOD, spec_update(setting, GOOD))
    assert spec_view(changed) != before_view
    update, restored = restore_update(changed, record, before_view)
    assert sorted(update) == ["agentEnvVars", "privateRepoURL"]
    assert _apply(changed, update) == GOOD and spec_view(restored) == before_view
    assert fields_setting(restored) == {"image_registry": "mirror.example:5000", "env": {"HTTPS_PROXY": secret_reference(OLD_ENV, "HTTPS_PROXY")}}
    assert "old@" not in record  # the Cluster names the Secret the old values are in, never the values


def test_a_field_the_change_added_is_removed_again():
    spec = {"clientID": "abc"}
    setting = _setting(image_registry="bad.invalid/x")
    changed = _apply(spec, spec_update(setting, spec))
    update, restored = restore_update(changed, change_record(setting, spec), spec_view(spec))
    assert update == {"privateRepoURL": None} and restored == {} and fields_setting(restored) is None


def test_nothing_is_restored_when_the_cluster_still_has_its_fields_and_no_guess_is_made():
    assert restore_update(GOOD, None, spec_view(GOOD)) == ({}, dict((k, v) for k, v in GOOD.items() if k != "clientID"))
    changed = dict(GOOD, privateRepoURL="bad.invalid/x")
    assert restore_update(changed, None, spec_view(GOOD)) is None  # no record
    # a record of another change (an earlier run's) does not lead back to the fields before this run
    stale = json.dumps({"fields": {"privateRepoURL": "older.example"}})
    assert restore_update(changed, stale, spec_view(GOOD)) is None


def _deployment(image, ready=True, generation=2):
    status = {"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1 if ready else 0,
              "availableReplicas": 1 if ready else 0}
    return {"metadata": {"generation": generation},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "fleet-agent", "image": image}]}}},
            "status": status}


def test_the_agent_counts_as_redeployed_once_it_runs_the_restored_fields():
    assert redeployed(_deployment("rancher/fleet-agent:v0.16.1"), None, "bad.invalid/x")
    assert not redeployed(_deployment("bad.invalid/x/rancher/fleet-agent:v0.16.1"), None, "bad.invalid/x")
    assert not redeployed(_deployment("rancher/fleet-agent:v0.16.1", ready=False), None, "bad.invalid/x")
    mirror = {"image_registry": "mirror.example:5000"}
    assert redeployed(_deployment("mirror.example:5000/rancher/fleet-agent:v0.16.1"), mirror, "bad.invalid/x")
    assert not redeployed(_deployment("rancher/fleet-agent:v0.16.1"), mirror, None)
    assert not redeployed(None, None, None)
