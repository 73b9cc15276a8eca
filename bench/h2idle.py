#!/usr/bin/env python3
"""Opens N idle HTTP/2 connections (preface + SETTINGS, ACKs the server's) and holds them.

Usage: h2idle.py HOST PORT N HOLD_SECONDS
Prints "open N" once every connection has exchanged SETTINGS, then holds them for HOLD_SECONDS
(bench/http2.sh measures the server's RSS meanwhile) and closes them.
"""
import socket, sys, time
import h2.config, h2.connection

host, port, count, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
connections = []
for _ in range(count):
    sock = socket.create_connection((host, port))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    connections.append((sock, conn))
for sock, conn in connections:
    sock.settimeout(5)
    conn.receive_data(sock.recv(65535))
    sock.sendall(conn.data_to_send())
print(f"open {len(connections)}", flush=True)
time.sleep(hold)
for sock, _ in connections:
    sock.close()
