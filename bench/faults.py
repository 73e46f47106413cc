"""The fault campaign: nothing lost, nothing leaked, no 500 — measured in one run.

Starts a Redis server (PyPI packages), the test model server and seekgraph instances on a
copy of the demo workspace with one more trap (a public deprecated article superseded by a
finance-only one), then:

1. **permission canaries**: ``--questions`` questions as bob about what only others may see
   (security findings, the engineering roadmap, the finance draft), each run's SSE stream,
   ``/state`` and ``/history`` searched for restricted text and restricted document ids; the
   same questions as alice show that the canaries are findable at all;
2. **SIGKILL trials**: the origin killed at ``--kills`` points (after each node's summary, after
   the first tokens…), the run resumed on another instance: no gap, no duplicate, no fork;
3. **pause trials**: the lock holder SIGSTOPped past its TTL at ``--pauses`` points, taken over,
   woken: the thread's state never goes backwards and its history never forks;
4. **Redis restarted empty**: readiness comes back without a server restart, runs work;
5. **bad input**: a corpus of malformed HTTP requests; any 5xx counts, and the thread must
   still take a good run afterwards; then the **ownership** attacks of the security review
   (``bench.attacks``): case-aliased and malformed thread ids, ``..`` through the forward,
   10,000 sources, a 64 MB body without a key, a forged image size, 30 runs on one key;
6. **bad files**: a folder of broken files beside good ones through ``seekgraph index``;
7. **load**: ``--load-runs`` parallel runs with a 200 ms lock TTL while two processes spin on
   the cores: none may end ``lost``.

    python -m bench.faults --json bench/results/faults.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.attacks import ownership
from bench.fault_inputs import (
    BOB_QUESTIONS,
    CANARIES,
    RESTRICTED_IDS,
    bad_files,
    bad_requests,
    raw_request,
    workspace,
)
from bench.report import command_line, write
from seekgraph.server.auth import add_key_to_file
from tests.support.processes import (
    Proc,
    auth,
    free_port,
    new_thread,
    script_model,
    start_app,
    start_model_server,
    start_redis,
    unforked,
)
from tests.support.sse_client import Stream, parse, read

QUESTION = {"question": "How do I connect to the VPN from a new laptop?"}
#: Where the origin is killed: after a node's summary, the first search results, or N tokens.
KILL_POINTS = [
    "prepare",
    "expand_query",
    "sources",
    "filter_results",
    "evaluate",
    "token:1",
    "token:5",
    "token:20",
    "token:35",
    "integrate",
    "check_answer",
    "token:10",
]


def spread(items: list[str], count: int | None) -> list[str]:
    """``count`` of ``items`` spread evenly over the list (all of them when None)."""
    if count is None or count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def kill_points(rounds: int, kills: int | None) -> list[str]:
    """``rounds`` times through the kill points, or ``kills`` of them spread over the list."""
    return KILL_POINTS * rounds if kills is None else spread(KILL_POINTS, kills)


def indexed_once(tmp: Path, workspace_dir: Path) -> Path:
    """The campaign's workspace indexed once, as an instance's start indexes it (its file)."""
    from seekgraph.providers.embeddings import load_embedder
    from seekgraph.server.bootstrap import index_path
    from seekgraph.server.settings import Settings
    from seekgraph.sources.indexes.embedded import EmbeddedIndex
    from seekgraph.sources.ingestion.workspace import sync_workspace

    settings = Settings(data_dir=tmp / "index-once", workspace=workspace_dir)
    path = index_path(settings, workspace_dir.resolve())
    path.parent.mkdir(parents=True)
    index = EmbeddedIndex(path, load_embedder(settings.embedding_model))
    sync_workspace(workspace_dir.resolve(), index)
    index.close()
    return path


def start_instance(
    w: dict[str, Any], tmp: Path, name: str, env: dict[str, Any] | None = None
) -> Proc:
    """``seekgraph serve`` on the campaign's settings, its data directory holding the index
    built once: the instance skips indexing the workspace (seconds of embedding at each of
    the campaign's starts; what the trials measure starts after)."""
    indexes = tmp / f"data-{name}" / "indexes"
    indexes.mkdir(parents=True)
    shutil.copy(w["index"], indexes / w["index"].name)
    return start_app(tmp, name, w["env"] if env is None else env)


def everything(c: httpx.Client, base: str, key: str, thread: str, stream: Stream) -> str:
    """All a user can see of a run: its events, the thread's state and history."""
    state = c.get(f"{base}/threads/{thread}/state", headers=auth(key)).text
    history = c.get(f"{base}/threads/{thread}/history", headers=auth(key)).text
    frames = json.dumps([f.data for f in stream.frames], ensure_ascii=False)
    return "\n".join([frames, state, history])


def canaries(w: dict[str, Any], rounds: int, questions: list[str]) -> dict[str, Any]:
    a, bob, alice = w["a"].url, w["bob"], w["alice"]
    leaked_text, leaked_ids, runs, alice_found = [], [], 0, 0
    with httpx.Client(timeout=120) as c:
        for mode in ("llm", "extractive")[:rounds]:
            for question in questions:
                script_model(w["model"])
                thread = new_thread(c, a, bob)
                body = {"question": question, "mode": mode}
                s = read(c, "POST", f"{a}/threads/{thread}/runs", json=body, headers=auth(bob))
                seen = everything(c, a, bob, thread, s)
                runs += 1
                # the question's own words come back (in it, its variants, "not found: …"):
                # a canary the question names is the user's text, not a leak
                own = question.lower()
                leaked_text += [
                    (question, m) for m in CANARIES if m in seen and m.lower() not in own
                ]
                leaked_ids += [(question, i) for i in RESTRICTED_IDS if i in seen]
                thread = new_thread(c, a, alice)
                s = read(c, "POST", f"{a}/threads/{thread}/runs", json=body, headers=auth(alice))
                alice_found += any(m in everything(c, a, alice, thread, s) for m in CANARIES)
    return {
        "runs_as_bob": runs,
        "canaries_leaked": len(leaked_text),
        "restricted_ids_leaked": len(leaked_ids),
        "leaks": leaked_text + leaked_ids,
        "alice_runs_that_found_a_canary": alice_found,
    }


def stream_until(c: httpx.Client, url: str, point: str, key: str) -> Stream:
    """POST a run and read until ``point`` (a node's summary, ``token:N`` or ``sources``)."""
    stream = Stream()
    tokens = 0
    with c.stream("POST", url, json=QUESTION, headers=auth(key), timeout=60) as response:
        for frame in parse(response.iter_lines(), stream):
            if frame.event == "token":
                tokens += 1
            if (
                (frame.event == "node" and frame.data["node"] == point)
                or (frame.event == "sources" and point == "sources")
                or (point.startswith("token:") and tokens >= int(point.split(":")[1]))
                or frame.event == "end"
            ):
                break
    return stream


def continuous(first: Stream, second: Stream) -> tuple[bool, str]:
    """No gap and no duplicate: the resumed stream's snapshot follows what the client saw."""
    seqs = [f.seq for f in second.frames if f.id]
    if not second.frames or second.frames[0].event != "snapshot":
        return False, "no snapshot first"
    if seqs[0] <= first.frames[-1].seq:
        return False, f"snapshot {seqs[0]} does not follow {first.frames[-1].seq}"
    if seqs[1:] != list(range(seqs[0] + 1, seqs[0] + len(seqs))):
        return False, f"gap or duplicate in {seqs}"
    answers = second.of("answer")
    finished = second.frames[0].data.get("status") == "done" and second.frames[0].data["answer"]
    if not answers and finished:  # the run had finished before the kill: the snapshot has it
        answers = [second.frames[0]]
    if len(answers) != 1 or not answers[0].data["answer"]:
        return False, "not exactly one answer"
    if second.of("end")[-1].data["status"] != "done":
        return False, f"ended {second.of('end')[-1].data['status']}"
    return True, ""


def no_fork(history: list[dict[str, Any]]) -> bool:
    wrote = [n for h in history for n in h["wrote"]]
    return unforked(history) and wrote.count("check_answer") == 1


def kill_trials(w: dict[str, Any], tmp: Path, points: list[str]) -> dict[str, Any]:
    key, b = w["alice"], w["b"].url
    results = []
    for i, point in enumerate(points):
        origin = start_instance(w, tmp, f"kill{i}")
        try:
            with httpx.Client(timeout=120) as c:
                thread = new_thread(c, origin.url, key)
                script_model(w["model"], {}, {}, {}, {"sleep": 1})
                first = stream_until(c, f"{origin.url}/threads/{thread}/runs", point, key)
                origin.kill()
                second = read(
                    c,
                    "GET",
                    f"{b}/threads/{thread}/stream",
                    headers={**auth(key), "Last-Event-ID": first.last_id or ""},
                )
                history = c.get(f"{b}/threads/{thread}/history", headers=auth(key)).json()
            ok, why = continuous(first, second)
            forked = not no_fork(history)
            results.append({"point": point, "ok": ok and not forked, "why": why or forked})
        finally:
            origin.stop()
    good = sum(r["ok"] for r in results)
    return {"trials": len(results), "completed_cleanly": good, "details": results}


def pause_trials(w: dict[str, Any], tmp: Path, points: list[str]) -> dict[str, Any]:
    key, b = w["alice"], w["b"].url
    results = []
    for i, point in enumerate(points):
        holder = start_instance(w, tmp, f"pause{i}")
        try:
            with httpx.Client(timeout=120) as c:
                thread = new_thread(c, holder.url, key)
                script_model(w["model"], {}, {}, {}, {"sleep": 1})
                first = stream_until(c, f"{holder.url}/threads/{thread}/runs", point, key)
                holder.popen.send_signal(signal.SIGSTOP)
                time.sleep(w["ttl_s"] + 1)
                second = read(
                    c,
                    "GET",
                    f"{b}/threads/{thread}/stream",
                    headers={**auth(key), "Last-Event-ID": first.last_id or ""},
                )
                taken = c.get(f"{b}/threads/{thread}/state", headers=auth(key)).json()
                holder.popen.send_signal(signal.SIGCONT)
                time.sleep(4)
                later = c.get(f"{b}/threads/{thread}/state", headers=auth(key)).json()
                history = c.get(f"{b}/threads/{thread}/history", headers=auth(key)).json()
            backwards = later["checkpoint_id"] != taken["checkpoint_id"] or not later["values"].get(
                "answer"
            )
            ok = (
                not backwards and no_fork(history) and second.of("end")[-1].data["status"] == "done"
            )
            results.append({"point": point, "ok": ok, "backwards": backwards})
        finally:
            holder.popen.send_signal(signal.SIGCONT)
            holder.stop()
    good = sum(r["ok"] for r in results)
    return {"trials": len(results), "state_never_backwards": good, "details": results}


def redis_restart(w: dict[str, Any], tmp: Path) -> dict[str, Any]:
    a, key = w["a"].url, w["alice"]
    with httpx.Client(timeout=60) as c:
        w["redis"].kill()
        w["redis"], _ = start_redis(tmp, w["redis_port"])
        started = time.monotonic()
        while c.get(f"{a}/readyz").status_code != 200:
            if time.monotonic() - started > 30:
                return {"recovered": False}
            time.sleep(0.1)
        ready_after = time.monotonic() - started
        script_model(w["model"])
        thread = new_thread(c, a, key)
        s = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=auth(key))
        history = c.get(f"{a}/threads/{thread}/history", headers=auth(key))
    done = s.of("end")[-1].data["status"] == "done" and history.status_code == 200
    return {"recovered": done, "ready_after_seconds": round(ready_after, 2)}


