"""Kubernetes API access of the agent runner: one small raw-JSON client per lab cluster.

Admin credentials from the lab kubeconfig; pods are listed and watched as raw JSON (no model
objects), Secrets and ConfigMaps read for volumes and env, ServiceAccount tokens minted with
TokenRequest (bound to the pod), pod status written through the ``pods/status`` subresource, and
kubelet-like core/v1 Events recorded for pods.
"""

import calendar
import json
import os
import time

import yaml

from fleetlab.podspec import NotReadyYet

# lifetime of minted tokens (the API server's minimum is 600 s); re-minted at 60 % of it
TOKEN_SECONDS = max(600, int(os.environ.get('FLEETOPS_LAB_TOKEN_SECONDS', '3600')))


class ClusterAPI:
    """Small raw-JSON client for one cluster (admin credentials), built on the kubernetes client."""

    def __init__(self, name, kubeconfig, context):
        from kubernetes import client, config  # pylint: disable=import-outside-toplevel
        self.name = name
        self._client_mod = client
        self.api_client = config.new_client_from_config(config_file=str(kubeconfig), context=context)
        self.core = client.CoreV1Api(self.api_client)
        conf = self.api_client.configuration
        self.url = conf.host
        with open(kubeconfig, encoding='utf-8') as handle:
            kc = yaml.safe_load(handle)
        cluster_name = next(c['context']['cluster'] for c in kc['contexts'] if c['name'] == context)
        self.ca_data = next(c['cluster']['certificate-authority-data'] for c in kc['clusters'] if c['name'] == cluster_name)

    @staticmethod
    def _json(resp):
        return json.loads(resp.data)

    def list_pods(self):
        """All pods (raw dict list response)."""
        return self._json(self.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=30))

    def watch_pods(self, resource_version, timeout=240):
        """Raw streaming watch response of all pods."""
        return self.core.list_pod_for_all_namespaces(watch=True, resource_version=resource_version, allow_watch_bookmarks=True,
                                                     timeout_seconds=timeout, _preload_content=False,
                                                     _request_timeout=(10, timeout + 30))

    def secret(self, namespace, name):
        """Secret as dict, None if absent."""
        return self._get(self.core.read_namespaced_secret, name, namespace)

    def configmap(self, namespace, name):
        """ConfigMap as dict, None if absent."""
        return self._get(self.core.read_namespaced_config_map, name, namespace)

    def _get(self, func, name, namespace):
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            return self._json(func(name, namespace, _preload_content=False, _request_timeout=30))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def token(self, pod, audiences=None, seconds=TOKEN_SECONDS):
        """(token, expiry epoch) minted by TokenRequest for the pod's ServiceAccount, bound to the pod."""
        meta = pod['metadata']
        body = {'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenRequest',
                'spec': {'audiences': list(audiences or []), 'expirationSeconds': seconds,
                         'boundObjectRef': {'apiVersion': 'v1', 'kind': 'Pod', 'name': meta['name'], 'uid': meta['uid']}}}
        sa_name = pod['spec'].get('serviceAccountName') or 'default'
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            resp = self._json(self.core.create_namespaced_service_account_token(sa_name, meta['namespace'], body,
                                                                                _preload_content=False, _request_timeout=30))
        except ApiException as exc:
            if exc.status in (403, 404):
                raise NotReadyYet('token for serviceaccount "%s": %s' % (sa_name, exc.reason)) from exc
            raise
        expiry = time.time() + seconds
        stamp = resp.get('status', {}).get('expirationTimestamp')
        if stamp:
            expiry = calendar.timegm(time.strptime(stamp, '%Y-%m-%dT%H:%M:%SZ'))
        return resp['status']['token'], expiry

    def patch_pod_status(self, namespace, name, status):
        """Strategic-merge patch of the pod's status subresource (404 ignored)."""
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            self.core.patch_namespaced_pod_status(name, namespace, {'status': status}, _preload_content=False, _request_timeout=30)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def create_event(self, namespace, body):
        """Create a core/v1 Event."""
        self.core.create_namespaced_event(namespace, body, _preload_content=False, _request_timeout=30)

    def patch_event(self, namespace, name, patch):
        """Strategic-merge patch of a core/v1 Event (count, lastTimestamp); False if it is gone (expired or deleted)."""
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            self.core.patch_namespaced_event(name, namespace, patch, _preload_content=False, _request_timeout=30)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True
