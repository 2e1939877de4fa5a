"""The agent runner: a minimal kubelet for the images the lab can build.

The lab has no kubelet, no scheduler and no container engine, so a Pod stays Pending forever.
The runner (one background process for all lab clusters) watches every cluster's Pods. A Pod that
is not bound to a node and whose every container image repository is in
``build.IMAGE_BINARIES`` is *realised*: each container runs as a host process of the matching
locally built binary, the way a kubelet would run it:

- argv: ``[binary] + command[1:] + args`` (the binary stands in for the image's entrypoint or for
  ``command[0]``), with ``$(VAR)`` references expanded as Kubernetes does;
- env: the container's ``env`` and ``envFrom``; ``valueFrom`` ``fieldRef`` (metadata.name,
  metadata.namespace, metadata.uid, labels/annotations, spec.serviceAccountName, spec.nodeName,
  status.hostIP/podIP), ``secretKeyRef``, ``configMapKeyRef`` and ``resourceFieldRef`` are
  resolved; ``HOSTNAME`` is the pod name, ``HOME`` the container's root directory;
- ``KUBECONFIG`` names a per-pod kubeconfig for the pod's own cluster that authenticates with a
  token minted by TokenRequest for the pod's ServiceAccount (bound to the Pod, so it dies with it),
  refreshed before expiry through ``tokenFile``: the process has exactly the rights its chart
  grants;
- volumes are materialised under the pod directory (emptyDir; secret and configMap items with
  mode 0600; projected service-account tokens, configMaps and downwardAPI; hostPath becomes an
  empty directory). Each container gets a root directory in which every ``mountPath`` is a
  symlink to its volume (``subPath`` honoured); args and env values that name a mount path (such
  as ``CONFIG_PATH=/config/token``) are rewritten to the host path, ``TMPDIR`` points at the
  container's ``/tmp``;
- several agents share one host, so per-binary ``HOST_SETTINGS`` turn metrics, health-probe and
  pprof listeners off (port 0) and make implicit default paths explicit so they get mapped.

Pod status: once every container has run for a moment the runner writes the Pod's status through
the ``pods/status`` subresource like a kubelet (phase Running, conditions Initialized,
ContainersReady and Ready, containerStatuses). The real ReplicaSet and Deployment controllers then
compute ``readyReplicas``/``availableReplicas``, so ``helm --wait`` and readiness checks behave as
on a real cluster. A container that exits is restarted with back-off (restartCount, lastState and
Ready=False are reported meanwhile).

A Pod with an image the lab has no binary for is reported as a kubelet reports an image it cannot
pull (``ErrImagePull``, then ``ImagePullBackOff``, with the kubelet's Events; see ``imagepull``), so
that fault can be injected by setting a Deployment's image to, say,
``registry.invalid/fleet-agent:missing``, and a Pod of the fixed Deployment is realised as usual.
Pods with init containers are left alone (Pending without status).

Lifecycle follows the Pod: ``helm upgrade`` that changes the pod template rolls out a new Pod
(new processes with the new env) and the old Pod's deletion stops the old ones; deleting the
Deployment or uninstalling the release deletes its Pods (garbage collection) and stops them.
Logs go to ``.lab/logs/<cluster>/<namespace>.<pod>.<container>.log``.

A cluster added to ``state.json`` while the runner runs (a second hub added to a running lab) is watched from then
on, once the kubeconfig names it; nothing else restarts.

Where each concern lives: ``kubeapi`` (Kubernetes API access), ``podspec`` (pure pod spec ->
process rules), ``imagepull`` (pure status and Events of a Pod whose image cannot be pulled),
``sandbox`` (the pod's directory, tokens, volumes and mounts), ``supervisor`` (start, restart,
status, stop of one pod's processes) and this module (watching every cluster's Pods, deciding
which to realise and reporting those it cannot pull).
"""

import json
import logging
import shutil
import signal
import sys
import threading
import time

