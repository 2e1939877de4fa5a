# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    # The attributes of every *_info module: they only read.
    DOCUMENTATION = r'''
attributes:
  check_mode:
    support: full
    description: The module only reads, so check mode gives the same answer.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
'''
