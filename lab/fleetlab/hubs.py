"""A second hub added to a running lab (``up --hubs 2`` on a one-hub lab) without restarting anything else.

The new hub gets what ``up`` gives a hub, and shares what the lab shares: the one etcd (its own ``--etcd-prefix``)
and the one agent runner (which picks the new cluster up from state.json, see ``runner.Runner.watch_new_clusters``).
So it costs one more API server, controller manager and the hub's controllers, nothing more. Steps, each re-runnable:
the cluster (PKI, port) is recorded in state.json first, then the kubeconfig and inventory name it, its API server
and controller manager start (recorded as they start, so ``down`` stops them whatever happens next), then Fleet and
KubeFleet are installed and waited for; ``hubs`` in state.json counts a hub only once all of that is done. A failed
addition is finished by running ``up --hubs 2`` again (which first heals what is down), or dropped by ``down``.
"""

import os

from fleetlab import cluster as labcluster
from fleetlab import control as labcontrol
from fleetlab import hub as labhub
from fleetlab import processes
from fleetlab import state as labstate
from fleetlab import topology
from fleetlab.access import write_access_files
from fleetlab.processes import ComponentFailed, LabError

CONTROL_PLANE = ('kube-apiserver', 'kube-controller-manager')


def port_for(state, name):
    """The new hub's API server port: pinned after the last member with FLEETOPS_LAB_BASE_PORT, else a free one."""
    base = os.environ.get('FLEETOPS_LAB_BASE_PORT')
    if not base:
        return processes.free_port()
    port = topology.pinned_port_of(int(base), state['members'], name)
    if processes.port_busy(port):
        owner = processes.listener_of(port)
        raise LabError('port %d on 127.0.0.1 (%s with FLEETOPS_LAB_BASE_PORT=%s) is busy%s; stop that process or '
                       'choose another FLEETOPS_LAB_BASE_PORT' % (port, name, base, ' (%s)' % owner if owner else ''))
    return port


def _clusters(paths, state):
    """Cluster objects for every cluster in state.json, in its order."""
    etcd_url = 'http://127.0.0.1:%d' % state['etcd']['port']
    return [labcluster.Cluster(paths, name, data['role'], data['port'], etcd_url, state['binaries'])
            for name, data in state['clusters'].items()]


def _record_cluster(paths, state, name):
    """The new hub in state.json (no processes yet), its PKI made; returns the new state."""
    cluster = labcluster.Cluster(paths, name, 'hub', port_for(state, name), 'http://127.0.0.1:%d' % state['etcd']['port'],
                                 state['binaries'])
    cluster.prepare()
    entry = {'role': 'hub', 'context': name, 'url': cluster.url, 'port': cluster.port, 'etcd_prefix': cluster.etcd_prefix,
             'ca_file': str(cluster.pki.ca_cert), 'processes': [], 'agents': []}

    def apply(current):
        current['clusters'].setdefault(name, entry)
    return labstate.update(paths, apply)


def _start(paths, cluster, process):
    """Start one control-plane process of the new hub, recorded in state.json before it is waited for."""
    if process == 'kube-apiserver':
        proc, log, ready, what = cluster.start_apiserver(), cluster.apiserver_log, cluster.apiserver_ready, 'API server /readyz'
    else:
        proc, log, ready, what = cluster.start_kcm(), cluster.kcm_log, cluster.kcm_ready, 'controller manager (default ServiceAccount)'
    entry = processes.record(process, proc)

    def apply(current):
        entries = current['clusters'][cluster.name]['processes']
        entries[:] = [e for e in entries if e['name'] != process] + [entry]
    labstate.update(paths, apply)
    processes.wait_until(ready, labcontrol.APISERVER_TIMEOUT, '%s %s' % (cluster.name, what),
                         [('%s %s' % (cluster.name, process), proc, log)])


def _start_control_plane(paths, state, cluster):
    """Start what of the hub's control plane is not running (a re-run after a failure starts only what is missing)."""
    running = {e['name'] for e in state['clusters'][cluster.name]['processes'] if processes.alive(e)}
    for process in CONTROL_PLANE:
        if process not in running:
            _start(paths, cluster, process)


def _runner_check(paths):
    def check():
        current = labstate.load(paths) or {}
        runner = current.get('runner')
        if runner and not processes.alive(runner):
            raise ComponentFailed('agent runner', 'is not running', paths.log('runner'))
    return check


def add_hub(paths, name, build, say):
    """Add the hub ``name`` to the running lab in ``paths`` (or finish adding it); returns the new state."""
    state = labstate.load(paths)
    if name not in state['clusters']:
        say('  adding %s' % name)
        state = _record_cluster(paths, state, name)
    clusters = _clusters(paths, state)
    write_access_files(paths, clusters, state['binaries'])
    cluster = next(c for c in clusters if c.name == name)
    _start_control_plane(paths, state, cluster)
    if state.get('controllers', True):
        tools = labhub.Tools(paths, state['binaries'])
        labhub.install_hub_controllers(tools, cluster, build)
        labhub.wait_hub_controllers(tools, cluster, labcontrol.APISERVER_TIMEOUT, _runner_check(paths))
    index = topology.hub_names(topology.MAX_HUBS).index(name) + 1

    def apply(current):
        current['hubs'] = max(current.get('hubs', 1), index)
    return labstate.update(paths, apply)


def add_hubs(paths, state, hubs, build, say):
    """Add (or finish adding) the hubs a lab of ``hubs`` hubs has and ``state`` lacks; returns their names."""
    wanted = topology.hub_names(hubs)
    have = state.get('hubs', 1)
    added = []
    for name in wanted[have:]:
        add_hub(paths, name, build, say)
        added.append(name)
    return added
