"""Unit tests of the soak's pure parts (bench/soak_faults.py, bench/soak_judge.py): a round's faults come from the seed
and the round alone, files holding a credential are told from others, and each outcome gets its verdict."""

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench'))

import soak_faults as faults  # noqa: E402  pylint: disable=wrong-import-position
import soak_judge as judge  # noqa: E402  pylint: disable=wrong-import-position


def test_a_round_s_faults_come_from_the_seed_and_its_number_alone_so_a_round_replays():
    first = [(kind.name, member, at) for kind, member, at in faults.choose(7, 3)]
    assert first == [(kind.name, member, at) for kind, member, at in faults.choose(7, 3)]
    rounds = [[kind.name for kind, _m, _a in faults.choose(7, number)] for number in range(1, 41)]
    assert len(set(tuple(r) for r in rounds)) > 20 and all(1 <= len(r) <= 2 and len(set(r)) == len(r) for r in rounds)
    assert set(name for r in rounds for name in r) - set(faults.KINDS) == set()
    assert all(member in ("member1", "member2", "member3") and isinstance(at, int) and 1 <= at <= 20
               for number in range(1, 41) for _k, member, at in faults.choose(7, number))


def test_the_catalogue_has_fourteen_kinds_at_least_each_with_a_step_or_a_delay():
    assert len(faults.CATALOGUE) >= 14 and len(faults.KINDS) == len(faults.CATALOGUE)
    assert all(kind.before or kind.during or kind.delay_ms for kind in faults.CATALOGUE)
    assert [kind.name for kind in faults.CATALOGUE if kind.settle] == ["fleet_agent_frozen", "kubefleet_agent_frozen"]


def test_a_latency_fault_puts_the_round_s_runs_behind_a_50_ms_round_trip_and_no_other_fault_does():
    latency = faults.KINDS["latency_50ms_for_the_round"]
    other = faults.KINDS["fleet_agent_deleted"]
    assert faults.round_delay_ms([(latency, "member1", 3.0), (other, "member2", 5.0)]) == 25
    assert faults.round_delay_ms([(other, "member2", 5.0)]) == 0 and faults.round_delay_ms([]) == 0
    chosen = [number for number in range(1, 61) if faults.round_delay_ms(faults.choose(1, number))]
    assert chosen, "no round of seed 1 (1-60) draws the latency fault"


def test_a_file_holding_a_token_or_key_is_told_from_other_files(tmp_path):
    (tmp_path / "local" / "ansible-local-1").mkdir(parents=True)
    (tmp_path / "local" / "ansible-local-1" / "values.yaml").write_text("token: abc\n")
    (tmp_path / "kubeconfig").write_text("users:\n- user:\n    client-key-data: QUJD\n")
    (tmp_path / "AnsiballZ_member_info.py").write_text("print('module')\n")
    holding, others = judge.secret_files(tmp_path)
    assert holding == ["kubeconfig", "local/ansible-local-1/values.yaml"] and others == ["AnsiballZ_member_info.py"]


def _row(**changes):
    row = {"runs": 1, "missing_at_end": [], "absent_seconds": {}, "absence_by_design": False, "idempotent": True, "leftovers": []}
    row.update(changes)
    return row


def test_each_outcome_of_a_round_has_its_verdict():
    assert judge.verdict(_row()) == "ok"
    assert judge.verdict(_row(runs=None, idempotent=None)) == "NEVER converged"
    assert judge.verdict(_row(missing_at_end=["member1: soak-fleet"])) == "workload missing at the end"
    assert judge.verdict(_row(absent_seconds={"member1 soak-kf": 3.0})) == "workload absent"
    assert judge.verdict(_row(absent_seconds={"member1 soak-kf": 3.0}, absence_by_design=True)) == "ok"
    assert judge.verdict(_row(idempotent=False)) == "converged, re-run changed something"
    assert judge.verdict(_row(untouched_changed=["member3"])) == "changes on members the fault did not touch"
    assert judge.verdict(_row(leftovers=["member lock fleetops-member-member1"])) == "converged, left something"


