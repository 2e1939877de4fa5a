"""``rebuild CLUSTER``: a member or a hub made again from nothing under the same name, as a platform team rebuilds one.

Its control plane stops, its keys in the shared etcd (``--etcd-prefix``) are deleted, and it starts again: a new
``kube-system`` Namespace (a new UID), no agents, no Secrets, only what ``up`` gives it - a member its CRDs, a hub its
Fleet and KubeFleet controllers (waited for), but none of what was registered or placed there: a hub restored
without its etcd. The runner sees the pods gone and stops the old agents and controllers. The PKI is kept, so the
kubeconfig, the inventory and the clients the tests hold stay valid (the hub's URL and CA too: the members' agents
still reach it, with credentials it no longer knows); the collection tells clusters apart by the ``kube-system``
UID, not by the CA. ``--new-ca`` gives it a new PKI instead (as a hub recreated at the same address): the lab's
kubeconfig and inventory are written again with it, and the members' agents no longer trust it.
"""

import base64
import json
import urllib.request

from fleetlab import control as labcontrol
from fleetlab import hub as labhub
from fleetlab import state as labstate
from fleetlab.access import write_access_files
from fleetlab.processes import LabError

CONTROL_PLANE = ('kube-controller-manager', 'kube-apiserver')


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def delete_prefix(etcd_url, prefix):
    """Delete every key under ``prefix`` + ``/`` through etcd's JSON gateway; returns how many went."""
    body = json.dumps({'key': _b64(prefix + '/'), 'range_end': _b64(prefix + '0')}).encode()  # '0' follows '/'
    request = urllib.request.Request(etcd_url + '/v3/kv/deleterange', data=body, headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(json.loads(response.read()).get('deleted') or 0)


def rebuild(paths, name, build, new_ca=False):
    """Rebuild the cluster ``name`` (a member or a hub) of the lab in ``paths``; returns the number of etcd keys removed.
    ``new_ca``: it comes back with a PKI of its own (a new CA, serving and admin certificates, service-account key),
    written to the lab's kubeconfig and inventory (the runner's watch reconnects with it)."""
    state = labstate.load(paths)
    if state is None:
        raise LabError('no lab in %s' % paths.root)
    role = (state['clusters'].get(name) or {}).get('role')
    if role not in ('member', 'hub'):
        raise LabError('"%s" is not a cluster of the lab; clusters: %s' % (name, ', '.join(sorted(state['clusters']))))
    if role == 'hub' and not state.get('controllers', True):
        raise LabError('the lab runs without controllers: a rebuilt hub would get none either; rebuild a member')
    for process in CONTROL_PLANE:
        labcontrol.stop(labcontrol.resolve(state, '%s/%s' % (name, process)))
    restarter = labcontrol.Restarter(paths, state)
    deleted = delete_prefix(restarter.etcd.url, restarter.clusters[name].etcd_prefix)
    if new_ca:
        restarter.clusters[name].prepare()
        write_access_files(paths, list(restarter.clusters.values()), state['binaries'])
    for process in reversed(CONTROL_PLANE):
        restarter.start(labcontrol.resolve(restarter.state, '%s/%s' % (name, process)))
    tools, cluster = labhub.Tools(paths, state['binaries']), restarter.clusters[name]
    if role == 'member':
        labhub.prepare_member(tools, cluster, build)
    else:
        labhub.install_hub_controllers(tools, cluster, build)
        labhub.wait_hub_controllers(tools, cluster, labcontrol.APISERVER_TIMEOUT, lambda: None)
    return deleted
