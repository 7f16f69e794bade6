"""mha_lib.experiments.reproduce: checks that fail when they should, and true provenance."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mha_lib.experiments.reproduce import (
    PROVENANCE_FIELDS,
    Check,
    ReproductionError,
    kept_parts,
    load_results,
    provenance,
    save_results,
    start_parts,
    threads,
    verify,
)

REPO = Path(__file__).resolve().parents[2]
RESULTS = sorted((REPO / "scripts" / "results").glob("*.json"))


def test_check_compares_values_and_curves():
    assert Check("x", 1.0, 1.0005, 1e-3).holds
    assert not Check("x", 1.0, 1.002, 1e-3).holds
    assert Check("x", 1.0, 1.0, 0).holds
    curve = Check("c", [0.1, 0.2, 0.3], [0.1, 0.2, 0.31], 1e-3)
    assert curve.difference == pytest.approx(0.01) and not curve.holds
    assert Check("r", 101.0, 100.0, 0.011, relative=True).holds
    assert not Check("r", 102.0, 100.0, 0.011, relative=True).holds


def test_check_never_holds_on_nan_or_length_mismatch():
    assert math.isnan(Check("n", math.nan, 1.0, 1.0).difference)
    assert not Check("n", math.nan, 1.0, 1.0).holds
    assert not Check("n", [1.0, 2.0], [1.0], 1.0).holds
    assert not Check("n", [], [], 1.0).holds
    with pytest.raises(ValueError, match="tolerance"):
        Check("t", 1.0, 1.0, -1e-3)


def test_verify_raises_and_names_every_failure():
    good = Check("good", 1.0, 1.0, 0.0)
    assert verify([good]) == [good]
    with pytest.raises(ReproductionError) as info:
        verify([good, Check("bad one", 2.0, 1.0, 0.5), Check("bad two", [0.0], [1.0], 0.1)])
    message = str(info.value)
    assert "bad one" in message and "bad two" in message and "good" not in message
    assert isinstance(info.value, AssertionError)  # an exception a notebook cannot ignore
    with pytest.raises(ValueError, match="at least one"):
        verify([])


def test_provenance_records_this_checkout_and_torch():
    record = provenance(threads=1)
    assert set(PROVENANCE_FIELDS) <= set(record)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert record["git_commit"] == head
    assert record["torch"] == torch.__version__
    assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert record["threads"] == 1
    assert provenance()["threads"] == torch.get_num_threads()


def _provenance_in(clone: Path) -> dict:
    """provenance() as the clone's own mha_lib computes it, in a fresh interpreter."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import mha_lib; "
        "assert mha_lib.__file__.startswith(sys.argv[1]), mha_lib.__file__; "
        "from mha_lib.experiments.reproduce import provenance; print(json.dumps(provenance(1)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(clone)],
        cwd=clone / "notebooks", capture_output=True, text=True, check=True,
    )
    return json.loads(done.stdout)


