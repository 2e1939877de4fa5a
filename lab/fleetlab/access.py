"""The files through which users and tests reach the lab: its kubeconfig, its Ansible inventory, ``bin/``."""

import yaml

from fleetlab import cluster as labcluster
from fleetlab import hub as labhub
from fleetlab import topology
from fleetlab.paths import write_private


def _build():
    from fleetlab import build  # pylint: disable=import-outside-toplevel
    return build


def write_access_files(paths, clusters, binaries):
    """``kubeconfig`` (all contexts), ``inventory.yml`` and ``bin/`` symlinks to helm and kubectl."""
    write_private(paths.kubeconfig, yaml.safe_dump(labcluster.kubeconfig(clusters), sort_keys=False))
    build = _build()
    # Modules run with the controller's Python, which has the kubernetes client.
    common = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
              'fleetops_helm_binary': str(paths.bin / 'helm'),
              'fleetops_fleet_agent_chart': str(build.fleet_chart('fleet-agent')),
              'fleetops_kubefleet_member_agent_chart': str(build.kubefleet_chart('member-agent')),
              # Azure/fleet's member-agent chart defaults its images to the moving tag main: as its users do, the lab
              # sets the hub agent's release (the collection takes the chart's images unless the inventory sets them).
              'fleetops_kubefleet_member_agent_image_tag': labhub.KUBEFLEET_IMAGE_TAG}
    rows = [(c.name, c.role, c.url, c.pki.ca_cert) for c in clusters]
    write_private(paths.inventory, yaml.safe_dump(topology.inventory(rows, paths.kubeconfig, common), sort_keys=False))
    paths.bin.mkdir(parents=True, exist_ok=True)
    for name in ('helm', 'kubectl'):
        link = paths.bin / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(binaries[name])
