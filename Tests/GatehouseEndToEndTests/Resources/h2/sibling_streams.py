"""One connection, several streams at once, some of them bad: a forged token, a connection-specific
header (`connection:`, forbidden in HTTP/2, RFC 9113 §8.2.2), an upper-case header name
(§8.2.1), a pseudo-header after a regular one (§8.3); with valid requests before and after them.
A stream's fault must stay the stream's: the valid siblings are answered and the connection lives.

Prints one JSON object: for each named stream its status or RST_STREAM code, and the connection's fate.
"""

import argparse

import h2peer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", required=True)
    parser.add_argument("--forged-token", required=True)
    args = h2peer.arguments(parser)

    peer = h2peer.Peer(args.port)
    peer.start()
    peer.acknowledge_settings()

    def request(path, token=None, extra=()):
        return h2peer.request_headers(args.port, path, token=token, extra=extra)

    plan = [
        ("valid_before", request("/v1/siblings/before", args.token)),
        ("forged_token", request("/v1/siblings/forged", args.forged_token)),
        ("connection_header", request("/v1/siblings/connection", args.token, [("connection", "keep-alive")])),
        ("uppercase_name", request("/v1/siblings/uppercase", args.token, [("X-Upper", "1")])),
        ("late_pseudo_header", request("/v1/siblings/late", args.token) + [(":protocol", "x")]),
        ("valid_after", request("/v1/siblings/after", args.token)),
    ]
    streams = {}
    burst = []
    for index, (name, headers) in enumerate(plan):
        stream = 1 + 2 * index
        streams[name] = stream
        burst.append(peer.headers_frame(stream, headers))
    peer.send(b"".join(burst))
    peer.wait(lambda: all(stream in peer.ended or stream in peer.rsts for stream in streams.values()), 8.0)
    # Then one more valid request on the same connection: it must still take new streams.
    last = 1 + 2 * len(plan)
    streams["valid_later"] = last
    peer.send(peer.headers_frame(last, request("/v1/siblings/later", args.token)))
    peer.wait(lambda: last in peer.ended or last in peer.rsts, 5.0)

    result = peer.summary()
    result["streams"] = {
        name: {
            "status": peer.statuses.get(stream),
            "rst_code": peer.rsts.get(stream),
            "x_upstream": peer.header(stream, "x-upstream"),
            "data_bytes": peer.data_bytes.get(stream, 0),
        }
        for name, stream in streams.items()
    }
    peer.close()
    h2peer.report(result)


if __name__ == "__main__":
    main()