def bad_input(w: dict[str, Any]) -> dict[str, Any]:
    a, key = w["a"].url, w["alice"]
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, a, key)
        script_model(w["model"])
        read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=auth(key))
        before = c.get(f"{a}/threads/{thread}/state", headers=auth(key)).json()["checkpoint_id"]
        statuses = []
        for case in bad_requests(thread):
            what = repr((case.get("body") or b"")[:50]) or case["path"][:60]
            statuses.append((case["method"], what, raw_request(a, case, key)))
        after = c.get(f"{a}/threads/{thread}/state", headers=auth(key)).json()["checkpoint_id"]
        script_model(w["model"])
        ok = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=auth(key))
    fives = [s for s in statuses if s[2] >= 500 or s[2] == 0]
    return {
        "requests": len(statuses),
        "five_hundreds": len(fives),
        "which": fives,
        "state_unchanged": before == after,
        "thread_free_afterwards": ok.status == 200 and ok.of("end")[-1].data["status"] == "done",
        "statuses": sorted({s[2] for s in statuses}),
        "runs_started": [s for s in statuses if s[0] == "POST" and s[2] < 300],
    }


def load(w: dict[str, Any], tmp: Path, runs: int) -> dict[str, Any]:
    env = {
        **{k: v for k, v in w["env"].items() if not k.startswith("SEEKGRAPH_LLM")},
        "SEEKGRAPH_LOCK_TTL_MS": 200,
        "SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY": runs,  # this part loads the locks, not the limits
    }
    busy = start_instance(w, tmp, "load", env)
    key = w["alice"]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with httpx.Client(timeout=120) as c:
            threads = [new_thread(c, busy.url, key) for _ in range(runs)]

        def run(thread: str) -> str:
            with httpx.Client() as own:
                url = f"{busy.url}/threads/{thread}/runs"
                s = read(own, "POST", url, json=QUESTION, headers=auth(key))
            return str(s.of("end")[-1].data["status"]) if s.of("end") else "no end"

        with ThreadPoolExecutor(min(runs, 16)) as pool:
            statuses = list(pool.map(run, threads))
    finally:
        for hog in hogs:
            hog.kill()
        busy.stop()
    return {
        "runs": runs,
        "lock_ttl_ms": 200,
        "done": statuses.count("done"),
        "lost": statuses.count("lost"),
        "other": [s for s in statuses if s not in ("done", "lost")],
    }


