"""The lab's clusters by name, their pinned ports and the Ansible inventory that names them (pure logic).

A lab has one or two hubs: ``hub`` (inventory host ``fleet-hub`` in group ``hub``, the group the playbooks target)
and, with ``--hubs 2``, ``hub2`` (host ``fleet-hub2`` in group ``new_hub``, the group ``move_hub.yml`` reads the new
hub from), so no existing playbook acts on the second hub unless asked. Members are ``member1``..``memberN`` in group
``members``. The order of the clusters (hub, members, then hub2) is the order of their pinned ports, so a one-hub lab
is laid out exactly as before the second hub existed and a second hub added later takes the port after the last member.
"""

from fleetlab.processes import LabError

MAX_HUBS = 2
HUB_GROUPS = {'hub': 'hub', 'hub2': 'new_hub'}


def hub_names(hubs):
    """The hubs' cluster (and kubeconfig context) names: ``hub``, ``hub2``."""
    if not 1 <= hubs <= MAX_HUBS:
        raise LabError('--hubs must be 1 or 2 (got %d)' % hubs)
    return ['hub'] + ['hub%d' % i for i in range(2, hubs + 1)]


def member_names(members):
    """``member1``..``memberN``."""
    return ['member%d' % i for i in range(1, members + 1)]


def cluster_names(members, hubs):
    """Every cluster in port order: hub, the members, the extra hubs."""
    names = hub_names(hubs)
    return names[:1] + member_names(members) + names[1:]


def host_name(hub):
    """The inventory host of a hub: ``fleet-hub``, ``fleet-hub2`` (named unlike its group, which Ansible warns about)."""
    return 'fleet-' + hub


def port_count(members, hubs):
    """Ports a lab needs: etcd client and peer, then one API server per cluster."""
    return 2 + members + hubs


def pinned_ports(base, members, hubs):
    """With ``FLEETOPS_LAB_BASE_PORT=base``: etcd base and base+1, hub base+2, memberN base+2+N, hub2 base+3+members."""
    return list(range(base, base + port_count(members, hubs)))


def pinned_port_of(base, members, cluster):
    """The pinned API server port of one cluster (for a hub added to a running lab)."""
    names = cluster_names(members, MAX_HUBS)
    if cluster not in names:
        raise LabError('no lab cluster named "%s"' % cluster)
    return base + 2 + names.index(cluster)


def inventory(clusters, kubeconfig, common):
    """The lab's inventory (dict) from (name, role, url, ca_file) rows in port order.

    Hosts carry the collection's inventory contract (fleetops_* host vars, see docs/inventory.md); members get labels,
    which show label reconciliation in the demo.
    """
    def host(name, url, ca_file, **extra):
        return dict({'fleetops_kubeconfig': str(kubeconfig), 'fleetops_context': name,
                     'fleetops_api_server_url': url, 'fleetops_ca_file': str(ca_file)}, **extra)
    children = {'hub': {'hosts': {}}, 'members': {'hosts': {}}}
    for name, role, url, ca_file in clusters:
        if role == 'hub':
            group = HUB_GROUPS[name]
            children.setdefault(group, {'hosts': {}})['hosts'][host_name(name)] = host(name, url, ca_file)
        else:
            children['members']['hosts'][name] = host(name, url, ca_file, fleetops_labels={'env': 'lab', 'member': name})
    return {'all': {'vars': common, 'children': children}}