def test_provenance_says_dirty_on_a_clone_with_uncommitted_code(tmp_path):
    """A real clone: clean, then an edit in the library, an untracked script, an edited
    result (not code) and an edited notebook (not code either)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    # The library under test is this working tree's, committed in the clone.
    shutil.rmtree(clone / "mha_lib")
    shutil.copytree(
        REPO / "mha_lib", clone / "mha_lib", ignore=shutil.ignore_patterns("__pycache__")
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A", "mha_lib"], cwd=clone, check=True)
    subprocess.run([*git, "commit", "--quiet", "--allow-empty", "-m", "code under test"],
                   cwd=clone, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    clean = _provenance_in(clone)
    assert (clean["git_commit"], clean["git_dirty"]) == (head, False)

    def restore():
        subprocess.run(["git", "checkout", "--quiet", "--", "."], cwd=clone, check=True)
        subprocess.run(["git", "clean", "--quiet", "-fd"], cwd=clone, check=True)

    heads = clone / "mha_lib" / "core" / "heads.py"
    heads.write_text(heads.read_text() + "\n# an uncommitted change\n")
    assert _provenance_in(clone)["git_dirty"] is True
    restore()
    (clone / "scripts" / "new_experiment.py").write_text("print('not committed')\n")
    assert _provenance_in(clone)["git_dirty"] is True
    restore()
    result = next((clone / "scripts" / "results").glob("*.json"))
    result.write_text(result.read_text() + "\n")
    (clone / "notebooks" / "scratch.ipynb").write_text("{}")
    assert _provenance_in(clone)["git_dirty"] is False


def test_provenance_outside_a_repository_says_unknown(tmp_path, monkeypatch):
    import mha_lib.experiments.reproduce as reproduce

    assert reproduce.code_state(tmp_path) is None
    monkeypatch.setattr(reproduce, "_PACKAGE", tmp_path)
    record = provenance()
    assert (record["git_commit"], record["git_dirty"]) == ("unknown", None)


def test_save_and_load_keep_provenance_per_part(tmp_path):
    path = tmp_path / "r.json"
    made = provenance()
    save_results(path, {"a": [1, 2], "b": {"x": 0.5}}, {"a": made, "b": made})
    data = load_results(path)
    assert data["a"] == [1, 2] and data["provenance"]["b"]["torch"] == torch.__version__
    with pytest.raises(ValueError, match=r"without provenance: \['b'\]"):
        save_results(path, {"a": 1, "b": 2}, {"a": made})
    with pytest.raises(ValueError, match="lacks"):
        save_results(path, {"a": 1}, {"a": {"torch": "2"}})

    path.write_text(json.dumps({"a": 1}))
    with pytest.raises(ValueError, match="records no provenance"):
        load_results(path)
    path.write_text(json.dumps({"a": 1, "b": 2, "provenance": {"a": made}}))
    with pytest.raises(ValueError, match="part 'b'"):
        load_results(path)


def test_kept_parts_say_where_they_came_from():
    made = {**provenance(), "git_commit": "0123456789abcdef", "cpu_capability": "AVX512"}
    old = {"a": 1, "b": 2, "provenance": {"a": made, "b": made}}
    parts, provs, lines = kept_parts(old, ["b", "missing"])
    assert parts == {"b": 2} and provs == {"b": made}
    (line,) = lines
    assert "'b'" in line and "0123456789" in line and "AVX512" in line
    with pytest.raises(ValueError, match="rerun it"):
        kept_parts({"a": 1, "provenance": {}}, ["a"])


def test_start_parts_keeps_the_parts_not_rerun(tmp_path, capsys):
    jobs = {"a": [1, 2], "b": [3]}
    results, provs, run = start_parts(tmp_path / "none.json", jobs, None)
    assert results == {"a": [], "b": []} and run == jobs and provs["a"]["threads"] == 1
    old = {**provenance(), "git_commit": "feedc0ffee"}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"a": ["old"], "b": ["old"], "provenance": {"a": old, "b": old}}))
    results, provs, run = start_parts(path, jobs, ["b"])
    assert results == {"a": ["old"], "b": []} and run == {"b": [3]}
    assert provs["a"]["git_commit"] == "feedc0ffee" != provs["b"]["git_commit"]
    assert "kept part 'a'" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown parts"):
        start_parts(path, jobs, ["c"])


def test_threads_restores_the_callers_count():
    before = torch.get_num_threads()
    with threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), threads(1):
        raise RuntimeError("restored even on error")
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="positive"):
        with threads(0):
            pass


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_committed_results_carry_clean_provenance(path):
    """Every committed part says which commit, torch, CPU and thread count made it."""
    data = load_results(path)
    for part, record in data["provenance"].items():
        assert record["git_dirty"] is False, f"{path.name}:{part} was made from uncommitted code"
        assert len(str(record["git_commit"])) == 40, f"{path.name}:{part}: no commit recorded"
        assert record["torch"].split("+")[0] == torch.__version__.split("+")[0]


def test_results_dir_is_found_from_the_working_directory_upwards(tmp_path, monkeypatch):
    from mha_lib.experiments.reproduce import RESULTS_ENV, committed, results_dir

    monkeypatch.delenv(RESULTS_ENV, raising=False)
    (tmp_path / "scripts" / "results").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    assert results_dir(tmp_path / "notebooks") == tmp_path / "scripts" / "results"
    monkeypatch.chdir(tmp_path / "notebooks")  # where a chapter runs
    assert results_dir() == (tmp_path / "scripts" / "results").resolve()
    save_results(results_dir() / "x.json", {"a": 1}, {"a": provenance()})
    assert committed("x.json")["a"] == 1
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "elsewhere"))
    assert results_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv(RESULTS_ENV)
    with pytest.raises(FileNotFoundError, match="scripts/results"):
        results_dir(Path("/"))


def test_rounded_for_a_committed_file():
    from mha_lib.experiments.reproduce import rounded

    data = {"a": [1.23456789, float("nan")], "b": (2.0000004, {"c": 123456.7}), "n": 3}
    assert rounded(data, decimals=6) == {"a": [1.234568, None], "b": [2.0, {"c": 123456.7}],
                                         "n": 3}  # fmt: skip
    assert rounded(data, digits=3) == {"a": [1.23, None], "b": [2.0, {"c": 123000.0}], "n": 3}
    assert rounded(data)["a"] == [1.23456789, None]  # NaN is not JSON
    with pytest.raises(ValueError, match="not both"):
        rounded(1.0, decimals=2, digits=2)


def test_parse_args_is_every_studys_command_line(tmp_path, monkeypatch):
    from mha_lib.experiments.reproduce import RESULTS_ENV, parse_args

    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    args = parse_args("A study.\n\nMore.", "s.json", parts=("a", "b"), argv=["--only", "b"])
    assert (args.out, args.processes, args.only) == (tmp_path / "s.json", 2, ["b"])
    assert parse_args("A study.", "s.json", argv=["--out", "o.json"]).out == Path("o.json")
    args = parse_args("A study.", "s.json", processes=None, threads=2, argv=[])
    assert args.threads == 2 and not hasattr(args, "processes") and not hasattr(args, "only")
    with pytest.raises(SystemExit):
        parse_args("A study.", "s.json", parts=("a",), argv=["--only", "c"])


def test_run_jobs_gives_every_result_with_its_index():
    import operator

    from mha_lib.experiments.reproduce import run_jobs

    items = [3, -1, 4, -1, 5]
    done = dict(run_jobs(operator.neg, items, 2, longest_first=abs))
    assert done == {i: -x for i, x in enumerate(items)}
    with pytest.raises(ValueError, match="processes"):
        list(run_jobs(operator.neg, items, 0))


def test_a_study_reruns_one_part_and_keeps_the_others(tmp_path):
    """The command line end to end: `--only check` of the planted-match study retrains that
    part in a spawned process, keeps the others as they were, and the result passes the
    study's own checks against the committed file."""
    from mha_lib.experiments.studies import ch4_planted

    out = tmp_path / "ch4_planted.json"
    shutil.copy(REPO / "scripts" / "results" / ch4_planted.NAME, out)
    ch4_planted.main(["--only", "check", "--out", str(out), "--processes", "1"])
    old, new = load_results(REPO / "scripts" / "results" / ch4_planted.NAME), load_results(out)
    assert new["trained"] == old["trained"] and new["live"] == old["live"]
    assert new["provenance"]["trained"] == old["provenance"]["trained"]
    assert new["provenance"]["check"]["created"] != old["provenance"]["check"]["created"]
    verify(ch4_planted.live_checks(new["check"][0], old["check"][0]))


