# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure parts of moving the member-agent release's records out of ``default`` (release_move)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import json

from ansible_collections.fleetops.registration.plugins.module_utils.helm import decode_release, encode_release
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import CLUSTER_RBAC_KINDS, NAMESPACED_KINDS, AgentObjects
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.release_move import (
    MOVED_FROM_LABEL, RESOURCES, moved, moved_copy, owned_objects, pending_move,
)
from test_helm_records import MEMBER_AGENT

# The member-agent chart's objects (as test_helm_records renders them) and one object it does not make.
MANIFEST = MEMBER_AGENT + """---
apiVersion: v1
kind: ConfigMap
metadata: {name: planted, namespace: kube-system}
"""


def record(revision, namespace="default", labels=None):
    payload = {"name": "member-agent", "namespace": namespace, "version": revision, "manifest": MANIFEST,
               "info": {"status": "deployed"}, "config": {"config": {"hubURL": "https://hub:6443"}}}
    base = {"name": "member-agent", "owner": "helm", "status": "deployed", "version": str(revision)}
    return {"type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.member-agent.v%d" % revision, "namespace": namespace,
                         "labels": dict(base, **(labels or {})), "uid": "x", "resourceVersion": "7"},
            "data": {"release": encode_release(payload)}}


def test_encode_release_is_what_helm_decodes():
    payload = {"name": "member-agent", "version": 3, "config": {"a": 1}}
    raw = base64.b64decode(base64.b64decode(encode_release(payload)))
    assert raw[:2] == b"\x1f\x8b"  # gzip, as Helm writes it
    assert json.loads(gzip.decompress(raw)) == payload
    assert decode_release(encode_release(payload)) == payload


def test_a_copy_keeps_the_record_and_names_its_new_namespace_and_where_it_came_from():
    copy = moved_copy(record(2), "fleet-hub-credentials")
    assert copy["metadata"] == {"name": "sh.helm.release.v1.member-agent.v2", "namespace": "fleet-hub-credentials",
                                "labels": {"name": "member-agent", "owner": "helm", "status": "deployed", "version": "2",
                                           MOVED_FROM_LABEL: "default"}}
    assert copy["type"] == "helm.sh/release.v1"
    payload = decode_release(copy["data"]["release"])
    assert payload["namespace"] == "fleet-hub-credentials"
    assert dict(payload, namespace="default") == decode_release(record(2)["data"]["release"])
    assert moved(copy) and not moved(record(2))


def test_records_move_only_next_to_copies_of_their_own():
    legacy = {1: record(1), 2: record(2)}
    assert pending_move(legacy, {}, "default")
    assert pending_move(legacy, {1: moved_copy(record(1), "fleet-hub-credentials")}, "default")  # a move that stopped
    installed_there = record(1, "fleet-hub-credentials")
    assert not pending_move(legacy, {1: installed_there}, "default")  # a release of its own there: default's are not ours
    assert not pending_move({}, {}, "default")


def test_every_kind_an_agent_chart_may_make_can_be_re_annotated():
    assert (NAMESPACED_KINDS | CLUSTER_RBAC_KINDS | {"Namespace"}) <= set(RESOURCES)


def test_only_the_agent_charts_objects_are_re_annotated():
    agent = AgentObjects("fleet-system", ("member-agent",))
    payload = decode_release(record(1)["data"]["release"])
    found = [(resource.kind, namespace, name) for resource, namespace, name in owned_objects(payload, "default", agent)]
    assert found == [("Namespace", None, "fleet-system"), ("ServiceAccount", "fleet-system", "member-agent-sa"),
                     ("ClusterRoleBinding", None, "member-agent-cluster-admin-binding"), ("Deployment", "fleet-system", "member-agent")]
