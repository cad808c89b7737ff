"""The fleet on real job runners: examples/fleet.sh under Slurm, its stop rule, and
the Kubernetes Job checked against the Job schema.

The Slurm test needs a running single-node Slurm (``.ci/slurm-up`` starts one; CI runs
it). Where Slurm cannot start, the test skips and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate
import orjson
import pytest
import yaml
from conftest import ROOT, crawlkit, start_testweb
from fleet_helpers import WEB, audit_web, fetched_pages, fleet_env, net_flags

EXAMPLES = ROOT / "examples"
SLURM_STATUS = Path(os.environ.get("SLURM_UP_STATUS", "/var/tmp/crawlkit-slurm-up.status"))


def _fleet(fleet: Path, shards: int, web, cwd: Path, **env: str):
    """Run the driver examples/fleet.sh (env: RUNNER, SLICE, SBATCH_ARGS, ...)."""
    return subprocess.run(
        [str(EXAMPLES / "fleet.sh"), str(fleet), str(shards), str(web.seeds), *net_flags(web)],
        env=fleet_env(**env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _diff(got: set[str], expected: set[str], fleet: Path, stderr: str) -> str:
    """What a fleet missed or added, with each shard's last summary and the driver's log."""
    summaries = [p.read_text()[:300] for p in sorted(fleet.glob("shard-*.last.json"))]
    return (
        f"missing {sorted(expected - got)[:5]}, extra {sorted(got - expected)[:5]}; "
        f"summaries {summaries}; driver: {stderr[-1500:]}"
    )


def _summary(fleet: Path, k: int) -> dict:
    return orjson.loads((fleet / f"shard-{k}.last.json").read_bytes())


# -- Slurm ------------------------------------------------------------------------------


def _slurm_unavailable() -> str:
    """Why sbatch cannot run jobs here ("" when it can)."""
    why = SLURM_STATUS.read_text().strip() if SLURM_STATUS.exists() else ""
    if not shutil.which("sbatch") or not shutil.which("sinfo"):
        return why or "Slurm is not installed (.ci/slurm-up installs and starts it, as root)"
    res = subprocess.run(
        ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30, check=False
    )
    states = res.stdout.split()
    if res.returncode != 0 or not any(s in ("idle", "mixed", "allocated") for s in states):
        told = res.stderr.strip() or f"node states: {' '.join(states) or 'none'}"
        return why or f"Slurm does not answer or has no usable node ({told}); run .ci/slurm-up"
    return ""


@pytest.fixture
def sbatch_args() -> Iterator[str]:
    """SBATCH_ARGS for this node, with a job name of this test's own; skips without Slurm.

    The sbatch header asks for 2 CPUs and 8G a task: this node has 2 CPUs and no
    RealMemory, so override both as its header says.
    """
    why = _slurm_unavailable()
    if why:
        pytest.skip(f"Slurm cannot start here: {why}")
    name = f"crawlkit-shard-{uuid.uuid4().hex[:8]}"
    yield f"--cpus-per-task=1 --mem=0 --time=5 --job-name={name}"
    # a run cut short (a timeout) leaves no task behind to hold the node's CPUs
    subprocess.run(["scancel", "--name", name], capture_output=True, timeout=30, check=False)


def test_slurm_fleet_fetches_what_one_process_fetches(tmp_path: Path, sbatch_args: str) -> None:
    with start_testweb(tmp_path, *WEB) as web:
        one = tmp_path / "one"
        res = crawlkit("crawl", str(web.seeds), "--state", str(one), *net_flags(web), timeout=240)
        assert res.code == 0, res.stderr
        expected = set(fetched_pages([one]))
    assert len(expected) >= 60
    with start_testweb(tmp_path, *WEB) as web:
        fleet = tmp_path / "fleet"
        proc = _fleet(fleet, 4, web, cwd=tmp_path, RUNNER="slurm", SBATCH_ARGS=sbatch_args)
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = audit_web(web)
    assert "fleet done after" in proc.stderr
    got = fetched_pages([fleet / f"shard-{k}" for k in range(4)])
    assert set(got) == expected, _diff(set(got), expected, fleet, proc.stderr)
    assert max(got.values()) == 1  # no page fetched by two shards
    assert report["ok"], report["violations"][:5]
    # every shard ran as a Slurm array task (its log is Slurm's --output file)
    logs = sorted(p.name for p in (fleet / "logs").glob("crawlkit-shard-*.log"))
    assert {name.rsplit("-", 1)[1] for name in logs} == {f"{k}.log" for k in range(4)}


def test_one_round_submitted_by_hand_runs_under_slurm(tmp_path: Path, sbatch_args: str) -> None:
    # as the script's header says: from the top of the checkout, no CRAWLKIT_EXAMPLES;
    # sbatch runs a spooled copy, which finds crawl-shard.sh from $SLURM_SUBMIT_DIR
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "4", "--special", "none") as web:
        fleet = tmp_path / "fleet"
        res = crawlkit("shard", "--shards", "2", "--save-map", str(fleet / "map.json"))
        assert res.code == 0, res.stderr
        env = {k: v for k, v in fleet_env().items() if k != "CRAWLKIT_EXAMPLES"}
        proc = subprocess.run(
            [
                "sbatch",
                "--wait",
                "--array=0-1",
                *sbatch_args.split(),
                f"--output={tmp_path}/%x-%a.log",
                "examples/slurm-shards.sbatch",
                str(fleet),
                str(web.seeds),
                *net_flags(web),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        logs = "".join(p.read_text() for p in tmp_path.glob("crawlkit-shard-*.log"))
        assert proc.returncode == 0, proc.stderr + logs
    # the crawl flags after SEEDS reached the crawl: without --allow-net and --hosts-file
    # it could not have fetched a page of the web
    assert sum(_summary(fleet, k)["fetched"] for k in range(2)) >= 2


# -- the stop rule and a shard with nothing due -----------------------------------------

# One host answers its first page with 429 and Retry-After: 1 hour.
DEFERRING_WEB = (
    "--hosts",
    "3",
    "--pages",
    "6",
    "--special",
    "none,status-429",
    "--retry-after",
    "1h",
    "--seed",
    "4",
)


def test_a_crawl_with_only_a_url_deferred_past_its_slice_ends_the_slice(tmp_path: Path) -> None:
    with start_testweb(tmp_path, *DEFERRING_WEB) as web:
        state = tmp_path / "S"
        # an hour's slice: held to its end, the test would time out
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            *net_flags(web),
            "--for",
            "1h",
            "--json",
            timeout=240,
        )
        assert res.code == 0, res.stderr
        summary = orjson.loads(res.stdout)
        throttled = [q for q in web.requests() if q["status"] == 429]
    assert summary["stopped"] == "nothing due before the time limit (--for)"
    assert summary["waiting"] >= 1  # the deferred URL is kept for the next run
    assert summary["fetched"] >= 6
    assert len(throttled) == 1  # and was not asked again inside its Retry-After


def test_the_fleet_stops_when_only_work_due_after_the_next_round_is_left(
    tmp_path: Path,
) -> None:
    with start_testweb(tmp_path, *DEFERRING_WEB) as web:
        fleet = tmp_path / "fleet"
        # a half-hour slice: the URL deferred for an hour is due after every round's
        # end, so no slice waits for it and the driver stops
        proc = _fleet(fleet, 2, web, cwd=tmp_path, RUNNER="xargs", SLICE="30m")
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = audit_web(web)
    assert "fleet done after" in proc.stderr
    summaries = [_summary(fleet, k) for k in range(2)]
    assert sum(s["waiting"] for s in summaries) >= 1
    assert any(s["stopped"].startswith("nothing due before") for s in summaries)
    assert report["ok"], report["violations"][:5]


def test_urls_due_within_the_next_round_keep_the_fleet_going(tmp_path: Path) -> None:
    # One site, so no round delivers anything, a 1.5 s gap and 2 s slices: after two
    # fetches the site's next turn falls after the slice's end, so its URLs are deferred
    # to that turn and the slice ends early with nothing due before its end. They are
    # due within the next round, so the fleet must run it rather than stop with them
    # waiting: it reaches what one process reaches. The gap is exactly 1.5 s
    # (--delay-factor 0): on a loaded machine 10 x a slow fetch would make it longer
    # than a slice, and then stopping with the URLs waiting is the rule, not a fault.
    web_args = ("--hosts", "1", "--pages", "6", "--special", "none", "--seed", "8")
    slow = ("--min-delay", "1.5s", "--delay-factor", "0")
    with start_testweb(tmp_path, *web_args) as web:
        one = tmp_path / "one"
        res = crawlkit(
            "crawl", str(web.seeds), "--state", str(one), *net_flags(web), *slow, timeout=240
        )
        assert res.code == 0, res.stderr
        expected = set(fetched_pages([one]))
    assert len(expected) >= 4
    with start_testweb(tmp_path, *web_args) as web:
        fleet = tmp_path / "fleet"
        proc = subprocess.run(
            [str(EXAMPLES / "fleet.sh"), str(fleet), "2", str(web.seeds), *net_flags(web), *slow],
            env=fleet_env(RUNNER="xargs", SLICE="2s"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = audit_web(web)
    assert "fleet done after" in proc.stderr, proc.stderr[-3000:]
    got = fetched_pages([fleet / f"shard-{k}" for k in range(2)])
    assert set(got) == expected, _diff(set(got), expected, fleet, proc.stderr)
    assert all(_summary(fleet, k)["waiting"] == 0 for k in range(2))
    assert report["ok"], report["violations"][:5]


def test_a_fleet_whose_shards_reached_max_pages_is_done(tmp_path: Path) -> None:
    # --max-pages counts over runs: a shard at its limit will do nothing more, so the
    # fleet stops instead of running empty rounds until ROUNDS
    with start_testweb(tmp_path, *WEB) as web:
        fleet = tmp_path / "fleet"
        proc = subprocess.run(
            [
                str(EXAMPLES / "fleet.sh"),
                str(fleet),
                "2",
                str(web.seeds),
                *net_flags(web),
                "--max-pages",
                "3",
            ],
            env=fleet_env(RUNNER="xargs", ROUNDS="6"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fleet done after" in proc.stderr, proc.stderr[-3000:]
    assert all(_summary(fleet, k)["stopped"] == "page limit (--max-pages)" for k in range(2))


@pytest.mark.parametrize("runner", ["xargs", "slurm"])
def test_a_failed_shard_ends_the_fleet_run_and_names_the_shard(
    tmp_path: Path, runner: str, request: pytest.FixtureRequest
) -> None:
    sbatch_args = request.getfixturevalue("sbatch_args") if runner == "slurm" else ""
    # shard 1's state is held by another process: its slice fails at once, and the
    # driver must neither wait for it nor go on as if nothing happened
    state = tmp_path / "fleet" / "shard-1"
    code = (
        "import sys, time; from crawlkit.state import open_state; "
        "s = open_state(sys.argv[1]); print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(state)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with start_testweb(tmp_path, *DEFERRING_WEB) as web:
            proc = _fleet(
                tmp_path / "fleet", 2, web, cwd=tmp_path, RUNNER=runner, SBATCH_ARGS=sbatch_args
            )
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert proc.returncode == 1
    assert "shard(s) 1 failed in round 1" in proc.stderr
    assert _summary(tmp_path / "fleet", 0)["fetched"] >= 1  # the other shard ran
    if runner == "slurm":  # task 1's output, as Slurm kept it, says why
        (log,) = (tmp_path / "fleet" / "logs").glob("crawlkit-shard-*-1.log")
        assert "in use by another process" in log.read_text()


def test_the_driver_refuses_a_runner_it_does_not_know(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(EXAMPLES / "fleet.sh"), str(tmp_path / "f"), "2", "seeds.txt"],
        env=fleet_env(RUNNER="cron"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "RUNNER must be parallel, xargs, slurm or k8s, not 'cron'" in proc.stderr


def test_the_sbatch_script_finds_its_helper_from_the_submit_directory(tmp_path: Path) -> None:
    # sbatch runs a spooled copy of the script, far from examples/: run a copy the same
    # way, with only what Slurm sets, and see it reach crawl-shard.sh
    spooled = tmp_path / "spool" / "slurm_script"
    spooled.parent.mkdir()
    shutil.copy(EXAMPLES / "slurm-shards.sbatch", spooled)
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    env = {k: v for k, v in fleet_env().items() if k != "CRAWLKIT_EXAMPLES"}
    env.update(SLURM_SUBMIT_DIR=str(ROOT), SLURM_ARRAY_TASK_ID="0")
    res = subprocess.run(
        ["bash", str(spooled), str(fleet), str(tmp_path / "nothing.txt"), "--max-pages", "1"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    # crawl-shard.sh ran the crawl, which names the missing seeds file
    assert "nothing.txt" in res.stderr, res.stderr
    assert (fleet / "shard-0.last.json").exists()
    env["SLURM_SUBMIT_DIR"] = str(tmp_path)
    res = subprocess.run(
        ["bash", str(spooled), str(fleet), "seeds.txt"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 2
    assert "no crawl-shard.sh in" in res.stderr and "CRAWLKIT_EXAMPLES" in res.stderr


# -- Kubernetes -------------------------------------------------------------------------


def _job() -> dict:
    return yaml.safe_load((EXAMPLES / "k8s-indexed-job.yaml").read_text())


@pytest.mark.parametrize("version", ["1.27", "1.37"])
def test_the_kubernetes_job_is_valid_against_the_job_schema(version: str) -> None:
    # strict: an unknown or misspelled field is an error, as kubectl's server-side
    # field validation would make it
    kubernetes_validate.validate(_job(), version, strict=True)


def test_a_misspelled_kubernetes_field_is_caught() -> None:
    job = _job()
    pod = job["spec"]["template"]["spec"]
    pod["containers"][0]["resource"] = pod["containers"][0].pop("resources")
    with pytest.raises(kubernetes_validate.ValidationError, match="resource"):
        kubernetes_validate.validate(job, "1.37", strict=True)


def test_the_kubernetes_job_is_what_the_driver_expects() -> None:
    job = _job()
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    assert "generateName" in job["metadata"]  # one Job a round, each with its own name
    assert spec["activeDeadlineSeconds"] > 0  # a round always ends
    container = spec["template"]["spec"]["containers"][0]
    args = container["args"][0]
    env = {e["name"] for e in container["env"]}
    # a $(VAR) of the command is expanded by Kubernetes only when VAR is defined
    for var in ("JOB_COMPLETION_INDEX", "SLICE", "CRAWL_FLAGS"):
        assert f"$({var})" in args and var in env
    assert "--shard $(JOB_COMPLETION_INDEX)" in args and "--slot-map /fleet/map.json" in args
    assert "> /fleet/shard-$(JOB_COMPLETION_INDEX).last.json" in args
    # the driver sets N and SLICE by rewriting these lines
    text = (EXAMPLES / "k8s-indexed-job.yaml").read_text()
    assert "\n  completions: 4\n" in text and "\n  parallelism: 4\n" in text
    assert "{name: SLICE, value: 50m}" in text


# A stand-in for kubectl, for the driver's Kubernetes rounds (no cluster runs here):
# `create` checks the Job against the Job schema and runs its pods here as processes,
# one per completion index, with the container's env and $(VAR) expansion, the volume
# at FAKE_K8S_FLEET instead of /fleet and no pip install; `get` reports the Job's
# Complete/Failed condition once every pod has ended.
FAKE_KUBECTL = """\
import json, os, re, subprocess, sys
from pathlib import Path