from fleetlab import imagepull, processes
from fleetlab import state as labstate
from fleetlab.kubeapi import ClusterAPI
from fleetlab.paths import LabPaths
from fleetlab.podspec import lookup_binary
from fleetlab.supervisor import STOP_GRACE, ContainerRun, PodRun, now_rfc3339

LOG = logging.getLogger('fleetlab.runner')

SHUTDOWN_GRACE = 3.0   # runner shutdown (lab down): KubeFleet's hubagent ignores SIGTERM


class UnpulledPod:
    """A pod with an image the lab cannot pull, reported as a kubelet reports it (rules in ``imagepull``)."""

    def __init__(self, cluster, pod, missing):
        self.cluster = cluster
        self.pod = pod
        self.missing = missing
        self.first = time.monotonic()
        self.since = now_rfc3339()
        self.reported = None   # last status written (JSON)
        self.events = {}       # (container, reason, message) -> [event name, count]

    def report(self, api):
        """Write the pod status when it changed and the Events that are due (main loop)."""
        meta = self.pod['metadata']
        containers = self.pod['spec'].get('containers') or []
        elapsed = time.monotonic() - self.first
        status = imagepull.pod_status(containers, self.missing, elapsed, self.since)
        signature = json.dumps(status, sort_keys=True)
        if signature != self.reported:
            api.patch_pod_status(meta['namespace'], meta['name'], status)
            self.reported = signature
            LOG.info('%s %s/%s: reported %s', self.cluster, meta['namespace'], meta['name'],
                     ', '.join('%s %s' % (s['name'], s['state']['waiting']['reason']) for s in status['containerStatuses']))
        for wanted in imagepull.wanted_events(self.missing, elapsed):
            key, count = (wanted[0], wanted[2], wanted[3]), wanted[4]
            recorded = self.events.get(key)
            if recorded is not None and recorded[1] >= count:
                continue
            stamp = now_rfc3339()
            if recorded is None or not api.patch_event(meta['namespace'], recorded[0], {'count': count, 'lastTimestamp': stamp}):
                name = '%s.%x' % (meta['name'], time.time_ns())
                api.create_event(meta['namespace'], imagepull.event_body(self.pod, wanted, name, stamp, stamp))
                recorded = self.events[key] = [name, count]
            recorded[1] = count