def test_worst_share_is_the_largest_difference_over_its_tolerance():
    from mha_lib.experiments.reproduce import worst_share

    checks = [Check("a", 1.0, 1.0005, 1e-3), Check("b", [0.0, 0.2], [0.0, 0.1], 0.4),
              Check("exact", 3, 3, 0)]  # fmt: skip
    assert worst_share(checks) == pytest.approx(0.5)
    assert worst_share([Check("exact", 3, 3, 0)]) == 0.0
    assert worst_share([Check("off", 3, 4, 0)]) == math.inf
    with pytest.raises(ValueError, match="at least one"):
        worst_share([])


def test_run_all_gives_the_results_in_the_items_order():
    import operator

    from mha_lib.experiments.reproduce import run_all

    assert run_all(operator.neg, [3, -1, 4, -1, 5], 2, longest_first=abs) == [-3, 1, -4, 1, -5]


def test_run_parts_pools_every_part_and_keeps_each_parts_order():
    import operator

    from mha_lib.experiments.reproduce import run_parts

    done = run_parts(operator.neg, {"a": [3, -1], "b": [4, -1, 5], "c": []}, 2, longest_first=abs)
    assert done == {"a": [-3, 1], "b": [-4, 1, -5], "c": []}


def test_rerun_parts_keeps_the_parts_not_named_and_runs_the_others(tmp_path, capsys):
    import argparse
    import operator

    from mha_lib.experiments.reproduce import rerun_parts

    jobs = {"a": [1, 2], "b": [3, -4]}
    args = argparse.Namespace(out=tmp_path / "none.json", only=None, processes=2)
    results, provs, todo = rerun_parts(operator.neg, jobs, args, longest_first=abs)
    assert results == {"a": [-1, -2], "b": [-3, 4]} and todo == jobs
    assert provs["a"]["threads"] == provs["b"]["threads"] == 1
    old = {**provenance(), "git_commit": "feedc0ffee"}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"a": ["old"], "b": ["old"], "provenance": {"a": old, "b": old}}))
    args = argparse.Namespace(out=path, only=["b"], processes=1)
    results, provs, todo = rerun_parts(operator.neg, jobs, args)
    assert results == {"a": ["old"], "b": [-3, 4]} and todo == {"b": [3, -4]}
    assert provs["a"]["git_commit"] == "feedc0ffee" != provs["b"]["git_commit"]
    assert "kept part 'a'" in capsys.readouterr().out