state, fleet = Path(os.environ["FAKE_K8S_DIR"]), os.environ["FAKE_K8S_FLEET"]
args = sys.argv[1:]
if args[:3] == ["create", "-f", "-"]:
    import kubernetes_validate, yaml  # here only: `get` is polled, and must stay cheap

    job = yaml.safe_load(sys.stdin)
    kubernetes_validate.validate(job, "1.37", strict=True)
    name = job["metadata"]["generateName"] + str(len(list(state.glob("*.job.json"))))
    (state / f"{name}.job.json").write_text(json.dumps(job))
    subprocess.Popen([sys.executable, __file__, "run-pods", name], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"job.batch/{name}")
elif args[0] == "run-pods":
    name = args[1]
    spec = json.loads((state / f"{name}.job.json").read_text())["spec"]
    container = spec["template"]["spec"]["containers"][0]
    pods = []
    for index in range(spec["completions"]):
        env = dict(os.environ)
        for e in container["env"]:
            env[e["name"]] = str(index) if "valueFrom" in e else e["value"]
        script = re.sub(r"[$][(](\\w+)[)]", lambda m: env[m.group(1)], container["args"][0])
        script = script.replace("pip install --quiet /fleet/dist/crawlkit-*.whl &&", "")
        script = script.replace("/fleet/", fleet + "/")
        with open(state / f"{name}-{index}.log", "w") as log:
            pods.append(subprocess.Popen(container["command"] + [script], env=env, stderr=log))
    failed = any(p.wait() for p in pods)
    (state / f"{name}.tmp").write_text("Failed" if failed else "Complete")
    os.replace(state / f"{name}.tmp", state / f"{name}.status")
