"""A join against a hub rebuilt without its state takes no workload off a member (issue 45, item 5).

Both members join and get a Rancher Fleet Bundle's and a KubeFleet placement's ConfigMap. Then the hub is recreated at
the same URL (``fleetlab rebuild hub --new-ca``: a new CA, its controllers back, nothing registered or placed). The
agents neither trust it nor hold a credential it knows, so a plain join_cluster registers every member again - with a
hub that places nothing. Fleet's agent, registered, would uninstall every bundle release its hub does not place, fleet-wide,
in one run: the join refuses each member's Fleet step, naming the bundle, with the Fleet agent untouched. KubeFleet's
agent joins (it removes only what its hub deletes the Work of, never a Work its hub lacks): its AppliedWork and objects
stay. With the placements back on the hub, the next join re-registers every member; Fleet's agent waits for its
BundleDeployments and upgrades its release in place, KubeFleet's Work takes the AppliedWork over. Every placed
ConfigMap is sampled on every member twice a second from the rebuild to the end: never absent.
"""

import pytest
from kubernetes import client

import fleet_workloads as workloads
from kube_helpers import read_or_none, unique, wait_for
from test_playbooks import members_restored_on_failure, playbook  # noqa: F401 pylint: disable=unused-import

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("members_restored_on_failure")]

CREDENTIALS = (("fleet-agent", "cattle-fleet-system"), ("hub-kubeconfig-secret", "fleet-hub-credentials"))


def _credential_versions(lab, member):
    """The resourceVersions of the agents' hub credentials on ``member`` (Fleet's, KubeFleet's; None when missing)."""
    core = client.CoreV1Api(lab.api_client(member))
    secrets = [read_or_none(lambda n=name, ns=namespace: core.read_namespaced_secret(n, ns)) for name, namespace in CREDENTIALS]
    return [secret.metadata.resource_version if secret is not None else None for secret in secrets]


def test_a_join_against_a_rebuilt_hub_takes_no_workload_off_a_member_and_finishes_once_the_placements_are_back(lab_controllers, tmp_path):
    lab = lab_controllers
    members = list(lab.members)
    join = ("join_cluster.yml", "--limit", ",".join(["fleet-hub"] + members))
    playbook(lab, *join, tmp_path=tmp_path)
    with workloads.placements(lab, unique("rebuilt"), {"env": "lab"}, members=members) as placed:
        fleet, kubefleet = placed["rancher_fleet"], placed["kubefleet"]
        before = dict(((m, p.name), workloads.wait_on_member(lab, m, p)) for m in members for p in (fleet, kubefleet))
        credentials = dict((m, _credential_versions(lab, m)) for m in members)
        with workloads.Sampler(lab, members, [fleet, kubefleet]) as sampler:
            lab.rebuild("hub", new_ca=True)
            refused = playbook(lab, *join, tmp_path=tmp_path, fails=True)
            for member in members:
                assert "%s - the hub has no Bundle fleet-default/%s" % (fleet.name, fleet.name) in refused.output, refused.output[-4000:]
            assert "does not place what it deployed on the member" in refused.output and "Nothing was changed" in refused.output
            assert dict((m, _credential_versions(lab, m)) for m in members) == credentials, "a refused member's agents changed"

            workloads.place_bundle(lab, fleet.name, {"env": "lab"})
            workloads.place_placement(lab, kubefleet.name, {"env": "lab"})
            joined = playbook(lab, *join, tmp_path=tmp_path)
            for member in members:
                registered = "%s: rancher_fleet fleet-default/%s: agent registered" % (member, member)
                assert registered in joined.output and "kubefleet %s: agent" % member in joined.output, joined.output[-4000:]
                for one in (fleet, kubefleet):
                    wait_for(lambda m=member, p=one: workloads.applied_on_hub(lab, p, m), 180,
                             "the rebuilt hub to report %s applied on %s" % (one.name, member))
        assert not sampler.missing and sampler.samples > 20, (sampler.missing[:10], sampler.samples)
        assert all(workloads.on_member(lab, m, p) == before[m, p.name] for m in members for p in (fleet, kubefleet))
        again = playbook(lab, *join, tmp_path=tmp_path)
        assert all("changed=0" in line for line in again.output.splitlines() if line.startswith(tuple(members))), again.output[-3000:]
    playbook(lab, "leave_cluster.yml", "--limit", ",".join(["fleet-hub"] + members), tmp_path=tmp_path)
