# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  cluster_identity:
    description:
      - Which cluster the member is, recorded on its hub object as the annotations
        C(fleetops.registration/cluster-uid) and C(fleetops.registration/cluster-ca-sha256), as
        M(fleetops.registration.member_info) returns it (RV(fleetops.registration.member_info#module:identity)).
        Later runs of M(fleetops.registration.member_info) compare the member's cluster with it and refuse another
        cluster behind the same name.
      - The role C(member_join) passes it; unset, the annotations are left as they are.
    type: dict
    suboptions:
      uid:
        description: The UID of the member's C(kube-system) Namespace.
        type: str
      ca_sha256:
        description: The SHA-256 fingerprint (hex) of the member API server's CA.
        type: str
'''
