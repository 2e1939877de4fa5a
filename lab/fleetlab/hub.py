"""Installs the fleet controllers on the hub (and what members need) with Helm and kubectl.

Rancher Fleet (github.com/rancher/fleet v0.16.0):
  - ``fleet-crd`` chart, then the ``fleet`` chart into ``cattle-fleet-system`` with ``--no-hooks``
    (the migration Jobs never finish without a kubelet). Values: the hub's ``apiServerURL`` and
    ``apiServerCA``, a short ``agentCheckinInterval``, and off: ``bootstrap`` (no ``fleet-local``
    cluster and no local agent on the hub), ``gitops`` (gitjob) and ``helmops``; the collection
    registers downstream clusters and needs neither.
  - ``manageAgent`` stays on (the default; the v0.16.0 chart has no value for it although the
    controller's config knows the key). With it off, manager-initiated import never finishes in
    v0.16.0 (the import handler waits for the ``fleet-agent-<cluster>`` bundle that only the
    manageagent controller creates), and the agent bundles do become ready in the lab because the
    agent runner realises the Deployments they contain.
  - the chart's ``fleet-controller`` Deployment (containers fleet-controller, fleet-cleanup,
    fleet-agentmanagement, image rancher/fleet) is realised by the agent runner as host processes.
KubeFleet (go.goms.io/fleet v0.14.0, stand-in for kubefleet-dev/kubefleet, see docs):
  - CRDs from ``config/crd/bases`` applied directly (the charts' CRD templates read symlinked files
    that module zips drop): hub side on the hub, ``appliedworks`` on every member.
  - the ``hub-agent`` chart (release ``hub-agent`` in ``default``; it creates ``fleet-system``)
    with webhooks and guard rail off, realised by the runner (metrics/probe listeners off).
"""

import json
import os
import subprocess
import time

import yaml

from fleetlab.paths import write_private
from fleetlab.podspec import CHECKIN_INTERVAL
from fleetlab.processes import LabError

FLEET_NAMESPACE = 'cattle-fleet-system'
KUBEFLEET_NAMESPACE = 'fleet-system'
KUBEFLEET_IMAGE_TAG = 'v0.14.0'
FLEET_IMAGE_TAG = 'v0.16.0'


class Tools:
    """helm and kubectl bound to the lab kubeconfig, with Helm's state inside the lab directory."""

    def __init__(self, paths, binaries):
        self.paths = paths
        self.helm_bin = str(binaries['helm'])
        self.kubectl_bin = str(binaries['kubectl'])
        helm_home = paths.work / 'helm'
        self.env = dict(os.environ)
        # KUBECACHEDIR: kubectl's and helm's discovery cache stays in the lab directory (down removes it)
        self.env.update({'KUBECONFIG': str(paths.kubeconfig), 'KUBECACHEDIR': str(paths.work / 'kube-cache'),
                         'HELM_CACHE_HOME': str(helm_home / 'cache'),
                         'HELM_CONFIG_HOME': str(helm_home / 'config'), 'HELM_DATA_HOME': str(helm_home / 'data')})

    def _run(self, argv, what, stdin=None, timeout=300):
        try:
            proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=self.env, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise LabError('%s timed out after %ds' % (what, timeout)) from exc
        if proc.returncode != 0:
            raise LabError('%s failed (exit %d):\n%s' % (what, proc.returncode, (proc.stderr or proc.stdout)[-3000:]))
        return proc.stdout

    def helm(self, context, *args, what=None):
        """Run helm against a lab context."""
        return self._run([self.helm_bin, '--kube-context', context] + list(args), what or 'helm %s' % ' '.join(args[:2]))

    def kubectl(self, context, *args, stdin=None, what=None):
        """Run kubectl against a lab context."""
        return self._run([self.kubectl_bin, '--context', context] + list(args), what or 'kubectl %s' % ' '.join(args[:2]), stdin=stdin)


def _values_file(paths, hub, name, values):
    # the first hub keeps the file names it always had
    path = paths.work / ('%s-values.yaml' % (name if hub.name == 'hub' else '%s-%s' % (hub.name, name)))
    write_private(path, yaml.safe_dump(values))
    return str(path)