def test_a_fault_that_could_not_be_applied_is_not_counted_as_a_try_of_its_kind(capsys):
    import soak  # pylint: disable=import-outside-toplevel  # the runner: its report is pure

    planted = {"kind": "lock_of_a_dead_run_elsewhere", "member": "member1", "at_task": None}
    rows = [_row(round=1, faults=[planted], not_applied=["lock_of_a_dead_run_elsewhere"]),
            _row(round=2, faults=[planted], not_applied=[])]
    soak.print_report(rows)
    line = [text for text in capsys.readouterr().out.splitlines() if "lock_of_a_dead_run_elsewhere" in text][0]
    assert line.split()[1:] == ["1", "1", "0", "0", "0", "1"]


def test_a_fleet_check_in_is_judged_only_once_an_agent_had_the_time_to_make_one(monkeypatch):
    import soak  # pylint: disable=import-outside-toplevel
    clock = {"now": 1000.0}
    seen = []
    monkeypatch.setattr(soak.time, "time", lambda: clock["now"])
    monkeypatch.setattr(soak.time, "sleep", lambda seconds: clock.update(now=clock["now"] + seconds))
    monkeypatch.setattr(soak.judge, "converged", lambda fleet, since: seen.append(clock["now"] - since) or {})
    monkeypatch.setattr(soak, "still_frozen", lambda fleet: [])
    monkeypatch.setattr(soak.judge, "leftovers", lambda fleet: [])
    assert soak.judged(None, since=997.0) == {}  # a 3 s round: judged once two check-in intervals have passed
    assert soak.judged(None, since=900.0) == {}  # a long round: at once
    assert seen == [judge.CHECK_IN_WAIT, 109.0], seen


def test_what_a_run_left_on_the_hub_asks_for_a_second_run_once_the_members_converged(monkeypatch):
    import soak  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(soak.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(soak, "still_frozen", lambda fleet: [])
    monkeypatch.setattr(soak.judge, "leftovers", lambda fleet: ["member lock fleetops-member-member1"])
    monkeypatch.setattr(soak.judge, "converged", lambda fleet, since: {})
    assert soak.judged(None, since=0.0) == {"hub": ["left behind: member lock fleetops-member-member1"]}
    monkeypatch.setattr(soak.judge, "converged", lambda fleet, since: {"member2": ["kubefleet: not Joined"]})
    assert soak.judged(None, since=0.0) == {"member2": ["kubefleet: not Joined"]}  # the members first


def test_a_fault_within_the_run_comes_as_the_run_starts_its_chosen_task(tmp_path):
    import soak  # pylint: disable=import-outside-toplevel
    log = tmp_path / "run.log"
    assert soak.tasks_started(log) == 0  # not written yet
    log.write_text("PLAY [x]\n\nTASK [one] ***\nok: [m]\n\nTASK [two] ***\n")
    assert soak.tasks_started(log) == 2

    class Fleet:  # pylint: disable=too-few-public-methods
        def __init__(self):
            self.notes, self.not_applied, self.applied = [], [], []
            self.stopping = threading.Event()

        def note(self, text):
            self.notes.append(text)

    class Kind:  # pylint: disable=too-few-public-methods
        name = "hub_apiserver_killed_in_run"

        @staticmethod
        def during(fleet, member):
            fleet.applied.append(member)

    fleet = Fleet()
    soak._during(fleet, Kind, "member2", 2, log)  # pylint: disable=protected-access
    assert fleet.applied == ["member2"] and not fleet.not_applied
    fleet.stopping.set()  # the run ended before its third task
    soak._during(fleet, Kind, "member2", 3, log)  # pylint: disable=protected-access
    assert fleet.applied == ["member2"] and fleet.not_applied == ["hub_apiserver_killed_in_run"]
    assert "before its task 3" in fleet.notes[-1]


def test_rounds_take_kinds_in_turn_so_every_kind_comes_once_before_any_comes_twice():
    for seed in (1, 2150, 5000):
        stream = [kind.name for number in range(1, 61) for kind, _m, _a in faults.choose(seed, number)]
        for end in range(1, len(stream) + 1):
            counts = [stream[:end].count(name) for name in faults.KINDS]
            assert max(counts) - min(counts) <= 1, (seed, end)
        assert min(stream.count(name) for name in faults.KINDS) >= 60 // len(faults.CATALOGUE)
