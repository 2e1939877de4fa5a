# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    # The modules whose action runs their code in the controller's process (plugin_utils/controller_run.py).
    DOCUMENTATION = r'''
attributes:
  action:
    support: full
    description: Its action plugin runs the module's code in the controller's process where the module would run on the
      controller anyway (see the notes).
notes:
  - Where the module would run on the controller anyway - C(ansible_connection=local) with C(ansible_python_interpreter)
    set to the controller's Python (C({{ ansible_playbook_python }}), as the collection's inventories have it) - its
    code runs in the controller's process instead of a module process of its own, unless the task uses C(become),
    C(delegate_to), C(async) or C(environment). The options, check mode, the answer and what is masked are the same;
    the result has no C(invocation). With C(-vvv) each task says which way it ran.
'''