class Runner:
    """Supervises realised pods of every lab cluster."""

    def __init__(self, paths, clusters, kubeconfig, image_binaries, binaries):
        self.paths = paths
        self.clusters = clusters
        self.kubeconfig = kubeconfig
        self.image_binaries = image_binaries
        self.binaries = binaries
        self.apis = {name: ClusterAPI(name, kubeconfig, name) for name in clusters}
        self.lock = threading.Lock()
        self.pods = {}         # (cluster, uid) -> PodRun
        self.seen = {}         # (cluster, uid) -> pod dict (latest)
        self.unpulled = {}     # (cluster, uid) -> UnpulledPod
        self.stopping = threading.Event()
        self.next_cluster_check = 0.0

    @staticmethod
    def candidate(pod):
        """True for a pod a kubelet of this lab would handle: not bound, not being deleted, not finished, no init containers."""
        spec = pod.get('spec') or {}
        if spec.get('nodeName') or pod['metadata'].get('deletionTimestamp'):
            return False
        if (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed'):
            return False
        return not spec.get('initContainers') and bool(spec.get('containers'))

    def missing_images(self, pod):
        """Containers of a candidate pod whose image the lab cannot run (see ``imagepull.missing_images``)."""
        return imagepull.missing_images(pod['spec']['containers'], self.image_binaries, self.binaries)

    def eligible(self, pod):
        """ContainerRuns for a pod the runner can realise, else None."""
        if not self.candidate(pod) or self.missing_images(pod):
            return None
        runs = []
        for container in pod['spec']['containers']:
            name = lookup_binary(container.get('image', ''), self.image_binaries)
            runs.append(ContainerRun(container, name, self.binaries[name]))
        return runs

    def on_pod(self, cluster, pod):
        """Watch event: pod added or modified."""
        key = (cluster, pod['metadata']['uid'])
        with self.lock:
            self.seen[key] = pod
            current = self.pods.get(key)
            if current is not None:
                current.pod = pod
                if pod['metadata'].get('deletionTimestamp'):
                    self.pods.pop(key)
                    self._stop_later(current, pod)
                return
            missing = self.missing_images(pod) if self.candidate(pod) else []
            unpulled = self.unpulled.pop(key, None)
            if missing:
                if unpulled is None or unpulled.missing != missing:
                    unpulled = UnpulledPod(cluster, pod, missing)
                unpulled.pod = pod
                self.unpulled[key] = unpulled
                return
            runs = self.eligible(pod)
            if runs:
                LOG.info('%s %s/%s: realising pod (%s)', cluster, pod['metadata']['namespace'], pod['metadata']['name'],
                         ', '.join('%s=%s' % (r.name, r.binary_name) for r in runs))
                self.pods[key] = PodRun(self, cluster, pod, runs)

    def on_pod_gone(self, cluster, uid):
        """Watch event: pod deleted."""
        key = (cluster, uid)
        with self.lock:
            self.seen.pop(key, None)
            self.unpulled.pop(key, None)
            current = self.pods.pop(key, None)
        if current is not None:
            self._stop_later(current, current.pod)

    def _stop_later(self, podrun, pod):
        grace = pod['spec'].get('terminationGracePeriodSeconds')
        grace = STOP_GRACE if grace is None else min(float(grace), STOP_GRACE)
        threading.Thread(target=self._stop_and_record, args=(podrun, grace), daemon=True).start()

    def _stop_and_record(self, podrun, grace):
        podrun.stop(grace)
        self.record_state()

    def resync(self, cluster, pods):
        """After a (re)list: forget pods that no longer exist."""
        uids = {p['metadata']['uid'] for p in pods}
        with self.lock:
            gone = [key for key in list(self.seen) if key[0] == cluster and key[1] not in uids]
        for key in gone:
            self.on_pod_gone(*key)
        for pod in pods:
            self.on_pod(cluster, pod)

    def watch_cluster(self, cluster):
        """Thread: list+watch the cluster's pods until stopped."""
        api = self.apis[cluster]
        while not self.stopping.is_set():
            try:
                listing = api.list_pods()
                items = listing.get('items') or []
                for item in items:
                    item.setdefault('kind', 'Pod')
                self.resync(cluster, items)
                version = listing['metadata']['resourceVersion']
                while not self.stopping.is_set():
                    version = self._watch_once(cluster, api, version)
                    if version is None:
                        break
            except Exception as exc:  # pylint: disable=broad-except
                if not self.stopping.is_set():
                    LOG.warning('%s: pod watch failed (%s); relisting', cluster, exc)
                    self.stopping.wait(2)
                    api = self._reconnect(cluster, api)

    def _reconnect(self, cluster, api):
        """A client made again from the kubeconfig (a cluster rebuilt with a new CA, ``rebuild --new-ca``); the
        one it had when the kubeconfig cannot be read."""
        try:
            self.apis[cluster] = ClusterAPI(cluster, self.kubeconfig, cluster)
        except Exception as exc:  # pylint: disable=broad-except
            LOG.info('%s: kept the old client (%s)', cluster, exc)
            return api
        return self.apis[cluster]

    def _watch_once(self, cluster, api, version):
        resp = api.watch_pods(version)
        try:
            buffer = b''
            for chunk in resp.stream(4096, decode_content=False):
                if self.stopping.is_set():
                    return None
                buffer += chunk
                while b'\n' in buffer:
                    line, buffer = buffer.split(b'\n', 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get('object') or {}
                    kind = event.get('type')
                    if kind == 'ERROR':
                        return None  # expired resource version: relist
                    version = (obj.get('metadata') or {}).get('resourceVersion', version)
                    if kind == 'BOOKMARK':
                        continue
                    if kind == 'DELETED':
                        self.on_pod_gone(cluster, obj['metadata']['uid'])
                    else:
                        self.on_pod(cluster, obj)
        finally:
            resp.release_conn()
        return version

    def _start_watch(self, cluster):
        threading.Thread(target=self.watch_cluster, args=(cluster,), daemon=True, name='watch-%s' % cluster).start()

    def watch_new_clusters(self, interval=2.0):
        """Watch the clusters added to state.json since the runner started (a hub added to a running lab); checked
        every ``interval`` seconds. A cluster the kubeconfig does not name yet is tried again at the next check."""
        if time.monotonic() < self.next_cluster_check:
            return []
        self.next_cluster_check = time.monotonic() + interval
        current = labstate.load(self.paths) or {}
        added = []
        for name in current.get('clusters', {}):
            if name in self.apis:
                continue
            try:
                self.apis[name] = ClusterAPI(name, self.kubeconfig, name)
            except Exception as exc:  # pylint: disable=broad-except
                LOG.info('%s: not watched yet (%s)', name, exc)
                continue
            with self.lock:
                self.clusters.append(name)
            self._start_watch(name)
            added.append(name)
            LOG.info('runner watching %s too', name)
        return added

    def record_state(self):
        """Write the agent processes per cluster into state.json."""
        with self.lock:
            agents = {name: [] for name in self.clusters}
            for (cluster, _uid), podrun in self.pods.items():
                for run in podrun.containers:
                    if run.entry:
                        agents[cluster].append(dict(run.entry))

        def apply(current):
            for name, cluster in current.get('clusters', {}).items():
                cluster['agents'] = agents.get(name, [])
        labstate.update(self.paths, apply)

    def run(self):
        """Main loop (returns when stopped by SIGTERM/SIGINT)."""
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self.stopping.set())
        self.kill_stale()
        for cluster in self.clusters:
            self._start_watch(cluster)
        LOG.info('runner watching %s', ', '.join(self.clusters))
        while not self.stopping.is_set():
            self.watch_new_clusters()
            changed = False
            with self.lock:
                current = list(self.pods.values())
                unpulled = list(self.unpulled.values())
            for podrun in current:
                try:
                    changed = podrun.supervise() or changed
                except Exception as exc:  # pylint: disable=broad-except
                    LOG.warning('%s %s: %s', podrun.cluster, podrun.label(), exc)
            for pod in unpulled:
                try:
                    pod.report(self.apis[pod.cluster])
                except Exception as exc:  # pylint: disable=broad-except
                    LOG.warning('%s %s/%s: %s', pod.cluster, pod.pod['metadata']['namespace'], pod.pod['metadata']['name'], exc)
            if changed:
                self.record_state()
            self.stopping.wait(0.5)
        LOG.info('runner stopping')
        with self.lock:
            current = list(self.pods.values())
            self.pods.clear()
        threads = [threading.Thread(target=p.stop, args=(SHUTDOWN_GRACE,)) for p in current]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.record_state()

    def kill_stale(self):
        """Stop agent processes a previous runner left behind (recorded in state.json)."""
        current = labstate.load(self.paths) or {}
        for cluster in current.get('clusters', {}).values():
            for entry in cluster.get('agents', []):
                if processes.alive(entry):
                    LOG.warning('stopping stale agent process %s (pid %d)', entry['name'], entry['pid'])
                    processes.stop(entry, grace=2)
        shutil.rmtree(self.paths.pods, ignore_errors=True)
        self.record_state()


def main(paths=None):
    """Entry point of ``python -m fleetlab runner``."""
    paths = paths or LabPaths()
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(message)s', stream=sys.stderr)
    current = labstate.load(paths)
    if not current:
        LOG.error('no lab state in %s', paths.root)
        return 1
    runner = Runner(paths, list(current['clusters']), paths.kubeconfig, current['image_binaries'], current['binaries'])
    runner.run()
    return 0
