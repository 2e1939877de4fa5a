# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet (cluster.kubernetes-fleet.io/v1beta1), private to this collection.

- ``resources``: the API objects, names and constants the code relies on;
- ``rules``: pure decisions (identity, MemberCluster changes, chart values, the agent's plan);
- ``views``: MemberCluster status as modules and the manager report it;
- ``hub_access``: the hub as the member agent sees it (URL, CA, token check);
- ``identity``, ``member_cluster``, ``agent``: one runner per module;
- ``manager``: the ``FleetManager`` the registry names.

What the code relies on, read from go.goms.io/fleet v0.14.0 (Azure/fleet, whose
cluster.kubernetes-fleet.io/v1beta1 API KubeFleet kept):

- For each MemberCluster the hub agent creates the namespace ``fleet-member-<name>``
  (owned by the MemberCluster), a Role and RoleBinding there for ``spec.identity``,
  an InternalMemberCluster, and adds the finalizer
  ``kubernetes-fleet.io/membercluster-finalizer``.
- On delete it sets the InternalMemberCluster to ``Leave``, waits until the member
  agent reports ``Joined=False`` (or ``--force-delete-wait-time``, 15 minutes by
  default), strips ``kubernetes-fleet.io/work-cleanup`` from the Works in the
  namespace, deletes the namespace and only then drops its finalizer.
- The member-agent chart runs the agent with ``HUB_SERVER_URL``,
  ``MEMBER_CLUSTER_NAME`` and ``HUB_CERTIFICATE_AUTHORITY`` (base64 PEM, honoured
  unless ``tlsClientInsecure``), plus a refresh-token sidecar that copies key
  ``token`` of Secret ``secret.namespace``/``secret.name`` into the agent's token file.
  The chart itself templates the Namespace ``.Values.namespace``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