def test_plain_kernel_sample_returns_the_result_and_the_childs_provenance():
    from mha_lib.experiments.reproduce import plain_kernel_sample

    result, record = plain_kernel_sample(provenance, 3, threads=1)
    assert result["threads"] == 3 and record["threads"] == 1  # the function's, the sample's
    assert result["cpu_capability"] == record["cpu_capability"]  # both from the child
    assert record["cpu_capability"] == "DEFAULT"


def test_on_plain_kernels_runs_the_function_in_a_child_on_plain_c_kernels():
    from mha_lib.experiments.reproduce import on_plain_kernels

    record = on_plain_kernels(provenance, 1)  # a module-level function, its JSON result back
    assert record["cpu_capability"] == "DEFAULT" and record["threads"] == 1
    with pytest.raises(ValueError, match="module-level"):
        on_plain_kernels(lambda: 1)


def test_every_study_runs_as_a_module(monkeypatch, capsys):
    """`python -m mha_lib.experiments.studies.<name> --help` for every study the package
    lists (`names`), and nothing else is a study."""
    import runpy

    from mha_lib.experiments import studies

    names = studies.names()
    assert "ch7_init" in names and "replicate" in names
    for name in names:
        module = f"{studies.__name__}.{name}"
        monkeypatch.setattr(sys, "argv", [name, "--help"])
        monkeypatch.delitem(sys.modules, module, raising=False)  # as a fresh `python -m`
        with pytest.raises(SystemExit) as stop:
            runpy.run_module(module, run_name="__main__")
        assert stop.value.code == 0, name
        assert "--out" in capsys.readouterr().out, name
    with pytest.raises(ValueError, match="no study"):
        studies.load("reproduce")