def fleet_values(hub):
    """Values for the fleet chart on the hub."""
    return {'apiServerURL': hub.url, 'apiServerCA': hub.ca_pem(), 'agentCheckinInterval': CHECKIN_INTERVAL,
            'image': {'repository': 'rancher/fleet', 'tag': FLEET_IMAGE_TAG},
            'agentImage': {'repository': 'rancher/fleet-agent', 'tag': FLEET_IMAGE_TAG},
            'bootstrap': {'enabled': False}, 'gitops': {'enabled': False}, 'helmops': {'enabled': False},
            'metrics': {'enabled': False}, 'debug': False}


def install_fleet(tools, hub, build):
    """Fleet CRDs and controllers on the hub (no wait)."""
    tools.helm(hub.name, 'upgrade', '--install', 'fleet-crd', str(build.fleet_chart('fleet-crd')),
               '--namespace', FLEET_NAMESPACE, '--create-namespace', '--no-hooks', what='helm install fleet-crd')
    values = _values_file(tools.paths, hub, 'fleet', fleet_values(hub))
    tools.helm(hub.name, 'upgrade', '--install', 'fleet', str(build.fleet_chart('fleet')),
               '--namespace', FLEET_NAMESPACE, '--no-hooks', '-f', values, what='helm install fleet')


def apply_crds(tools, context, files):
    """Server-side apply of CRD files (their size exceeds client-side apply's annotation limit)."""
    args = ['apply', '--server-side', '--force-conflicts', '--field-manager=fleetlab']
    for path in files:
        args += ['-f', str(path)]
    tools.kubectl(context, *args, what='apply CRDs on %s' % context)


def kubefleet_values():
    """Values for the KubeFleet hub-agent chart."""
    return {'image': {'repository': 'ghcr.io/azure/fleet/hub-agent', 'tag': KUBEFLEET_IMAGE_TAG, 'pullPolicy': 'IfNotPresent'},
            'enableWebhook': False, 'enableGuardRail': False, 'logVerbosity': 2,
            'enableV1Alpha1APIs': False, 'enableV1Beta1APIs': True, 'namespace': KUBEFLEET_NAMESPACE}


def install_kubefleet_hub(tools, hub, build):
    """KubeFleet CRDs and hub agent on the hub (no wait)."""
    apply_crds(tools, hub.name, build.kubefleet_crds('hub'))
    values = _values_file(tools.paths, hub, 'hub-agent', kubefleet_values())
    tools.helm(hub.name, 'upgrade', '--install', 'hub-agent', str(build.kubefleet_chart('hub-agent')),
               '--namespace', 'default', '-f', values, what='helm install hub-agent')


def install_hub_controllers(tools, hub, build):
    """Fleet and KubeFleet on one hub (no wait): each hub has controllers of its own."""
    install_fleet(tools, hub, build)
    install_kubefleet_hub(tools, hub, build)


HUB_CONTROLLERS = [(FLEET_NAMESPACE, 'fleet-controller'), (KUBEFLEET_NAMESPACE, 'hub-agent')]


def wait_hub_controllers(tools, hub, timeout, runner_check):
    """Wait until the hub's Fleet controller and KubeFleet hub agent Deployments are available."""
    wait_deployments(tools, hub.name, HUB_CONTROLLERS, timeout, runner_check)


def prepare_member(tools, member, build):
    """Member-side CRDs the KubeFleet member agent expects (its chart cannot install them, see above)."""
    apply_crds(tools, member.name, build.kubefleet_crds('member'))


def deployment_available(tools, context, namespace, name):
    """True when the Deployment reports all replicas available (written by the real controllers)."""
    try:
        raw = tools.kubectl(context, '-n', namespace, 'get', 'deployment', name, '-o', 'json')
    except LabError:
        return False
    dep = json.loads(raw)
    want = dep['spec'].get('replicas', 1)
    status = dep.get('status') or {}
    return status.get('observedGeneration', 0) >= dep['metadata']['generation'] and status.get('availableReplicas', 0) >= want


def wait_deployments(tools, context, deployments, timeout, runner_check):
    """Wait for (namespace, name) Deployments to become available; ``runner_check()`` raises if the runner died."""
    deadline = time.monotonic() + timeout
    pending = list(deployments)
    while pending:
        runner_check()
        pending = [d for d in pending if not deployment_available(tools, context, *d)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise LabError('%s: deployments not available after %ds: %s (see .lab/logs/%s/ and .lab/logs/runner.log)'
                           % (context, timeout, ', '.join('/'.join(d) for d in pending), context))
        time.sleep(0.5)