def summary(out: dict[str, Any]) -> dict[str, Any]:
    """The campaign's headline numbers, as the issue asks for them (of the parts that ran)."""
    lines: dict[str, Any] = {}
    if "permissions" in out:
        lines["permission canaries leaked"] = out["permissions"]["canaries_leaked"]
        lines["restricted ids leaked"] = out["permissions"]["restricted_ids_leaked"]
    if "sigkill" in out:
        kill = out["sigkill"]
        lines["SIGKILL trials clean"] = f"{kill['completed_cleanly']}/{kill['trials']}"
    if "pause" in out:
        pause = out["pause"]
        lines["pause trials clean"] = f"{pause['state_never_backwards']}/{pause['trials']}"
    if "redis_restart" in out:
        lines["Redis restart recovered"] = out["redis_restart"]["recovered"]
    if "bad_input" in out:
        bad = out["bad_input"]
        lines["5xx in the bad-input corpus"] = f"{bad['five_hundreds']}/{bad['requests']}"
    if "bad_files" in out:
        files = out["bad_files"]
        lines["bad files reported, good indexed"] = (
            f"{files['bad_files_reported']}/{files['bad_files']}"
        )
    if "load" in out:
        lines["runs lost under load"] = f"{out['load']['lost']}/{out['load']['runs']}"
    if "ownership" in out:
        lines["ownership attacks refused without a leak"] = out["ownership"]["held"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/faults.json"))
    parser.add_argument("--modes", type=int, default=2, help="1: LLM mode only; 2: and extractive")
    parser.add_argument("--kill-rounds", type=int, default=1, help="times through the kill points")
    parser.add_argument("--pauses", type=int, default=4)
    parser.add_argument("--load-runs", type=int, default=50)
    parser.add_argument(
        "--questions", type=int, help="permission canaries: this many of the questions, spread"
    )
    parser.add_argument(
        "--kills", type=int, help="SIGKILL trials: this many kill points, spread over the list"
    )
    parser.add_argument(
        "--points", nargs="*", choices=KILL_POINTS, help="SIGKILL trials at these points only"
    )
    parser.add_argument("--only", nargs="*", help="run only these parts (no summary)")
    parser.add_argument("--skip", nargs="*", default=[], help="leave out these parts")
    args = parser.parse_args()
    started = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="seekgraph-faults-"))
    procs: list[Proc] = []
    try:
        port = free_port()
        redis_proc, redis_url = start_redis(tmp, port)
        model = start_model_server(tmp, delay=0.02, tokens=40)
        procs.append(model)
        keys = tmp / "keys.json"
        ttl_ms = 3000
        env = {
            "SEEKGRAPH_REDIS_URL": redis_url,
            "SEEKGRAPH_API_KEYS_FILE": keys,
            "SEEKGRAPH_WORKSPACE": workspace(tmp),
            "SEEKGRAPH_INTERNAL_TOKEN": "fault-secret",
            "SEEKGRAPH_LLM_MODEL": "test-model",
            "SEEKGRAPH_LLM_BASE_URL": model.url + "/v1",
            "SEEKGRAPH_LLM_API_KEY": "unused",
            "SEEKGRAPH_HEARTBEAT_SECONDS": "0.5",
            "SEEKGRAPH_LOCK_TTL_MS": ttl_ms,
        }
        w: dict[str, Any] = {
            "redis": redis_proc,
            "redis_port": port,
            "model": model,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
            "env": env,
            "ttl_s": ttl_ms / 1000,
        }
        w["index"] = indexed_once(tmp, Path(env["SEEKGRAPH_WORKSPACE"]))
        w["a"] = start_instance(w, tmp, "a")
        w["b"] = start_instance(w, tmp, "b")
        procs += [w["a"], w["b"]]
        out: dict[str, Any] = {"command": command_line("bench.faults", args)}
        parts = {
            "permissions": lambda: canaries(w, args.modes, spread(BOB_QUESTIONS, args.questions)),
            "sigkill": lambda: kill_trials(
                w, tmp, args.points or kill_points(args.kill_rounds, args.kills)
            ),
            "pause": lambda: pause_trials(
                w, tmp, (["evaluate", "token:1"] * args.pauses)[: args.pauses]
            ),
            "bad_input": lambda: bad_input(w),
            "ownership": lambda: ownership(w),
            "bad_files": lambda: bad_files(tmp),
            "load": lambda: load(w, tmp, args.load_runs),
            "redis_restart": lambda: redis_restart(w, tmp),
        }
        for name, part in parts.items():
            if (not args.only or name in args.only) and name not in args.skip:
                out[name] = part()
        if not args.only:
            out["summary"] = summary(out)
        write(args.json, out, started)
    finally:
        for p in reversed(procs):
            p.stop()
        w_redis = locals().get("w", {}).get("redis")
        if w_redis is not None:
            w_redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
