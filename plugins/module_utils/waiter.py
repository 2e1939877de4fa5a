# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting: a table of readiness predicates and one clock per module run.

Every wait a module does draws on the same ``wait_timeout``, so a task never
takes longer than the user allowed, however many things it waits for.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from typing import Any, Callable, Optional, Union

from ansible_collections.fleetops.registration.plugins.module_utils.errors import WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import condition


Predicate = Callable[[Any], bool]  # an API object (None when absent) -> whether the wait is over


def secret_has(key: str) -> Predicate:
    """A predicate: the Secret exists and holds ``key``."""
    return lambda obj: bool(obj and ((obj.get("data") or {}).get(key)))


def condition_true(cond_type: str) -> Predicate:
    """A predicate: the object's condition ``cond_type`` is True."""
    return lambda obj: condition(obj, cond_type).get("status") == "True"


# The predicates every manager may wait on, by name; a manager's own (its conditions, its check-in) live in its package.
PREDICATES = {
    # kube-controller-manager fills service-account-token Secrets asynchronously (kubefleet#296).
    "service_account_token": secret_has("token"),
    "absent": lambda obj: obj is None,
}


# The first look again comes after this long, and each pause is that much longer than the one before, up to
# wait_sleep: what a join waits for is there within a second (a MemberCluster's ReadyToJoin, a service-account token)
# or two (Fleet's values Secret for a new token, ~2.1 s on the lab), and a fixed 2 s pause made each such wait take
# 2 s or 4 s; looks at 0.25, 0.75, 1.5 and 2.5 s, then every wait_sleep.
FIRST_PAUSE = 0.25


class Waiter:
    """One clock: all waits of a module run share ``timeout`` seconds."""

    def __init__(self, timeout: float, sleep: float = 2, clock: Callable[[], float] = time.monotonic,
                 sleeper: Callable[[float], Any] = time.sleep, on_wait: Optional[Callable[[], Any]] = None,
                 after_wait: Optional[Callable[[], Any]] = None) -> None:
        self.timeout = timeout
        self.sleep = max(0.05, sleep)
        self.clock = clock
        self.sleeper = sleeper
        self.started = clock()
        self.on_wait = on_wait
        self.after_wait = after_wait

    @property
    def remaining(self) -> float:
        return max(0.0, self.timeout - (self.clock() - self.started))

    def within(self, seconds: float) -> "Waiter":
        """A shorter clock of ``seconds`` (at most what is left of this one), with this one's pauses and hooks."""
        return Waiter(min(seconds, self.remaining), self.sleep, clock=self.clock, sleeper=self.sleeper, on_wait=self.on_wait,
                      after_wait=self.after_wait)

    def until(self, fetch: Callable[[], Any], predicate: Union[str, Predicate], what: str, hint: Optional[str] = None) -> Any:
        """Call ``fetch()`` until ``predicate`` (a PREDICATES name or a callable) holds; return the last value.

        ``after_wait`` is called before a value that took a pause is returned (what a module does next may rest on
        something another run changed meanwhile); a value there at the first look returns at once.
        """
        check = PREDICATES[predicate] if isinstance(predicate, str) else predicate
        if self.on_wait is not None:
            self.on_wait()  # what is waited for changes on the server: no answer from a list read before
        pause = min(FIRST_PAUSE, self.sleep)
        paused = False
        while True:
            value = fetch()
            if check(value):
                if paused and self.after_wait is not None:
                    self.after_wait()
                return value
            if self.remaining <= 0:
                raise WaitTimeout("timed out after %ds waiting for %s" % (self.timeout, what),
                                  hint or "Raise wait_timeout, or look at the controller that should act", last=value)
            self.sleeper(min(pause, self.remaining))
            paused = True
            pause = min(pause + FIRST_PAUSE, self.sleep)


class Nudge:
    """``touch()`` at most every ``every`` seconds while a wait goes on (the first time at once when ``at_once``).

    Controllers act on watch events; one that missed an event (a watch broken around an API server restart, say)
    handles the object again when it changes, so a wait touches the object it waits on instead of waiting for a
    resync that may be hours away.
    """

    def __init__(self, touch: Callable[[], Any], every: float, at_once: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.touch = touch
        self.every = every
        self.clock = clock
        self.last = None if at_once else clock()
        self.count = 0

    def __call__(self) -> None:
        now = self.clock()
        if self.last is None or now - self.last >= self.every:
            self.touch()
            self.last = now
            self.count += 1