elif args[0] == "get":
    status = state / (args[1].split("/")[1] + ".status")
    print(status.read_text() if status.exists() else "", end="")
elif args[:2] == ["logs", "-l"]:
    for log in sorted(state.glob(args[2].split("=")[1] + "-*.log")):
        print(log.read_text(), end="")
elif args[0] == "delete":
    (state / (args[1].split("/")[1] + ".deleted")).touch()
else:
    sys.exit(f"fake kubectl: {args} not understood")
"""


def test_kubernetes_rounds_run_by_the_driver_reach_what_one_process_reaches(
    tmp_path: Path,
) -> None:
    with start_testweb(tmp_path, *WEB) as web:
        one = tmp_path / "one"
        res = crawlkit("crawl", str(web.seeds), "--state", str(one), *net_flags(web), timeout=240)
        assert res.code == 0, res.stderr
        expected = set(fetched_pages([one]))
    assert len(expected) >= 60
    fake = tmp_path / "k8s"
    (fake / "bin").mkdir(parents=True)
    kubectl = fake / "bin" / "kubectl"
    kubectl.write_text(f"#!{sys.executable}\n{FAKE_KUBECTL}")
    kubectl.chmod(0o755)
    with start_testweb(tmp_path, *WEB) as web:
        fleet = tmp_path / "fleet"
        fleet.mkdir()
        shutil.copy(web.seeds, fleet / "seeds.txt")
        # the user's copy of the manifest: their crawl flags
        manifest = tmp_path / "job.yaml"
        text = (EXAMPLES / "k8s-indexed-job.yaml").read_text()
        text = text.replace(
            '{name: CRAWL_FLAGS, value: "--min-delay 1s"}',
            f"{{name: CRAWL_FLAGS, value: {' '.join(net_flags(web))!r}}}",
        )
        manifest.write_text(text)
        env = fleet_env(
            RUNNER="k8s",
            K8S_JOB=str(manifest),
            K8S_POLL="0.5",
            FAKE_K8S_DIR=str(fake),
            FAKE_K8S_FLEET=str(fleet),
        )
        env["PATH"] = f"{fake / 'bin'}:{env['PATH']}"
        proc = subprocess.run(
            [str(EXAMPLES / "fleet.sh"), str(fleet), "3", str(fleet / "seeds.txt")],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = audit_web(web)
    assert "fleet done after" in proc.stderr
    got = fetched_pages([fleet / f"shard-{k}" for k in range(3)])
    assert set(got) == expected, _diff(set(got), expected, fleet, proc.stderr)
    assert max(got.values()) == 1
    assert report["ok"], report["violations"][:5]
    # one Job a round, each with the driver's 3 completions, each deleted after its round
    jobs = sorted(fake.glob("*.job.json"))
    assert len(jobs) >= 2
    for job in (orjson.loads(j.read_bytes()) for j in jobs):
        assert job["spec"]["completions"] == 3
        env = job["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {"name": "SLICE", "value": "6s"} in env  # the driver's SLICE
    assert len(list(fake.glob("*.deleted"))) == len(jobs)
    # every pod's stderr, kept in the fleet's logs
    assert len(list((fleet / "logs").glob("crawlkit-round-*.log"))) == len(jobs)
