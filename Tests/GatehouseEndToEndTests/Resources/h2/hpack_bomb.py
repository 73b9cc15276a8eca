"""HPACK bomb: a header block of under 16 KB that decodes to tens of megabytes. One large literal
is added to the dynamic table (RFC 7541 §6.2.1), then the block refers to it thousands of times
(one byte each, §6.1). Several connections at once, so that a decoder that expanded the whole
block before checking SETTINGS_MAX_HEADER_LIST_SIZE would need hundreds of megabytes.

Prints one JSON object: per connection what the server did (GOAWAY code, RST_STREAM code, a
response status), and the size the blocks would have decoded to.
"""

import argparse
import time

import h2peer


def hpack_integer(value, prefix_bits, first_byte_flags):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte_flags | value])
    out = [first_byte_flags | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal_with_indexing(name, value):
    """Literal Header Field with Incremental Indexing, new name, no Huffman (RFC 7541 §6.2.1)."""
    return (b"\x40" + hpack_integer(len(name), 7, 0) + name + hpack_integer(len(value), 7, 0) + value)


def bomb_block(peer, port, token, value_size, max_block):
    # A real request first (the encoder's own entries come before the bomb's in the table).
    block = peer.header_block(h2peer.request_headers(port, "/v1/hpack-bomb", token=token))
    name = b"x-bomb"
    block += literal_with_indexing(name, b"a" * value_size)
    entry_size = len(name) + value_size + 32
    # Index 62 is the newest dynamic entry: the bomb. One byte per copy.
    references = max_block - len(block)
    block += hpack_integer(62, 7, 0x80) * references
    decoded = references * entry_size
    return block, references, decoded


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", default=None)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--value-size", type=int, default=4000, help="the literal's value (entry must fit 4096)")
    parser.add_argument("--max-block", type=int, default=16000, help="bytes of the header block (one HEADERS frame)")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = h2peer.arguments(parser)

    peers = []
    decoded_total = 0
    references = 0
    for _ in range(min(args.connections, 32)):
        peer = h2peer.Peer(args.port)
        peer.start()
        peer.acknowledge_settings()
        block, references, decoded = bomb_block(peer, args.port, args.token, args.value_size, min(args.max_block, 16384))
        peer.send(h2peer.frame(h2peer.HEADERS, h2peer.END_HEADERS | h2peer.END_STREAM, 1, block))
        decoded_total += decoded
        peers.append(peer)

    def concluded(peer):
        return peer.goaway is not None or 1 in peer.rsts or 1 in peer.statuses or peer.closed

    # Measured while the server has the bombs in hand (a decoder that expanded them would be at it).
    h2peer.hold(args.hold_file)
    deadline = time.monotonic() + args.seconds
    for peer in peers:
        peer.wait(lambda: concluded(peer), max(0.1, deadline - time.monotonic()))
    for peer in peers:
        # A connection the server gave up on should be closed, not just told so.
        peer.wait_closed(max(0.1, min(2.0, deadline - time.monotonic())))

    outcomes = []
    for peer in peers:
        outcome = peer.summary()
        outcome["rst_code"] = peer.rsts.get(1)
        outcome["status"] = peer.statuses.get(1)
        outcomes.append(outcome)
        peer.close()
    h2peer.report({
        "connections": len(peers),
        "references_per_block": references,
        "decoded_bytes_if_expanded": decoded_total,
        "outcomes": outcomes,
        "goaway_codes": sorted({o["error_code"] for o in outcomes if o["error_code"] is not None}),
        "statuses": sorted({o["status"] for o in outcomes if o["status"] is not None}),
        "rst_codes": sorted({o["rst_code"] for o in outcomes if o["rst_code"] is not None}),
        "all_refused": all(o["error_code"] is not None or o["rst_code"] is not None or o["status"] == 431 for o in outcomes),
        "all_closed": all(o["closed"] for o in outcomes),
        "any_answered": any(o["status"] not in (None, 431) for o in outcomes),
    })


if __name__ == "__main__":
    main()
